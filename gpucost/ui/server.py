"""The public server's own rules (issue 19), installed by ``gpucost/ui/jupyter/config/voila.py``, which Voilà reads
with voila.json when that folder is on ``JUPYTER_CONFIG_PATH`` (``./dev serve``, the tests' server): a kernel is
shut down only by the page it serves.

Voilà's closed-tab shutdown (``POST voila/api/shutdown/<kernel id>``) and jupyter_server's ``DELETE
api/kernels/<kernel id>`` check tornado's double-submit XSRF token, which any client can make up (a cookie
and the same value in the form): whoever learns a kernel id could shut another visitor's page down. Here:

* the server draws a random secret when it starts; its kernels inherit it (:data:`SECRET_ENV`);
* each page's kernel computes its own token, an HMAC of its kernel id under that secret
  (:func:`page_token`), and puts it in its page only (:func:`token_widget`);
* the shutdown is accepted only with that token (the template's closing beacon sends it); ``DELETE
  api/kernels/<id>``, which no page uses, is refused.

The secret never leaves the server and its kernels (visitors cannot run code in a kernel: Voilà refuses
``execute_request``), so a token cannot be made for a kernel id one has not been served.

And a visitor who arrives when every preheated kernel is taken waits while a kernel starts and runs the
page, sharing the CPU with the other pages being prepared: instead of a bare spinner the page says so and
how many visitors' pages are being prepared ahead of theirs, updated every second (:func:`queued`). A
waiting line goes only where the page's HTML is between elements: never inside a tag or a ``<script>`` (the
page's ``jupyter-config-data`` JSON comes in three chunks; a line put between them broke the page)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import html
import json
import os
import re
import secrets
from collections.abc import AsyncIterator, Callable

#: the environment variable holding the server's secret (set by :func:`install`, inherited by its kernels)
SECRET_ENV = "GPUCOST_KERNEL_SECRET"
#: the form field of the shutdown request that carries the page's token
TOKEN_FIELD = "gpucost_token"


def kernel_token(kernel_id: str, secret: str) -> str:
    """The token of ``kernel_id`` under the server's ``secret``."""
    return hmac.new(secret.encode(), kernel_id.encode(), hashlib.sha256).hexdigest()


def own_kernel_id() -> str | None:
    """This kernel's id (jupyter_client names a kernel's connection file ``kernel-<id>.json``); None outside a
    kernel."""
    try:
        from ipykernel.connect import get_connection_file

        name = os.path.basename(get_connection_file())
    except Exception:  # noqa: BLE001 - no running kernel app (papermill's in-process runs, tests)
        return None
    m = re.fullmatch(r"kernel-(.+)\.json", name)
    return m.group(1) if m else None


def page_token() -> str | None:
    """The token of this page's kernel, when it runs under the public server (else None)."""
    secret, kid = os.environ.get(SECRET_ENV), own_kernel_id()
    return kernel_token(kid, secret) if secret and kid else None


def token_widget():
    """An invisible element carrying :func:`page_token` for the template's closing beacon (None without one)."""
    token = page_token()
    if token is None:
        return None
    import ipywidgets as w

    box = w.HTML(f'<span data-gpucost-token="{token}"></span>', layout=w.Layout(display="none"))
    box.add_class("gc-kernel-token")
    return box


#: the pages being prepared now, in the order their visitors arrived
_PREPARING: list[object] = []
#: how often a waiting page hears how many are ahead of it [s]
QUEUE_TICK_S = 1.0


#: an element whose content is raw text up to its end tag: HTML put inside it becomes part of its text
_RAW_TEXT = re.compile(r"<(script|style|textarea|title)\b", re.IGNORECASE)
#: Voilà's own keep-alive line (voila.handler, after http_keep_alive_timeout without a chunk)
_HEARTBEAT = "<script>window.voila_heartbeat()</script>\n"


