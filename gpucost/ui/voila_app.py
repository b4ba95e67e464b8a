"""What Voilà needs from gpucost, found in the package itself: its template, the pages' kernel and the
server's rules — so that a plain ``voila notebooks/`` after ``pip install -e .`` (an editable install has
no ``share/jupyter``) serves the same app as ``./dev serve`` and a wheel.

The repository's voila.json — which Voilà reads from the folder it starts in, and its Jupyter server
extension from the Jupyter config path (Binder copies it to ``~/.jupyter``) — names
:class:`KernelSpecManager` as Voilà's kernel spec manager. Voilà imports this module while it reads that
file, before it looks for templates and kernels; the import puts the package's Jupyter data directory
(:data:`gpucost.ui.JUPYTER_DATA`: ``voila/templates/gpucost``, ``kernels/gpucost``) first on
``JUPYTER_PATH`` and, in Voilà's own server, installs the server's rules (:func:`gpucost.ui.server.install`). Both are what
``./dev serve`` sets up through ``JUPYTER_PATH`` and ``JUPYTER_CONFIG_PATH``; doing it twice changes
nothing. The setting lives in voila.json, not in a ``voila.py`` at the repository's root, which would
shadow the ``voila`` package for anything run from there.
"""

from __future__ import annotations

import os

from jupyter_client.kernelspec import KernelSpecManager as _KernelSpecManager

from gpucost.ui import JUPYTER_DATA
from gpucost.ui.server import install


def register() -> None:
    """Put the package's Jupyter data directory first on ``JUPYTER_PATH`` (once) and, in Voilà's own server,
    install the server's rules — not in a Jupyter server that runs Voilà as an extension (Binder's
    JupyterLab reads voila.json too), whose users shut their kernels down themselves."""
    here = str(JUPYTER_DATA)
    paths = [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    if here not in paths:
        os.environ["JUPYTER_PATH"] = os.pathsep.join([here, *paths])
    if standalone():
        install()


def standalone() -> bool:
    """Whether this process is Voilà's own server (``voila notebooks/``), which is being set up when voila.json
    is read."""
    from voila.app import Voila

    return Voila.initialized()


class KernelSpecManager(_KernelSpecManager):
    """jupyter_client's kernel spec manager, unchanged: naming it in voila.json is how Voilà comes to import
    this module (and so :func:`register`) before it looks for templates; the pages' ``gpucost`` kernel is
    then found on ``JUPYTER_PATH`` like the template."""


register()
