"""The public server's waiting page (issue 19): a visitor whose page is being prepared (no preheated kernel
left) is told how many pages that arrived before theirs are still being prepared, every tick, in their
language; a page from a preheated kernel comes at once with nothing added (gpucost/ui/server.py)."""

from __future__ import annotations

import asyncio
import json
import re

from gpucost.i18n import t
from gpucost.ui import server

TICK = 0.05


def _run(coro):
    """The coroutine on an event loop of its own thread (a browser test's Playwright may own this thread's)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as ex:
        return ex.submit(asyncio.run, coro).result()


async def _page(name: str, prepare_s: float):
    """What Voilà's renderer yields: the page's head (with its spinner) at once, the cells once the
    kernel has run them."""
    yield f"<head {name}>"
    await asyncio.sleep(prepare_s)
    yield f"<cells {name}>"


def _said(chunks: list[str]) -> list[str]:
    """The loading text each waiting line sets (a JavaScript string literal)."""
    return [json.loads(re.search(r'textContent = ("(?:[^"\\]|\\.)*")', c).group(1)) for c in chunks
            if c.startswith("<script>")]


def test_a_waiting_visitor_hears_how_many_pages_are_prepared_ahead_of_theirs():
    async def visit(name: str, prepare_s: float, delay_s: float, lang: str = "en") -> list[str]:
        await asyncio.sleep(delay_s)
        return [c async for c in server.queued(_page(name, prepare_s), lang, tick_s=TICK)]

    async def three():
        return await asyncio.gather(visit("a", 0.6, 0), visit("b", 1.0, 0.1, "zh"), visit("c", 0.0, 0.2))

    a, b, c = _run(three())
    # the first visitor: nobody ahead; its page is complete, in order, around the waiting lines
    assert a[0] == "<head a>" and a[-1] == "<cells a>"
    assert set(_said(a)) == {t("starting_page", "en")}
    # the second (中文): one ahead while the first is prepared, then none
    said_b = _said(b)
    assert said_b[0] == t("starting_ahead", "zh", n=1) and said_b[-1] == t("starting_page", "zh")
    assert b[0] == "<head b>" and b[-1] == "<cells b>"
    # a page served at once (a preheated kernel) gets no waiting line
    assert c == ["<head c>", "<cells c>"]
    assert server._PREPARING == []   # every page left the line when done


def test_a_visitor_who_leaves_is_out_of_the_line_and_their_page_stops():
    stopped = []

    async def slow():
        try:
            yield "<head>"
            await asyncio.sleep(10)
            yield "<cells>"
        finally:
            stopped.append(True)

    async def leave():
        gen = server.queued(slow(), "en", tick_s=TICK)
        assert await gen.__anext__() == "<head>"
        assert "Starting your page" in await gen.__anext__()
        assert len(server._PREPARING) == 1
        await gen.aclose()          # the tab closed: tornado stops reading the page
        await asyncio.sleep(0.05)

    _run(leave())
    assert server._PREPARING == [] and stopped == [True]


def test_a_waiting_line_never_lands_inside_a_tag_or_a_script():
    # Voilà's lab template yields the page's settings in three chunks (the tag, the JSON, the closing tag) and
    # a cell's wrapper with its index as a chunk of its own; a server whose loop stalls between two of them
    # once put a waiting line inside the JSON, the page's scripts could not read it and the page never showed
    # (CI, test_load: "Unexpected non-whitespace character after JSON at position 860")
    config = {"baseUrl": "/", "kernelId": "k1"}
    chunks = ['<body><span id="loading_text"></span><div>', '\n<script id="jupyter-config-data" type="application/json">\n  ',
              json.dumps(config), '\n</script>\n', '<div cell-index="', "1", '">', "<p>cell</p></div>",
              "<SCRIPT>let a = '<b>';", "</SCRIPT>", "<div>end</div></body>"]

    async def stalling():
        for c in chunks:
            yield c
            await asyncio.sleep(4 * TICK)   # longer than a tick after every chunk

    async def heartbeats():   # Voilà's keep-alive line after each chunk
        for c in chunks:
            yield c
            yield server._HEARTBEAT

    out = _run(_collect(server.queued(stalling(), "en", tick_s=TICK)))
    page = "".join(out)
    settings = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', page, re.S)
    assert json.loads(settings.group(1)) == config
    assert '<div cell-index="1">' in page and "<SCRIPT>let a = '<b>';</SCRIPT>" in page
    # the visitor is still told, between elements: after the head, after the settings, after each cell
    between = ['<body><span id="loading_text"></span><div>', "\n</script>\n", '">', "<p>cell</p></div>",
               "</SCRIPT>", "<div>end</div></body>"]
    lines = [i for i, c in enumerate(out) if c.startswith("<script>(el =>")]
    assert [out[i - 1] for i in lines if out[i - 1] in chunks] == between
    # Voilà's own keep-alive is passed on between elements only
    beats = _run(_collect(server.queued(heartbeats(), "en", tick_s=TICK)))
    assert [beats[i - 1] for i, c in enumerate(beats) if c == server._HEARTBEAT] == between
    assert "".join(c for c in beats if c != server._HEARTBEAT) == "".join(chunks)


def test_a_script_tag_cut_between_two_chunks_is_still_seen():
    at = server._Between()
    for c in ["<div>", "<scr", "ipt>var x = 1 > 0", "</scr", "ipt>", "<p>"]:
        at.feed(c)
        if c == "ipt>var x = 1 > 0":
            assert not at.open      # ends with '>'-free text inside the script
    assert at.open
    at.feed("<textarea>a</div>")
    assert not at.open              # '</div>' inside a textarea is its text
    at.feed("</TEXTAREA>")
    assert at.open


async def _collect(gen):
    return [c async for c in gen]
