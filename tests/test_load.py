"""Ten browser sessions at once on one Voila server: every one renders and responds correctly.

Ten users open the card-choice page one second apart (the page's pool holds one preheated kernel, so nine
of them wait for a kernel started on demand), each changes the precision and checks that its own chart
answers; no session closes before all ten have answered, so ten kernels and pages are alive together, and
each is read after all the others changed theirs (the cross-visitor isolation check of issue 19).
A session that does not get there leaves its screenshot and page in test-artifacts/."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest

from .browser import PRECISIONS, run_sessions

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]
SESSIONS = 10
STAGGER_S = 1.0


def test_ten_sessions_at_once(voila_server):
    # the async API runs in its own thread: the session's sync Playwright owns this thread's loop
    with ThreadPoolExecutor(1) as ex:
        results = ex.submit(asyncio.run, run_sessions(voila_server.page("01_card_choice.ipynb"), SESSIONS,
                                                      STAGGER_S)).result()
    assert len(results) == SESSIONS
    assert len({r["kernel"] for r in results}) == SESSIONS, "every session has a kernel of its own"
    for i, r in enumerate(results):
        assert not r["traceback"]
        # each session asked for its own precision, and — read once all ten had changed theirs (four different
        # precisions among them) — its input and its chart still show its own: no state crosses visitors
        assert r["precision"] == PRECISIONS[i]
        assert f"{PRECISIONS[i].upper()} throughput" in r["chart"]
    print("\nseconds to render per session:", sorted(round(r["rendered_s"], 1) for r in results))
    print("seconds to answer the precision change:", sorted(round(r["answered_s"], 2) for r in results))
    print("kernel memory per session [MiB]:", sorted(round(r["kernel_mib"]) for r in results))
