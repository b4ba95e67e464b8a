"""Real-browser tests: Voila serves notebooks/, headless Chromium opens every page, changes inputs and
checks that numbers and charts change and that no traceback appears. Screenshots go to test-artifacts/."""

from __future__ import annotations

import re
import time

import pytest

from .browser import ARTIFACTS, assert_no_traceback, wait_ready
from .conftest import NOTEBOOKS

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

PAGES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
CJK = re.compile("[\u4e00-\u9fff]")


@pytest.fixture
def server(voila_server):
    return voila_server


@pytest.fixture
def page(browser_page):
    return browser_page


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def _nav_text(page) -> str:
    return page.inner_text(".gc-nav")


@pytest.mark.parametrize("nb", PAGES)
def test_every_page_renders_and_switches_to_chinese(server, page, nb):
    page.goto(server.page(nb))
    wait_ready(page)
    assert_no_traceback(page)
    assert "Card choice" in _nav_text(page)
    # the page's heading names it as the navigation does and says what it answers, in the page's language
    here = page.inner_text(".gc-nav .gc-here")
    title, question = page.inner_text(".gc-page-title"), page.inner_text(".gc-page-question")
    assert title == (here if nb != "00_start.ipynb" else "gpucost")
    assert question.endswith("?") and not CJK.search(title + question)
    shot(page, nb.replace(".ipynb", "-en"))
    page.click(".gc-lang button:has-text('简体中文')")
    page.wait_for_function("() => document.querySelector('.gc-nav').innerText.includes('选卡')")
    assert_no_traceback(page)
    zh_question = page.inner_text(".gc-page-question")
    assert CJK.search(zh_question) and zh_question != question
    if nb != "00_start.ipynb":
        assert page.inner_text(".gc-page-title") == page.inner_text(".gc-nav .gc-here") != title
    shot(page, nb.replace(".ipynb", "-zh"))


def _first_row(page) -> str:
    return page.inner_text(".gc-table tbody tr:first-child")


def _points(page) -> int:
    return page.locator(".gc-chart .scatterlayer .trace:first-child .point").count()


# Each anywidget module (charts, the language preference) is loaded from a blob: URL. This makes every such
# module wait 3 s before it finishes loading (a top-level await put in front of it), as a slow phone or a
# loaded server does while it builds a page's widgets: anywidget's own start-up limit (2 s) passes first.
SLOW_WIDGET_MODULES = """
(() => {
  const create = URL.createObjectURL.bind(URL);
  URL.createObjectURL = (obj) => {
    if (obj instanceof Blob && obj.type.includes("javascript")) {
      obj = new Blob(["await new Promise((r) => setTimeout(r, 3000));\\n", obj], { type: obj.type });
    }
    return create(obj);
  };
})();
"""


def test_a_chart_whose_module_starts_slowly_still_follows_the_inputs(server, page):
    # a chart that missed anywidget's start-up limit used to keep its first figure for good (every later update
    # from the kernel was dropped) while the summary beside it moved on: stale numbers shown as current
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.add_init_script(SLOW_WIDGET_MODULES)
    page.goto(server.page("01_card_choice.ipynb"))
    wait_ready(page)
    page.wait_for_function("() => document.querySelector('.gc-chart').textContent.includes('BF16 throughput')")
    page.select_option(".gc-precision select", "fp8")
    page.wait_for_function("() => document.querySelector('.gc-chart').textContent.includes('FP8 throughput')",
                           timeout=30000)
    assert_no_traceback(page)
    assert not [e for e in errors if "anywidget" in e], errors