class _Between:
    """Whether the HTML streamed so far stops between elements, where a line of HTML can be put: not inside a
    tag or an attribute (the last character sent is ``>``) and not inside a raw-text element such as
    ``<script>``. Each chunk is scanned once; a tag name cut between two chunks is caught by carrying the
    chunk's unscanned tail (at most one tag name long)."""

    def __init__(self) -> None:
        self.inside: str | None = None
        self.tail = ""
        self.last = ""

    def feed(self, chunk: str) -> None:
        text, i = self.tail + chunk, 0
        while True:
            if self.inside is None:
                m = _RAW_TEXT.search(text, i)
                if m is None:
                    break
                self.inside, i = m.group(1).lower(), m.end()
            else:
                j = text.lower().find("</" + self.inside, i)
                if j < 0:
                    break
                i, self.inside = j + 2 + len(self.inside), None
        self.tail = text[max(i, len(text) - 9):]
        stripped = chunk.rstrip()
        if stripped:
            self.last = stripped[-1]

    @property
    def open(self) -> bool:
        return self.inside is None and self.last == ">"


def _queue_script(ahead: int, lang: str) -> str:
    from gpucost.i18n import t

    text = t("starting_ahead", lang, n=ahead) if ahead else t("starting_page", lang)
    return ("<script>(el => el && (el.textContent = " + json.dumps(html.unescape(text))
            + "))(document.getElementById('loading_text'))</script>\n")


async def queued(chunks: AsyncIterator[str], lang: str = "en", tick_s: float | None = None) -> AsyncIterator[str]:
    """The page's HTML ``chunks`` as Voilà renders them, with — while the visitor waits for the next one
    after the page's head — a line in the loading text saying how many pages that arrived earlier are
    still being prepared ("Starting your page — 2 ahead of you"). A page served from a preheated kernel
    comes at once and never waits a tick."""
    me = object()
    _PREPARING.append(me)
    tick = QUEUE_TICK_S if tick_s is None else tick_s
    nxt: asyncio.Future | None = None
    at = _Between()
    try:
        head_sent = False
        while True:
            nxt = asyncio.ensure_future(chunks.__anext__())
            while head_sent and at.open:
                done, _ = await asyncio.wait({nxt}, timeout=tick)
                if done:
                    break
                yield _queue_script(_PREPARING.index(me), lang)
            try:
                chunk = await nxt
            except StopAsyncIteration:
                return
            if chunk == _HEARTBEAT and not at.open:
                continue  # Voilà's keep-alive, inside a tag or a script: it would break what it lands in
            at.feed(chunk)
            yield chunk
            head_sent = True
    finally:
        _PREPARING.remove(me)
        if nxt is not None and not nxt.done():  # the visitor left: stop preparing their page
            nxt.cancel()


def _visitor_lang(handler) -> str:
    lang = handler.get_argument("lang", "")
    if lang in ("en", "zh"):
        return lang
    return "zh" if handler.request.headers.get("Accept-Language", "").lower().startswith("zh") else "en"


def _with_queue(get_generator: Callable) -> Callable:
    def wrapped(self, path=None):
        return queued(get_generator(self, path=path), _visitor_lang(self))

    return wrapped


def install() -> None:
    """Draw the server's secret, make the kernel shutdown handlers demand a page's token, and tell a waiting
    visitor how many pages are being prepared ahead of theirs."""
    from jupyter_server.services.kernels.handlers import KernelHandler
    from tornado import web
    from voila.handler import VoilaHandler
    from voila.shutdown_kernel_handler import VoilaShutdownKernelHandler

    secret = os.environ.setdefault(SECRET_ENV, secrets.token_hex(32))
    if getattr(VoilaShutdownKernelHandler, "_gpucost_guarded", False):
        return
    shutdown = VoilaShutdownKernelHandler.post

    async def post(self, kernel_id):
        given = self.get_body_argument(TOKEN_FIELD, "") or self.request.headers.get("X-Gpucost-Token", "")
        if not hmac.compare_digest(given, kernel_token(kernel_id, secret)):
            raise web.HTTPError(403, "a kernel is shut down only by its own page")
        return await shutdown(self, kernel_id)

    async def delete(self, kernel_id):
        raise web.HTTPError(403, "kernels are not deleted through this server's API")

    VoilaShutdownKernelHandler.post = post  # type: ignore[method-assign]
    KernelHandler.delete = delete  # type: ignore[method-assign]
    VoilaShutdownKernelHandler._gpucost_guarded = True  # type: ignore[attr-defined]
    VoilaHandler.get_generator = _with_queue(VoilaHandler.get_generator)  # type: ignore[method-assign]
