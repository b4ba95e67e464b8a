# Voilà reads this file (with voila.json) when this folder is on JUPYTER_CONFIG_PATH, as `./dev serve` and the
# tests' server set it: the public server's rules that configuration values cannot express
# (gpucost/ui/server.py). It is not at the repository's root, where it would shadow the voila package; a plain
# `voila notebooks/` gets the same rules through voila.json (gpucost/ui/voila_app.py). Installing twice is a no-op.
from gpucost.ui.server import install

install()