def test_card_choice_reacts_to_dropdown_slider_language_and_bad_value(server, page):
    page.goto(server.page("01_card_choice.ipynb"))
    wait_ready(page)
    page.wait_for_selector(".gc-chart .scatterlayer .point")
    first, points = _first_row(page), _points(page)
    assert points > 5

    # dropdown: FP8 leaves out cards without FP8 tensor cores → fewer points, another table
    page.select_option(".gc-precision select", "fp8")
    page.wait_for_function(f"() => document.querySelectorAll('.gc-chart .scatterlayer .trace:first-child .point').length != {points}")
    assert _points(page) < points
    fp8_first = _first_row(page)

    # slider: raise the minimum memory with the keyboard → cards under it disappear
    handle = page.locator(".gc-vram .noUi-handle")
    handle.focus()
    for _ in range(40):
        handle.press("ArrowRight")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.gc-table tbody tr')].every(r => parseFloat(r.children[2].innerText) >= 40)"
        " && document.querySelectorAll('.gc-table tbody tr').length > 0", timeout=30000)
    assert _first_row(page) != first or fp8_first != first

    # a bad value: a negative budget shows a message next to the input and greys the results as out of
    # date; the page keeps working
    page.fill(".gc-budget input", "-5")
    page.press(".gc-budget input", "Enter")
    page.wait_for_selector(".gc-field-bad .gc-field-msg .gc-msg-error")
    assert "out of range" in page.inner_text(".gc-field-bad .gc-field-msg")
    page.wait_for_selector(".gc-results.gc-stale")
    assert "Out of date" in page.inner_text(".gc-status")
    assert_no_traceback(page)
    page.fill(".gc-budget input", "")
    page.press(".gc-budget input", "Enter")
    page.wait_for_function("() => !document.querySelector('.gc-field-bad') && !document.querySelector('.gc-stale')")

    # language: Chinese labels, CNY prices
    page.click(".gc-lang button:has-text('简体中文')")
    page.wait_for_function("() => document.querySelector('.gc-summary').innerText.includes('张卡符合条件')")
    page.wait_for_function("() => document.querySelector('.gc-chart').innerText.includes('CNY')")
    assert "价格" in page.inner_text(".gc-chart")
    shot(page, "01_card_choice-interacted-zh")
    assert_no_traceback(page)


def _upload(page, path) -> None:
    with page.expect_file_chooser() as fc:
        page.click(".gc-upload")
    fc.value.set_files(str(path))


def test_card_choice_upload_of_a_bad_csv_shows_the_error_in_the_page(server, page, tmp_path):
    page.goto(server.page("01_card_choice.ipynb"))
    wait_ready(page)
    bad = tmp_path / "my_prices.csv"
    bad.write_text("gpu_id,condition,price,currency,region,channel,source,as_of,notes\n"
                   "rtx-4090,new,lots,USD,US,retail,my quote,2026-11-01,\n")
    _upload(page, bad)
    page.wait_for_selector(".gc-msg-error")
    msg = page.inner_text(".gc-inputs")
    assert "my_prices.csv" in msg and "row 1" in msg and "price" in msg
    assert_no_traceback(page)
    good = tmp_path / "good_prices.csv"
    good.write_text("gpu_id,condition,price,currency,region,channel,source,as_of,notes\n"
                    "rtx-4090,new,1,USD,US,retail,my quote,2026-11-01,\n")
    _upload(page, good)
    page.wait_for_selector(".gc-msg-ok")
    page.wait_for_function("() => document.querySelector('.gc-table tbody tr').innerText.includes('4090')")


def test_public_serving_hides_data_source_and_tracebacks(server):
    import urllib.error
    import urllib.request

    for path in ("/voila/files/data/gpus.csv", "/voila/files/gpucost/catalog.py", "/voila/files/voila.json",
                 "/voila/files/notebooks/01_card_choice.ipynb", "/voila/files/.git/config"):
        try:
            code = urllib.request.urlopen(server.url + path, timeout=10).status  # noqa: S310 - localhost
        except urllib.error.HTTPError as exc:
            code = exc.code
        assert code in (403, 404), f"{path} served with {code}"
    html = urllib.request.urlopen(server.page("01_card_choice.ipynb"), timeout=120).read().decode()  # noqa: S310
    assert "CardChoicePage(" not in html, "notebook source must be stripped from the page"
    # a query cannot swap the serving template (another one brings CDN links and drops the closed-tab
    # kernel shutdown; an unknown one used to hang the request)
    for name in ("lab", "no-such-template"):
        url = server.page("01_card_choice.ipynb") + f"?template={name}"
        html = urllib.request.urlopen(url, timeout=120).read().decode()  # noqa: S310 - localhost
        assert "plotly-basic.min.js" in html, f"?template={name} replaced gpucost's template"


