NAME = "01_card_choice.ipynb"
TITLE = """# Card choice
Which card gives me the most for my money?"""
PARAMS = '''
# Parameters (papermill: papermill 01_card_choice.ipynb out.ipynb -p precision fp8)
min_vram_gib: float = 0.0  # minimum memory per card [GiB]
precision: str = "bf16"  # fp32 | fp16 | bf16 | fp8 | int8 (dense tensor throughput)
budget: float = 0.0  # max price per card in the display currency (per GPU-hour for cloud); 0 = none
price_basis: str = "new"  # new | used | cloud
sort_by: str = "tflops_per_1k"  # tflops_per_1k | gbps_per_1k | vram_per_1k | tflops_per_watt | price
vendor: str = ""  # NVIDIA | AMD | Intel | Huawei; "" = any
host: str = "any"  # any | pc (a PCIe card for a desktop/workstation) | server
lang: str = "en"  # en | zh
currency: str = ""  # display currency; "" = the language's (USD for en, CNY for zh)
'''
BUILD = '''
from gpucost.ui.card_choice import CardChoicePage

page = CardChoicePage(min_vram_gib=min_vram_gib, precision=precision, budget=budget or None,
                      price_basis=price_basis, sort_by=sort_by, vendor=vendor, host=host, lang=lang,
                      currency=currency or None)
page.display()
'''
