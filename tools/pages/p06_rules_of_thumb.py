NAME = "06_rules_of_thumb.ipynb"
TITLE = """# Rules of thumb, tested
Do the usual GPU-cost claims hold? Each one computed with gpucost's engines and your inputs, with a verdict
and the condition under which it flips."""
PARAMS = '''
# Parameters (papermill: papermill 06_rules_of_thumb.ipynb out.ipynb -p settings "reserved_1y_saving.utilization_pct=50")
settings: str = ""  # inputs to change, "KEY=VALUE; ..." (KEY an input of every claim, or CLAIM_ID.INPUT)
only: str = ""  # claim ids to show, comma separated; "" = all
lang: str = "en"  # en | zh
currency: str = ""  # display currency; "" = the language's (USD for en, CNY for zh)
'''
BUILD = '''
from gpucost.ui.rules_of_thumb import RulesOfThumbPage

page = RulesOfThumbPage(settings=settings, only=only, lang=lang, currency=currency or None)
page.display()
'''
