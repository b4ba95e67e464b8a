"""What one visitor's computation may take on the shared server (issue 19): CPU time of its kernel, growth of
its resident memory, and the size of an uploaded file. Beyond them the page says the input is too large;
the kernel stays responsive for the next input instead of pinning a core or growing until it is killed.

The limits are checked every 50 CPU-milliseconds by a profiling timer (``SIGPROF``, counted in the
kernel's own CPU time, so a visitor is not cut off because other visitors keep the server busy). Python
delivers the signal between bytecodes: a long call inside one C function ends before it is stopped.
Outside the main thread, or where the platform has no ``setitimer``, the block runs unbounded.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from gpucost.errors import GpucostError

#: CPU seconds one recomputation (or one upload's parsing) of a page may take
COMPUTE_CPU_S = 10.0
#: how much one recomputation may grow the kernel's resident memory [MiB]
COMPUTE_MIB = 1024
#: the largest file a page accepts as an upload [bytes], unless the page sets a smaller limit
MAX_UPLOAD_BYTES = 1024 * 1024
_TICK_S = 0.05


class BudgetExceeded(GpucostError):
    """A computation went past its CPU or memory budget; its message is the page's sentence for it."""


def _rss_mib() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


@contextmanager
def compute_budget(message: str, cpu_s: float | None = None, mib: float | None = None) -> Iterator[None]:
    """Run the block within ``cpu_s`` CPU seconds and ``mib`` MiB of memory growth (default: the module's
    limits); past either, :class:`BudgetExceeded` with ``message`` is raised inside the block."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    cpu_limit = COMPUTE_CPU_S if cpu_s is None else cpu_s
    mib_limit = COMPUTE_MIB if mib is None else mib
    t0, rss0 = time.process_time(), _rss_mib()

    def tick(_sig, _frame) -> None:
        if time.process_time() - t0 > cpu_limit or _rss_mib() - rss0 > mib_limit:
            signal.setitimer(signal.ITIMER_PROF, 0, 0)
            raise BudgetExceeded(message)

    previous = signal.signal(signal.SIGPROF, tick)
    old_timer = signal.setitimer(signal.ITIMER_PROF, _TICK_S, _TICK_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        signal.signal(signal.SIGPROF, previous)
        if old_timer[0]:  # an enclosing budget keeps running
            signal.setitimer(signal.ITIMER_PROF, *old_timer)


#: the loggers under which the kernel reports an error in a widget message (a value outside a dropdown's
#: options, text in a number field sent by a tampered page)
KERNEL_MESSAGE_LOGGERS = ("Comm", "ipykernel.comm", "gpucost.kernel")
_SERVER_LOG = logging.StreamHandler(sys.__stderr__)
_SERVER_LOG.setFormatter(logging.Formatter("[gpucost kernel] %(levelname)s %(name)s: %(message)s"))


def keep_kernel_errors_off_the_wire() -> None:
    """Send the kernel's widget-message errors to the server's log, not to the visitor.

    Without a handler of their own these loggers fall to Python's last-resort handler, which writes to
    ``sys.stderr`` at the moment of the error; in a kernel that is the output stream to the page, so a
    malformed widget update sent a traceback with server paths over the websocket. Idempotent."""
    for name in KERNEL_MESSAGE_LOGGERS:
        lg = logging.getLogger(name)
        if _SERVER_LOG not in lg.handlers:
            lg.addHandler(_SERVER_LOG)
        lg.propagate = False


#: set by the gpucost kernelspec (the public app's kernel): widget errors are the server's, not the page's
PUBLIC_KERNEL_ENV = "GPUCOST_PUBLIC_KERNEL"


def _refuse_emptied_selection(widget, msg) -> None:
    """A page's choice (a dropdown, toggle buttons) always has a value; its browser side never sends "no
    selection" (index null) — only a tampered client does, and the page's code would meet a None it never
    offered. Refused like any invalid value."""
    from ipywidgets.widgets.widget_selection import _Selection

    data = (msg.get("content") or {}).get("data") or {}
    state = data.get("state") if data.get("method") in ("update", "backbone") else None
    if isinstance(widget, _Selection) and isinstance(state, dict) and "index" in state and state["index"] is None \
            and widget.index is not None:
        from traitlets import TraitError

        raise TraitError(f"{type(widget).__name__}: a selection cannot be emptied")


def guard_widget_messages() -> bool:
    """In the public app's kernel, a widget message the kernel refuses (a dropdown index of 999 from a
    tampered page) is logged on the server instead of shown: ipywidgets' ``_handle_msg`` otherwise calls
    IPython's ``showtraceback``, which sends the traceback with server paths to the visitor. Elsewhere
    (JupyterLab, papermill) widgets keep showing their errors. Returns whether the guard is in place."""
    if os.environ.get(PUBLIC_KERNEL_ENV) != "1":
        return False
    import ipywidgets.widgets.widget as ww

    handler = ww.Widget._handle_msg
    if getattr(handler, "_gpucost_guarded", False):
        return True
    # ipywidgets wraps the method in a closure that shows tracebacks; keep the method, drop the showing
    inner = next((c.cell_contents for c in (handler.__closure__ or ()) if callable(c.cell_contents)), handler)

    def _handle_msg(self, msg):
        try:
            _refuse_emptied_selection(self, msg)
            return inner(self, msg)
        except Exception:
            logging.getLogger("gpucost.kernel").warning("refused a widget message for %s",
                                                       type(self).__name__, exc_info=True)
            return None

    _handle_msg._gpucost_guarded = True  # type: ignore[attr-defined]
    ww.Widget._handle_msg = _handle_msg  # type: ignore[method-assign]
    return True
