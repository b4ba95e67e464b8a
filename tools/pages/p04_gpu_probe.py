NAME = "04_gpu_probe.ipynb"
TITLE = """# GPU probe
What is my GPU, what is it worth, how busy is it, and what do its idle hours cost?"""
PARAMS = '''
# Parameters (papermill: papermill 04_gpu_probe.ipynb out.ipynb -p demo True -p watch_s 3600 -p interval_s 60)
demo: bool = False  # True: simulated GPUs in simulated time (a demonstration, nothing measured)
watch_s: float = 0.0  # sample for this many seconds before showing the page; 0 = only probe
interval_s: float = 1.0  # seconds between samples
idle_util_pct: float = 20.0  # a GPU under this utilization [%] is idle
idle_for_min: float = 30.0  # ... for this many minutes before the idle policy fires
mem_high_pct: float = 90.0  # memory used above this [%] is pressure
kwh_price: float = 0.0  # electricity price per kWh in the display currency; 0 = not given
amortize_years: float = 3.0  # years over which a new price is spread when a card has no cloud price
lang: str = "en"  # en | zh
currency: str = ""  # display currency; "" = the language's (USD for en, CNY for zh)
'''
BUILD = '''
from gpucost.ui.gpu_probe import GpuProbePage

page = GpuProbePage(demo=demo, watch_s=watch_s, interval_s=interval_s, idle_util_pct=idle_util_pct,
                    idle_for_min=idle_for_min, mem_high_pct=mem_high_pct, kwh_price=kwh_price or None,
                    amortize_years=amortize_years, lang=lang, currency=currency or None)
page.display()
'''
