"""Widget pages (ipywidgets + plotly) over the pure engines; one module per page, i18n strings in
gpucost/locales. ``jupyter/`` holds gpucost's Voila template as a Jupyter data directory: the app's launcher
puts :data:`JUPYTER_DATA` on ``JUPYTER_PATH``, and so does importing :mod:`gpucost.ui.voila_app`, which the
repository's voila.json names (a plain ``voila notebooks/``), so an editable install (``pip install -e .``)
serves the same template as a wheel (which also installs it under ``share/jupyter`` for Jupyter servers)."""

from pathlib import Path

#: a Jupyter data directory holding voila/templates/gpucost (for JUPYTER_PATH)
JUPYTER_DATA = Path(__file__).resolve().parent / "jupyter"
#: the public server's Python configuration for Voilà (``voila.py``): put on ``JUPYTER_CONFIG_PATH``
JUPYTER_CONFIG = JUPYTER_DATA / "config"
#: the template itself and its static files (plotly.js basic)
TEMPLATE_DIR = JUPYTER_DATA / "voila" / "templates" / "gpucost"
