# Voila reads this file with voila.json when it starts in the repository (./dev serve): the public server's
# rules that configuration values cannot express (gpucost/ui/server.py).
from gpucost.ui.server import install

install()
