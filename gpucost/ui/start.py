"""Page 00 — start: what each page answers, with a link to it, and what the data covers."""

from __future__ import annotations

import html

import ipywidgets as w

from gpucost.ui.shell import PAGES, Page

START_CSS = """
<style>
.gc-start {display:grid; grid-template-columns:repeat(auto-fill, minmax(260px, 1fr)); gap:0.8em}
.gc-start a.gc-card {display:block; border:1px solid #cfd8e3; border-radius:8px; padding:0.7em 0.9em;
  text-decoration:none; color:#222; background:#fafcff}
.gc-start a.gc-card:hover {border-color:#3b6ea8; background:#eef5ff}
.gc-card h3 {margin:0 0 0.3em 0; color:#24476f; font-size:1.05em}
.gc-card p {margin:0.2em 0; font-size:0.92em}
.gc-card .gc-q {font-weight:600}
</style>
"""


class StartPage(Page):
    page_id = "start"
    uses_prices = False

    def build(self) -> None:
        self.intro = w.HTML()
        self.cards = w.HTML()
        self.cards.add_class("gc-start-cards")
        self.coverage = w.HTML()
        self.coverage.add_class("gc-coverage")
        self.inputs.layout.display = "none"
        self.results.children = [w.HTML(START_CSS), self.intro, self.cards, self.coverage]

    def refresh(self) -> None:
        self.intro.value = f"<p>{html.escape(self.t('start_intro'))}</p>"
        items = []
        for pid, (_nb, nav_key) in PAGES.items():
            if pid == "start":
                continue
            items.append(
                f'<a class="gc-card" href="{html.escape(self.page_link(pid))}" data-page="{pid}"><h3>{html.escape(self.t(nav_key))}</h3>'
                f'<p class="gc-q">{html.escape(self.t(f"start_q_{pid}"))}</p>'
                f'<p>{html.escape(self.t(f"start_a_{pid}"))}</p></a>')
        self.cards.value = f'<div class="gc-start">{"".join(items)}</div>'
        cat = self.catalog
        counts = dict(gpus=len(cat.gpus), offers=len(cat.offers), prices=len(cat.prices),
                      providers=cat.offers["provider"].nunique(), asof=cat.as_of("prices"))
        try:
            counts["models"] = len(cat.table("models"))
        except Exception:  # noqa: BLE001 - the start page must render even without the models table
            counts["models"] = 0
        self.counts = counts
        self.coverage.value = f"<p class='gc-help'>{html.escape(self.t('start_coverage', **counts))}</p>"

    def results_record(self) -> dict:
        rec = super().results_record()
        rec["links"] = [nb for pid, (nb, _) in PAGES.items() if pid != "start"]
        rec["counts"] = getattr(self, "counts", {})
        rec["text"] = self.cards.value
        return rec
