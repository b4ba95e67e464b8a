NAME = "00_start.ipynb"
TITLE = """# gpucost
What is the cheapest way to get the GPU compute you need?"""
PARAMS = '''
# Parameters
lang: str = "en"  # en | zh
currency: str = ""  # display currency; "" = the language's (USD for en, CNY for zh)
'''
BUILD = '''
from gpucost.ui.start import StartPage

page = StartPage(lang=lang, currency=currency or None)
page.display()
'''
