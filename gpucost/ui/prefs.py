"""The visitor's language, currency and market, kept in their browser (URL and localStorage), never on the server.

:class:`Prefs` is an invisible widget every page shows: its view writes the page's language and currency
into the page URL (``?lang=zh&currency=CNY``: a reload or a shared link keeps them) and into the
browser's localStorage; on a page opened without ``?lang=`` it asks the kernel to switch to the stored
ones. :func:`url_params` reads the query string of the Voilà request (waiting for it in a preheated
kernel); outside Voilà (JupyterLab, papermill) there is none.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl

import anywidget
import traitlets

STATIC = Path(__file__).with_name("static")


class Prefs(anywidget.AnyWidget):
    """Mirror of the page's ``lang`` and ``currency`` in the browser; ``restore`` is what the browser
    asks for (its stored preferences) when the URL sets none."""

    _esm = STATIC / "prefs.js"
    lang = traitlets.Unicode("en").tag(sync=True)
    currency = traitlets.Unicode("USD").tag(sync=True)
    market = traitlets.Unicode("auto").tag(sync=True)
    restore = traitlets.Dict().tag(sync=True)


def url_params() -> dict[str, str]:
    """The query parameters of the page's URL under Voilà; ``{}`` elsewhere."""
    if "VOILA_PREHEAT" not in os.environ:
        return {}
    try:
        from voila.utils import get_query_string
        query = get_query_string() or ""
    except Exception:  # noqa: BLE001 - no request info (an old Voilà, a closed socket): no parameters
        query = os.environ.get("QUERY_STRING", "")
    return dict(parse_qsl(query, keep_blank_values=False))
