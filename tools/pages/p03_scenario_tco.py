NAME = "03_scenario_tco.ipynb"
TITLE = """# Scenario TCO
Buy (new or used), lease, or rent on demand, on spot or reserved, or mix them: which is cheapest over
time, when does owning break even, and how sure is the answer?"""
PARAMS = '''
# Parameters (papermill: papermill 03_scenario_tco.ipynb out.ipynb -p gpu_hours_per_year 2000)
scenario: str = "your-need"  # your-need | developer | startup | midsize | university-lab | GPUCOST_DATA_DIR/scenarios
gpu: str = ""  # the card you would own (name or id); "" = the scenario's
cloud_gpu: str = ""  # the card you would rent; "" = the scenario's (or the owned card)
count: int = 0  # cards you would own; 0 = the scenario's
gpu_hours_per_year: float = -1.0  # the work in GPU-hours a year; -1 = the scenario's
months: int = 0  # horizon in months (6-120); 0 = the scenario's
utilization: float = -1.0  # steady load as a share of the owned cards' hours (0-1); -1 = the scenario's
electricity_per_kwh: float = -1.0  # electricity price in the display currency; -1 = the scenario's
mc_draws: int = 2000  # Monte Carlo draws (0: off)
lang: str = "en"  # en | zh
currency: str = ""  # display currency; "" = the language's (USD for en, CNY for zh)
'''
BUILD = '''
from gpucost.ui.scenario_tco import ScenarioTcoPage

page = ScenarioTcoPage(scenario=scenario, gpu=gpu, cloud_gpu=cloud_gpu, count=count,
                       gpu_hours_per_year=gpu_hours_per_year, months=months, utilization=utilization,
                       electricity_per_kwh=electricity_per_kwh, mc_draws=mc_draws, lang=lang,
                       currency=currency or None)
page.display()
'''