# page → (dropdown to change, result whose text must change, a text input and a bad value for it)
INTERACT = {
    "02_quantization_fit.ipynb": (".gc-fit-model", ".gc-fit-summary", ".gc-fit-context input", "lots"),
    "03_scenario_tco.ipynb": (".gc-tco-scenario", ".gc-summary", ".gc-tco-load input", "lots"),
    "05_sharing_and_scaling.ipynb": (".gc-plan-share-gpu", ".gc-results", ".gc-plan-workloads textarea",
                                     "twelve gigs please", "A100 40GB"),  # a MIG card for the MIG plan
}
CHARTS = "() => [...document.querySelectorAll('.gc-results .main-svg')].map(s => s.innerHTML).join('|')"


@pytest.mark.parametrize("nb", [n for n in INTERACT if n in PAGES])
def test_page_reacts_to_a_dropdown_and_shows_a_bad_value_next_to_the_input(server, page, nb):
    dropdown, result, text_input, bad_value, *prefer = INTERACT[nb]
    page.set_default_timeout(120000)
    page.goto(server.page(nb))
    wait_ready(page)
    page.wait_for_selector(".gc-results .main-svg")
    before, charts = page.inner_text(result), page.evaluate(CHARTS)
    options = page.eval_on_selector(f"{dropdown} select", "s => [...s.options].map(o => o.textContent)")
    current = page.eval_on_selector(f"{dropdown} select", "s => s.options[s.selectedIndex].textContent")
    other = next(o for o in reversed(options) if o != current and (not prefer or prefer[0] in o.replace("\xa0", " ")))
    page.select_option(f"{dropdown} select", label=other)
    page.wait_for_function(f"() => document.querySelector('{result}').innerText != {before!r}")
    page.wait_for_function(f"() => ({CHARTS})() != {charts!r}")
    assert_no_traceback(page)
    page.fill(text_input, bad_value)
    page.press(text_input, "Tab") if "textarea" in text_input else page.press(text_input, "Enter")
    page.wait_for_selector(".gc-msg-error")
    page.wait_for_selector(".gc-stale")  # the results that depend on it are marked out of date
    assert_no_traceback(page)
    shot(page, nb.replace(".ipynb", "-bad-value"))


def test_pages_load_nothing_from_outside_and_plotly_only_where_charts_are(server, page):
    # every request stays on the server (the lab template's Font Awesome CDN links are gone): an offline
    # lab or a firewall must not hold the page's scripts
    outside = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith((server.url, "data:", "blob:"))
            else None)
    page.goto(server.page("00_start.ipynb"))
    wait_ready(page)
    page.wait_for_timeout(1000)
    assert outside == []
    assert page.evaluate("typeof window.Plotly") == "undefined", "a page without charts evaluates no plotly.js"
    page.goto(server.page("01_card_choice.ipynb"))
    wait_ready(page)
    page.wait_for_selector(".gc-chart .main-svg")
    assert outside == []
    assert page.evaluate("window.Plotly.version").startswith("4.")


def test_charts_draw_without_gpucost_template_as_in_jupyterlab(page):
    # under another template (as in JupyterLab) the page has no plotly.js: the PlotlyLibrary widget asks
    # the kernel for it, and the chart still draws its points. The public server refuses ?template=, so
    # this starts one with Voila's own "lab" template.
    from .browser import VoilaServer

    lab = VoilaServer(pool_size=0, extra_args=["--template=lab"])  # no preheated kernels: one visit
    try:
        page.goto(lab.page("01_card_choice.ipynb"))
        wait_ready(page)
        page.wait_for_selector(".gc-chart .scatterlayer .point", timeout=60000)
        assert _points(page) > 5
        assert page.evaluate("window.__gpucostPlotly.source") == "kernel"
    finally:
        lab.stop()


def test_closing_the_tab_shuts_its_kernel_down(server, chromium_browser):
    import json

    from .browser import kernel_rss_mib

    ctx = chromium_browser.new_context()
    pg = ctx.new_page()
    pg.goto(server.page("00_start.ipynb"))
    wait_ready(pg)
    kernel = json.loads(pg.text_content("#jupyter-config-data"))["kernelId"]
    assert kernel_rss_mib(kernel) > 50  # the page's kernel runs, with the app loaded
    pg.close(run_before_unload=True)
    ctx.close()
    for _ in range(50):
        if kernel_rss_mib(kernel) == 0:
            break
        time.sleep(0.2)
    assert kernel_rss_mib(kernel) == 0, "the closed tab's kernel is still running"


def _post(url: str, form: dict, cookie: str, method: str = "POST") -> int:
    import urllib.error
    import urllib.parse
    import urllib.request

    req = urllib.request.Request(url, data=urllib.parse.urlencode(form).encode(), method=method,  # noqa: S310
                                 headers={"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded",
                                          "X-XSRFToken": form.get("_xsrf", "")})
    try:
        return urllib.request.urlopen(req, timeout=30).status  # noqa: S310 - localhost
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_kernel_is_shut_down_only_by_its_own_page(server, chromium_browser):
    # another visitor who learnt this page's kernel id makes up tornado's double-submit XSRF token (a cookie
    # and the same value in the form): refused, on both shutdown routes, and the page's kernel runs on
    import json

    from .browser import kernel_rss_mib

    ctx = chromium_browser.new_context()
    pg = ctx.new_page()
    try:
        pg.goto(server.page("00_start.ipynb"))
        wait_ready(pg)
        kernel = json.loads(pg.text_content("#jupyter-config-data"))["kernelId"]
        token = pg.get_attribute("[data-gpucost-token]", "data-gpucost-token")
        assert token and len(token) == 64
        forged = {"_xsrf": "chosen-by-the-client"}
        cookie = "_xsrf=chosen-by-the-client"
        assert _post(f"{server.url}/voila/api/shutdown/{kernel}", forged, cookie) == 403
        assert _post(f"{server.url}/voila/api/shutdown/{kernel}", {**forged, "gpucost_token": "0" * 64}, cookie) == 403
        assert _post(f"{server.url}/api/kernels/{kernel}", forged, cookie, method="DELETE") == 403
        assert kernel_rss_mib(kernel) > 50, "a forged request shut another visitor's kernel down"
        # the page's own token (what its closing beacon sends) is accepted
        assert _post(f"{server.url}/voila/api/shutdown/{kernel}", {**forged, "gpucost_token": token}, cookie) == 204
        for _ in range(50):
            if kernel_rss_mib(kernel) == 0:
                break
            time.sleep(0.2)
        assert kernel_rss_mib(kernel) == 0
    finally:
        ctx.close()


def test_a_visitor_who_finds_no_preheated_kernel_is_told_how_many_are_ahead(server):
    # three visits of one page at once: its pool holds one preheated kernel, so two pages are prepared on
    # demand, and their loading text says how many pages are being prepared ahead of them
    import json
    import re
    import urllib.request
    from concurrent.futures import ThreadPoolExecutor

    from gpucost.i18n import t

    url = server.page("06_rules_of_thumb.ipynb")
    with ThreadPoolExecutor(3) as ex:
        pages = list(ex.map(lambda _: urllib.request.urlopen(url, timeout=300).read().decode(), range(3)))  # noqa: S310
    line = re.compile(r"el\.textContent = (\"[^<]*?\")\)\)\(document\.getElementById\('loading_text'\)\)")
    said = {json.loads(m) for p in pages for m in line.findall(p)}
    assert said, "no visitor was told that their page is being prepared"
    assert said <= {t("starting_page", "en"), t("starting_ahead", "en", n=1), t("starting_ahead", "en", n=2)}, said
    assert all("RulesOfThumbPage(" not in p and "Traceback" not in p for p in pages)
