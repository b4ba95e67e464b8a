"""Page 04 — GPU probe: what is my GPU, what is it worth, how busy is it, what do its idle hours cost?

The probe reads the server's GPUs through NVML (:mod:`gpucost.probe`); the sampler, summary, policies
and waste are :mod:`gpucost.monitor`. Without an NVIDIA GPU the page says so plainly, tells what it would
show, and offers a demo on simulated GPUs in simulated time (:func:`gpucost.fake_nvml.demo`), clearly
labelled. The measured utilization goes to page 03 in a link (its URL parameters), never through a file.

Live sampling runs in a background thread (so Stop works and the kernel stays responsive); a headless run
(papermill, tests) passes ``watch_s`` and samples before the page is shown.
"""

from __future__ import annotations

import html
import math
import threading
import time
from datetime import UTC, datetime, timedelta

import ipywidgets as w
import plotly.graph_objects as go

from gpucost import monitor, probe, showback
from gpucost.economics import Ownership
from gpucost.errors import GpucostError
from gpucost.fake_nvml import SimClock
from gpucost.specs import SPECS
from gpucost.ui.chart import TEMPLATE
from gpucost.ui.sharing_scaling import download_link
from gpucost.ui.shell import Page

#: the file name of the bill the page offers for download, and the stacked chart's bars at most
BILL_FILE = "gpu-bill.csv"
SHOWBACK_BINS = 12
#: (label seconds) choices for the sampling duration and interval
DURATIONS_S = (10, 30, 60, 300, 900, 3600, 7200)
INTERVALS_S = (1, 2, 5, 15, 60)
#: the demo replays its whole run in about this many real seconds (one chart frame per sample)
DEMO_REAL_SECONDS = 4.0
DEMO_MAX_FRAME_S = 0.05
#: the live chart is redrawn at most this often while sampling (each redraw sends the whole figure)
LIVE_CHART_EVERY_S = 0.5
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def _dur(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


def _fmt(v, nd: int = 0, none: str = "—") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return none
    return f"{v:,.{nd}f}"


def _pairs(options) -> list[tuple[str, str]]:
    """A dropdown's options as (label, value) pairs, whether they are pairs or plain values."""
    return [o if isinstance(o, tuple) else (str(o), o) for o in options]


def _money(v) -> str:
    if v is None:
        return "—"
    return f"{v:,.2f}" if abs(v) >= 1 else f"{v:.3f}"


class GpuProbePage(Page):
    page_id = "probe"

    def __init__(self, demo: bool = False, watch_s: float = 0.0, interval_s: float = 1.0,
                 idle_util_pct: float = monitor.DEFAULT_IDLE_UTIL_PCT,
                 idle_for_min: float = monitor.DEFAULT_IDLE_FOR_S / 60,
                 mem_high_pct: float = monitor.DEFAULT_MEM_HIGH_PCT, kwh_price: float | None = None,
                 amortize_years: float = monitor.DEFAULT_AMORTIZATION_YEARS, processes: bool = False,
                 lang: str = "en", currency: str | None = None, catalog=None,
                 frame_delay_s: float | None = None):
        self._init = dict(demo=demo, interval_s=interval_s, idle_util_pct=idle_util_pct,
                          idle_for_min=idle_for_min, mem_high_pct=mem_high_pct, kwh_price=kwh_price,
                          amortize_years=amortize_years, processes=processes, watch_s=watch_s)
        self.result: probe.ProbeResult | None = None
        self.samples: list[monitor.Sample] = []
        self.report: monitor.WatchReport | None = None
        self.values: dict[int, monitor.CardValue | None] = {}
        self.watch_interval_s = float(interval_s)
        self.watch_duration_s = 0.0
        self.running = False
        self.handoff_record: dict | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._frame_delay_s = frame_delay_s
        self._sample_msg = ""
        self._sim: SimClock | None = None
        self.usage_rows: list[dict] = []  # the processes seen at each sample (showback)
        self.models: dict[str, str | None] = {}
        self.bill: showback.Bill | None = None
        self.bill_over_time = None  # cost per consumer per stretch of the watch (the stacked chart)
        self._bill_error = ""
        self._wall0 = datetime.now(UTC)
        super().__init__(lang=lang, currency=currency, catalog=catalog)
        if watch_s and watch_s > 0:
            self.start_watch(duration_s=float(watch_s), interval_s=float(interval_s), blocking=True)

    # -- build -----------------------------------------------------------------------------------
    def build(self) -> None:
        i = self._init
        style = {"description_width": "initial"}
        self.probe_btn = w.Button(button_style="primary", icon="search", layout=w.Layout(width="95%"))
        self.probe_btn.add_class("gc-probe-button")
        self.processes_cb = w.Checkbox(value=bool(i["processes"]), indent=False)
        self.processes_cb.add_class("gc-probe-processes")
        self.demo_cb = w.Checkbox(value=bool(i["demo"]), indent=False)
        self.demo_cb.add_class("gc-probe-demo-toggle")
        durations = sorted(set(DURATIONS_S) | ({int(i["watch_s"])} if i["watch_s"] else set()))
        self.duration = w.Dropdown(options=[(_dur(d), d) for d in durations],
                                   value=int(i["watch_s"]) if i["watch_s"] else 60, style=style)
        self.duration.add_class("gc-probe-duration")
        intervals = sorted(set(INTERVALS_S) | {i["interval_s"]})
        self.interval = w.Dropdown(options=[(f"{v:g} s", v) for v in intervals], value=i["interval_s"],
                                   style=style)
        self.interval.add_class("gc-probe-interval")
        self.start_btn = w.Button(icon="play", button_style="success")
        self.start_btn.add_class("gc-probe-start")
        self.stop_btn = w.Button(icon="stop", disabled=True)
        self.stop_btn.add_class("gc-probe-stop")
        self.progress = w.FloatProgress(value=0.0, min=0.0, max=1.0, layout=w.Layout(width="95%"))
        self.progress.add_class("gc-probe-progress")
        self.progress_label = w.HTML()
        self.progress_label.add_class("gc-probe-progress-label")

        self.idle_util = w.FloatSlider(value=float(i["idle_util_pct"]), min=1, max=100, step=1,
                                       continuous_update=False, readout_format=".0f", style=style,
                                       layout=w.Layout(width="95%"))
        self.idle_util.add_class("gc-probe-idle-util")
        self.mem_high = w.FloatSlider(value=float(i["mem_high_pct"]), min=1, max=100, step=1,
                                      continuous_update=False, readout_format=".0f", style=style,
                                      layout=w.Layout(width="95%"))
        self.mem_high.add_class("gc-probe-mem-high")
        idle_for_field = self.spec_field("idle_for_min", SPECS["idle_for_min"], float(i["idle_for_min"]),
                                         "probe_idle_for", css="gc-probe-idle-for")
        kwh_field = self.spec_field("kwh", SPECS["electricity_per_kwh"], i["kwh_price"] or None, "probe_kwh",
                                    "probe_kwh_help", css="gc-probe-kwh")
        self.kwh_label = kwh_field.children[0]  # its label names the display currency (see relabel)
        self._labels = [x for x in self._labels if x[0] is not self.kwh_label]
        amortize_field = self.spec_field("amortize_years", SPECS["amortization_years"], float(i["amortize_years"]),
                                         "probe_amortize", "probe_amortize_help", css="gc-probe-amortize")
        self.idle_for, self.kwh, self.amortize = (self.fields[k].widget for k in ("idle_for_min", "kwh",
                                                                                 "amortize_years"))
        self.sb_by = w.Dropdown(options=list(showback.GROUPINGS), value=SPECS["showback_by"].default, style=style)
        self.sb_by.add_class("gc-probe-sb-by")
        self.sb_idle = w.Dropdown(options=list(showback.IDLE_RULES), value=SPECS["showback_idle"].default,
                                  style=style)
        self.sb_idle.add_class("gc-probe-sb-idle")
        self.to_tco_btn = w.Button(icon="share", layout=w.Layout(width="95%"))
        self.to_tco_btn.add_class("gc-probe-to-tco")
        self.to_tco_msg = w.HTML()
        self.to_tco_msg.add_class("gc-probe-to-tco-msg")
        self.policy_head = w.HTML()

        for wid, key in ((self.probe_btn, "probe_button"), (self.processes_cb, "probe_processes"),
                         (self.demo_cb, "probe_demo"), (self.start_btn, "probe_start"),
                         (self.stop_btn, "probe_stop"), (self.to_tco_btn, "probe_to_tco")):
            self.label(wid, key)
        self.label(self.policy_head, "probe_policy_head", "value")
        self.inputs.children = [
            self.probe_btn, self.processes_cb, self.demo_cb, self.help_line("probe_demo_help"),
            self.field("probe_duration", self.duration), self.field("probe_interval", self.interval),
            w.HBox([self.start_btn, self.stop_btn]), self.progress, self.progress_label, self.policy_head,
            self.field("probe_idle_util", self.idle_util), idle_for_field,
            self.field("probe_mem_high", self.mem_high), kwh_field, amortize_field,
            self.field("probe_sb_by", self.sb_by), self.field("probe_sb_idle", self.sb_idle),
            self.to_tco_btn, self.to_tco_msg, *self.shell_inputs()]

        self.banner = w.HTML()
        self.banner.add_class("gc-probe-banner")
        self.gpu_table = w.HTML()
        self.gpu_table.add_class("gc-table")
        self.gpu_table.add_class("gc-probe-gpus")
        self.value_box = w.HTML()
        self.value_box.add_class("gc-probe-value")
        self.chart = self.figure_box("gc-probe-chart")
        self.fig: go.Figure | None = None
        self._last_chart = 0.0
        self.summary = w.HTML()
        self.summary.add_class("gc-table")
        self.summary.add_class("gc-probe-summary")
        self.verdicts = w.HTML()
        self.verdicts.add_class("gc-probe-verdicts")
        self.waste = w.HTML()
        self.waste.add_class("gc-probe-waste")
        self.showback_box = w.HTML()
        self.showback_box.add_class("gc-probe-showback")
        self.sb_chart = self.figure_box("gc-probe-sb-chart")
        self.sb_fig: go.Figure | None = None
        self.results.children = [self.banner, self.gpu_table, self.value_box, self.chart, self.summary,
                                 self.verdicts, self.waste, self.showback_box, self.sb_chart]

        self.probe_btn.on_click(lambda _: self._on_probe())
        self.start_btn.on_click(lambda _: self.start_watch())
        self.stop_btn.on_click(lambda _: self._stop.set())
        self.to_tco_btn.on_click(lambda _: self.send_to_tco())
        self.demo_cb.observe(lambda _: self._on_probe(), names="value")
        self.processes_cb.observe(lambda _: self._on_probe(), names="value")
        for wid in (self.idle_util, self.mem_high, self.sb_by, self.sb_idle):
            wid.observe(lambda _: self.safe_refresh(), names="value")
        self._use_backend()
        self._do_probe()

    def relabel(self) -> None:
        self.kwh_label.value = html.escape(self.t("probe_kwh", cur=self.state.currency))
        for dd, prefix in ((self.sb_by, "probe_sb_by_"), (self.sb_idle, "probe_sb_idle_")):
            keep = dd.value
            dd.options = [(self.t(prefix + str(v)), v) for _, v in _pairs(dd.options)]
            dd.value = keep
        self._draw_progress()

    # -- probing -----------------------------------------------------------------------------------
    @property
    def demo(self) -> bool:
        return bool(self.demo_cb.value)

    def _use_backend(self, sim: SimClock | None = None) -> None:
        """Point the probe at the demo fleet (simulated clock) or at the real NVML."""
        if self.demo:
            self._sim = sim or SimClock()
            probe.set_nvml(probe.fake("demo", clock=self._sim))
        else:
            self._sim = None
            if probe.uses_fake():
                probe.set_nvml(None)

    def _match(self, name: str, mem: float | None):
        return monitor.match_gpu(self.catalog, name, mem)

    def _do_probe(self) -> None:
        self.result = probe.probe(processes=bool(self.processes_cb.value), match=self._match)

    def _on_probe(self) -> None:
        if self.running:
            return
        self._use_backend()
        self._do_probe()
        self.samples, self.report, self.handoff_record = [], None, None
        self.to_tco_msg.value = ""
        self._sample_msg = ""
        self.progress.value = 0.0
        self.safe_refresh()

    # -- sampling ----------------------------------------------------------------------------------
    def start_watch(self, duration_s: float | None = None, interval_s: float | None = None,
                    blocking: bool = False) -> None:
        """Sample for ``duration_s`` at ``interval_s`` (the dropdowns' values by default)."""
        if self.running:
            return
        duration_s = float(duration_s if duration_s is not None else self.duration.value)
        interval_s = float(interval_s if interval_s is not None else self.interval.value)
        try:
            n = monitor.check_sampling(duration_s, interval_s)
        except GpucostError as exc:
            self.status.value = f'<span class="gc-msg-error">{html.escape(str(exc))}</span>'
            return
        if self.demo:  # replay the demo from its start, in simulated time
            self._use_backend(SimClock())
            self._do_probe()
        if self.result is None or not self.result.available:
            self._sample_msg = self.t("probe_need_gpu")
            self._draw_progress()
            return
        self.samples, self.report = [], None
        self.usage_rows, self.models, self.bill = [], {}, None
        self._wall0 = datetime.now(UTC).replace(microsecond=0)
        self.watch_duration_s, self.watch_interval_s = duration_s, interval_s
        self.running = True
        self._stop.clear()
        self.start_btn.disabled, self.stop_btn.disabled = True, False
        self.progress.value = 0.0
        self._sample_msg = self.t("probe_sampling")
        self._draw_chart()
        if self.demo:
            delay = self._frame_delay_s if self._frame_delay_s is not None else \
                min(DEMO_MAX_FRAME_S, DEMO_REAL_SECONDS / n)
            self._sim.real_pause_s = delay
            clock, sleep = self._sim, self._sim.sleep
        else:
            clock, sleep = time.monotonic, self._interruptible_sleep
        if blocking:
            self._watch(duration_s, interval_s, clock, sleep)
        else:
            self._thread = threading.Thread(target=self._watch, args=(duration_s, interval_s, clock, sleep),
                                            daemon=True, name="gpucost-probe-sampler")
            self._thread.start()

    def _interruptible_sleep(self, dt: float) -> None:
        self._stop.wait(dt)

    def _watch(self, duration_s, interval_s, clock, sleep) -> None:
        try:
            monitor.run_sampler(probe.sample, duration_s, interval_s, clock=clock, sleep=sleep,
                                on_sample=self._on_sample, should_stop=self._stop.is_set)
            key = "probe_stopped" if self._stop.is_set() else "probe_done"
            self._sample_msg = self.t(key, n=len({s.t_s for s in self.samples}))
        except Exception as exc:  # noqa: BLE001 - a thread must not die silently
            self._sample_msg = f'<span class="gc-msg-error">{html.escape(str(exc))}</span>'
        finally:
            self.running = False
            self.start_btn.disabled, self.stop_btn.disabled = False, True
            self.safe_refresh()

    def _on_sample(self, batch: list[monitor.Sample], fraction: float) -> None:
        self.samples.extend(batch)
        if batch:
            self._collect_processes(batch[0].t_s)
        self.progress.value = fraction
        self._draw_progress()
        now = time.monotonic()
        if now - self._last_chart >= LIVE_CHART_EVERY_S or fraction >= 1:
            self._last_chart = now
            self._draw_chart()

    def _collect_processes(self, t_s: float) -> None:
        """Who used each GPU at this sample (showback): each process stands for one interval."""
        import pandas as pd

        at = pd.Timestamp(self._wall0) + pd.Timedelta(seconds=t_s)
        for g in probe.process_samples():
            card = str(g.get("uuid") or g["index"])
            self.models[card] = g.get("name")
            for p in g["processes"]:
                self.usage_rows.append({
                    "card": card, "start": at, "duration_s": self.watch_interval_s, "user": p.get("user") or "",
                    "pod": f"{p['pid']} {p.get('name') or ''}".strip(), "sm_pct": p.get("sm_pct"),
                    "memory_mib": p.get("memory_mib"), "mig_profile": p.get("mig_profile") or ""})

    def _bill(self, years: float, kwh: float | None) -> None:
        """The showback bill of the watch: the cards' owned cost (economics, as `gpucost showback`)."""
        self.bill, self._bill_error, self.bill_over_time = None, "", None
        if not self.usage_rows and not self.models:
            return
        try:
            rates = showback.card_rates(self.catalog, self.models, self.state.currency,
                                        ownership=Ownership(years=years, electricity_per_kwh=kwh))
            # the watch: from its start, one interval per sample taken
            n = len({s.t_s for s in self.samples})
            period = showback.Period(self._wall0, self._wall0 + timedelta(seconds=n * self.watch_interval_s))
            frame = showback.usage_frame(self.usage_rows)
            self.bill = showback.allocate(frame, rates, period=period, by=self.sb_by.value, idle=self.sb_idle.value,
                                          catalog=self.catalog)
            self.bill_over_time = showback.cost_over_time(frame, rates, period, by=self.sb_by.value,
                                                          bins=max(1, min(SHOWBACK_BINS, n)), catalog=self.catalog)
        except GpucostError as exc:
            self._bill_error = str(exc)

    # -- compute -----------------------------------------------------------------------------------
    def _policy(self) -> monitor.Policy:
        idle_min = self.val("idle_for_min")
        return monitor.Policy(idle_util_pct=float(self.idle_util.value), idle_for_s=idle_min * 60,
                              mem_high_pct=float(self.mem_high.value))

    def _prices(self):
        from gpucost.pricing import price_summary

        return price_summary(self.catalog, self.state.currency)

    def refresh(self) -> None:
        policy = self._policy()
        kwh = self.val("kwh")
        years = self.val("amortize_years")
        self.values = {}
        if self.result is not None:
            prices = self._prices()
            for g in self.result.gpus:
                self.values[g.index] = (monitor.card_value(self.catalog, g.catalog_id, self.state.currency,
                                                           years, prices=prices) if g.catalog_id else None)
        self.report = (monitor.summarize(self.samples, self.watch_interval_s, policy, kwh_price=kwh,
                                         currency=self.state.currency, values=self.values)
                       if self.samples else None)
        if self.running:
            self.bill, self._bill_error = None, ""
        else:
            self._bill(years, kwh)
        self._draw()

    # -- hand-off to page 03 -------------------------------------------------------------------------
    def send_to_tco(self) -> dict | None:
        """A link to page 03 that starts from the measured mean utilization (and the matched card): the
        numbers travel in the link, in the visitor's browser — nothing is written on the server."""
        util = self.report.totals.get("utilization_mean_pct") if self.report else None
        if util is None:
            self.to_tco_msg.value = f'<span class="gc-msg-error">{html.escape(self.t("probe_to_tco_none"))}</span>'
            return None
        gpus = {g.index: g for g in self.result.gpus} if self.result else {}
        gpu_id = next((gpus[s.index].catalog_id for s in self.report.gpus
                       if s.index in gpus and gpus[s.index].catalog_id), None)
        count = len(self.report.gpus)
        url = self.page_link("tco", utilization=f"{util / 100:.4f}", gpu=gpu_id, count=count,
                             measured="demo" if self.demo else "probe")
        record = {"utilization_pct": round(util, 2), "gpu_id": gpu_id, "count": count, "url": url,
                  "duration_s": self.watch_duration_s, "interval_s": self.watch_interval_s,
                  "samples": len({s.t_s for s in self.samples}), "demo": self.demo}
        self.handoff_record = record
        text = self.t("probe_to_tco_done", util=f"{util:.1f}")
        if self.demo:
            text += " " + self.t("probe_to_tco_demo")
        self.to_tco_msg.value = (f'<span class="gc-msg-ok">{html.escape(text)}</span> '
                                 f'<a class="gc-to-tco-link" href="{html.escape(url)}">'
                                 f'{html.escape(self.t("probe_to_tco_open"))}</a>')
        return record

    # -- drawing -----------------------------------------------------------------------------------
    def _draw(self) -> None:
        self._draw_banner()
        self._draw_gpus()
        self._draw_values()
        self._draw_chart()
        self._draw_summary()
        self._draw_verdicts()
        self._draw_waste()
        self._draw_showback()
        self._draw_progress()
        available = self.result is not None and self.result.available
        self.start_btn.disabled = self.running or not available
        self.to_tco_btn.disabled = self.report is None

    def _draw_progress(self) -> None:
        n_total = math.ceil(self.watch_duration_s / self.watch_interval_s - 1e-9) if self.watch_duration_s else 0
        done = len({s.t_s for s in self.samples})
        text = self.t("probe_progress", done=done, total=n_total) if n_total else ""
        msg = self._sample_msg
        self.progress_label.value = f'<span class="gc-help">{html.escape(text)} {msg}</span>'

    def _draw_banner(self) -> None:
        r = self.result
        parts = []
        if self.demo:
            parts.append(f'<div class="gc-probe-demo" style="background:#fff3cd;border:2px solid #d39e00;'
                         f'padding:6px 10px;font-weight:700">{html.escape(self.t("probe_demo_banner"))}</div>')
        if r is None or not r.available:
            reason = self.prose(r.reason) if r and r.reason else ""
            hint = self.prose(r.hint) if r and r.hint else ""
            parts.append(f'<div class="gc-probe-nogpu" style="border-left:4px solid #a40000;padding:4px 10px">'
                         f'<p><b>{html.escape(self.t("probe_no_gpu"))}</b></p>'
                         f'<p class="gc-help">{self.t("probe_reason", reason=reason, hint=hint)}</p>'
                         f'<p>{html.escape(self.t("probe_would_show"))}</p></div>')
        else:
            parts.append("<p>" + html.escape(self.t("probe_found", n=len(r.gpus), driver=r.driver_version or "?",
                                                    cuda=r.cuda_version or "?")) + "</p>")
        self.banner.value = "".join(parts)

    def _draw_gpus(self) -> None:
        r = self.result
        if r is None or not r.available:
            self.gpu_table.value = ""
            return
        heads = ["probe_col_gpu", "probe_col_name", "probe_col_catalog", "probe_col_memory", "probe_col_util",
                 "probe_col_temp", "probe_col_power", "probe_col_sm", "probe_col_memclk", "probe_col_pcie",
                 "probe_col_mig", "probe_col_ecc", "probe_col_notes"]
        rows = []
        for g in r.gpus:
            notes = []
            if g.lost:
                notes.append(self.t("probe_lost"))
            if g.unavailable:
                notes.append(self.t("probe_unavailable", fields=", ".join(f for f, _ in g.unavailable)))
            if g.catalog_note:
                notes.append(g.catalog_note)
            mig = "—" if g.mig_mode is None else (self.t("probe_on") if g.mig_mode else self.t("probe_off"))
            if g.mig_instances:
                mig += "<br>" + "<br>".join(
                    f"{html.escape((m.name or '?').split(' MIG ')[-1])}: {_fmt(m.memory_used_mib)}/"
                    f"{_fmt(m.memory_total_mib)} MiB" for m in g.mig_instances)
            ecc = "—" if g.ecc_mode is None else (
                f"{self.t('probe_on')}: {_fmt(g.ecc_uncorrected_volatile)} / {_fmt(g.ecc_corrected_volatile)}"
                if g.ecc_mode else self.t("probe_off"))
            procs = ""
            if g.processes:
                procs = "<br>" + "<br>".join(
                    f"pid {p.pid} {html.escape(p.name or '?')} {_fmt(p.used_memory_mib)} MiB" for p in g.processes)
            rows.append(
                f"<tr data-index='{g.index}'><td>{g.index}</td><td class='gc-l'>{html.escape(g.name or '?')}"
                f"<br><span class='gc-help'>cc {_fmt(g.compute_capability, 1)}</span></td>"
                f"<td class='gc-l'>{html.escape(g.catalog_id or self.t('probe_not_in_catalog'))}</td>"
                f"<td>{_fmt(g.memory_used_mib)} / {_fmt(g.memory_total_mib)} MiB</td>"
                f"<td>{_fmt(g.utilization_gpu_pct)} %</td><td>{_fmt(g.temperature_c)} °C</td>"
                f"<td>{_fmt(g.power_w)} / {_fmt(g.power_limit_w)} W</td>"
                f"<td>{_fmt(g.sm_clock_mhz)} / {_fmt(g.sm_clock_max_mhz)}</td>"
                f"<td>{_fmt(g.mem_clock_mhz)} / {_fmt(g.mem_clock_max_mhz)}</td>"
                f"<td>Gen{_fmt(g.pcie_gen)} x{_fmt(g.pcie_width)} ({_fmt(g.pcie_gen_max)}/x{_fmt(g.pcie_width_max)})</td>"
                f"<td class='gc-l'>{mig}</td><td>{ecc}</td>"
                f"<td class='gc-l gc-help'>{'<br>'.join(html.escape(n) for n in notes)}{procs}</td></tr>")
        self.gpu_table.value = ("<table><thead><tr>" + "".join(f"<th>{html.escape(self.t(h))}</th>" for h in heads)
                                + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")

    def _draw_values(self) -> None:
        r = self.result
        if r is None or not r.available:
            self.value_box.value = ""
            return
        items = []
        for g in r.gpus:
            v = self.values.get(g.index)
            if v is None:
                items.append(f"<li>GPU {g.index}: {html.escape(self.t('probe_value_none', name=g.name or '?'))}</li>")
                continue
            cur = v.currency
            line = self.t("probe_value_line", name=v.name, new=_money(v.price_new), used=_money(v.price_used),
                          cloud=_money(v.cloud_hourly), cur=cur)
            if v.hourly_basis == "cloud-on-demand":
                basis = self.t("probe_value_cloud", v=_money(v.hourly_value), cur=cur, offer=v.cloud_offer or "?",
                               date=v.cloud_as_of or "?")
            elif v.hourly_basis == "amortized-new":
                basis = self.t("probe_value_amortized", v=_money(v.hourly_value), cur=cur,
                               years=f"{v.amortize_years:g}")
            else:
                basis = self.t("probe_value_nobasis")
            link = (f'<a href="02_quantization_fit.ipynb?gpu={html.escape(v.gpu_id)}">'
                    f'{html.escape(self.t("probe_fit_link"))}</a>')
            items.append(f"<li data-id='{html.escape(v.gpu_id)}'>GPU {g.index}: {html.escape(line)}<br>"
                         f"<span class='gc-help'>{html.escape(basis)}</span> — {link}</li>")
        self.value_box.value = f"<b>{html.escape(self.t('probe_value_head'))}</b><ul>{''.join(items)}</ul>"

    def _draw_chart(self) -> None:
        by_gpu: dict[int, list[monitor.Sample]] = {}
        for s in self.samples:
            by_gpu.setdefault(s.index, []).append(s)
        if not by_gpu and not self.running:  # nothing sampled: no empty chart
            self.fig = None
            self.clear_figure(self.chart)
            return
        minutes = self.watch_duration_s >= 600
        scale = 60.0 if minutes else 1.0
        fig = go.Figure(layout=dict(
            height=380, margin=dict(l=60, r=60, t=50, b=50), template=TEMPLATE,
            legend=dict(orientation="h", y=-0.25),
            title=self.t("probe_chart_title") + (" — DEMO" if self.demo else ""),
            xaxis=dict(title=self.t("probe_axis_time", unit="min" if minutes else "s")),
            yaxis=dict(title="%", range=[0, 105]),
            yaxis2=dict(title="W", overlaying="y", side="right", rangemode="tozero", showgrid=False)))
        for k, (idx, rows) in enumerate(sorted(by_gpu.items())):
            color = COLORS[k % len(COLORS)]
            x = [s.t_s / scale for s in rows]
            fig.add_scatter(x=x, y=[s.utilization_gpu_pct for s in rows], mode="lines",
                            name=self.t("probe_trace_util", i=idx), line=dict(color=color, width=2))
            fig.add_scatter(x=x, y=[s.memory_used_pct for s in rows], mode="lines",
                            name=self.t("probe_trace_mem", i=idx), line=dict(color=color, dash="dash"))
            fig.add_scatter(x=x, y=[s.power_w for s in rows], mode="lines", yaxis="y2",
                            name=self.t("probe_trace_power", i=idx), line=dict(color=color, dash="dot", width=1))
        self.fig = self.show_figure(self.chart, fig)

    def _draw_summary(self) -> None:
        rep = self.report
        if rep is None:
            self.summary.value = ""
            return
        cur = rep.currency
        heads = ["probe_col_gpu", "probe_sum_samples", "probe_sum_mean", "probe_sum_p95", "probe_sum_idle",
                 "probe_sum_mem", "probe_sum_power", "probe_sum_energy", "probe_sum_cost"]
        rows = []
        for s in rep.gpus:
            energy = _fmt(s.energy_kwh, 4) + ("" if s.energy_complete or s.energy_kwh is None else " *")
            rows.append(f"<tr data-index='{s.index}'><td>{s.index}{' ⚠' if s.lost else ''}</td><td>{s.samples}</td>"
                        f"<td>{_fmt(s.util_mean_pct, 1)} %</td><td>{_fmt(s.util_p95_pct, 1)} %</td>"
                        f"<td>{_dur(s.idle_s)}</td><td>{_fmt(s.mem_used_max_pct, 1)} %</td>"
                        f"<td>{_fmt(s.power_mean_w)} W</td><td>{energy}</td>"
                        f"<td>{_money(s.energy_cost)} {cur if s.energy_cost is not None else ''}</td></tr>")
        foot = ""
        if any(not s.energy_complete and s.energy_kwh is not None for s in rep.gpus):
            foot = f"<p class='gc-help'>* {html.escape(self.t('probe_energy_partial'))}</p>"
        if rep.kwh_price is None:
            foot += f"<p class='gc-help'>{html.escape(self.t('probe_energy_noprice'))}</p>"
        self.summary.value = ("<table><thead><tr>" + "".join(f"<th>{html.escape(self.t(h))}</th>" for h in heads)
                              + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>" + foot)

    def _verdict_text(self, v: monitor.Verdict, span_s: float) -> str:
        name = self.t(f"probe_policy_{v.policy}")
        thr = f"{v.threshold_pct:g}"
        if v.status == "unknown":
            text = self.t("probe_verdict_unknown", i=v.index, policy=name)
            g = next((g for g in self.result.gpus if g.index == v.index), None) if self.result else None
            if v.policy == "idle" and g is not None and g.mig_mode:
                text += " " + self.t("probe_verdict_mig")
            return text
        key = f"probe_verdict_{v.policy}_{v.status}"
        text = self.t(key, i=v.index, thr=thr, dur=_dur(v.for_s), at=_dur(v.fired_at_s), longest=_dur(v.longest_s))
        if v.status != "fired" and span_s < v.for_s:
            text += " " + self.t("probe_short", span=_dur(span_s), dur=_dur(v.for_s))
        return text

    def _draw_verdicts(self) -> None:
        rep = self.report
        if rep is None:
            self.verdicts.value = ""
            return
        spans = {g.index: g.covered_s for g in rep.gpus}
        items = []
        for v in rep.verdicts:
            color = {"fired": "#a40000", "pending": "#8a5300", "ok": "#1d6b2a"}.get(v.status, "#555")
            items.append(f"<li data-policy='{v.policy}' data-index='{v.index}' data-status='{v.status}' "
                         f"style='color:{color}'>{html.escape(self._verdict_text(v, spans.get(v.index, 0)))}</li>")
        self.verdicts.value = f"<b>{html.escape(self.t('probe_verdicts_head'))}</b><ul>{''.join(items)}</ul>"

    def _draw_waste(self) -> None:
        rep = self.report
        if rep is None:
            self.waste.value = ""
            return
        cur = rep.currency
        names = {g.index: g.name for g in self.result.gpus} if self.result else {}
        items = []
        for x in rep.waste:
            if x.wasted is None:
                why = self.t("probe_waste_noprice") if x.idle_hours is not None else self.t("probe_waste_noutil")
                items.append(f"<li>{html.escape(self.t('probe_waste_none', i=x.index, why=why))}</li>")
                continue
            basis = self.t("probe_basis_cloud") if x.basis == "cloud-on-demand" else self.t("probe_basis_amortized")
            items.append("<li>" + html.escape(self.t(
                "probe_waste_line", i=x.index, name=names.get(x.index) or "?", hours=f"{x.idle_hours:.3f}",
                value=_money(x.hourly_value), cur=cur, basis=basis, wasted=_money(x.wasted),
                month=_money(x.wasted_per_month))) + "</li>")
        total = rep.totals.get("wasted")
        head = self.t("probe_waste_total", wasted=_money(total), cur=cur) if total is not None else \
            self.t("probe_waste_head")
        self.waste.value = f"<b>{html.escape(head)}</b><ul>{''.join(items)}</ul>"

    def _draw_showback(self) -> None:
        head = f"<b>{html.escape(self.t('probe_sb_head'))}</b>"
        self._draw_showback_chart()
        err = self._bill_error
        if err:
            self.showback_box.value = f'{head}<p class="gc-msg-error">{html.escape(err)}</p>'
            return
        b = self.bill
        if b is None:
            self.showback_box.value = f'{head}<p class="gc-help">{html.escape(self.t("probe_sb_none"))}</p>'
            return
        cur = b.currency
        names = {showback.IDLE: self.t("probe_sb_idle_name"), showback.UNLABELLED: self.t("probe_sb_unlabelled")}
        heads = (self.t("probe_sb_col_name"), self.t("probe_sb_col_cost", cur=cur), self.t("probe_sb_col_share"),
                 self.t("probe_sb_col_hours"))
        rows = [f"<tr data-name='{html.escape(ln.name)}'><td class='gc-l'>{html.escape(names.get(ln.name, ln.name))}"
                f"</td><td>{ln.cost:,.2f}</td><td>{100 * ln.share:.1f} %</td><td>{ln.gpu_hours:.4f}</td></tr>"
                for ln in b.lines]
        rows.append(f"<tr class='gc-total'><td class='gc-l'><b>{html.escape(self.t('probe_sb_total'))}</b></td>"
                    f"<td><b>{b.total:,.2f}</b></td><td>100 %</td><td></td></tr>")
        idle = self.t("probe_sb_idle_text", share=f"{100 * b.idle_share:.1f}", cost=f"{b.idle_cost:,.2f}", cur=cur)
        rates = "".join(
            "<li>" + html.escape(self.t("probe_sb_rate", card=c.card, gpu=c.gpu_id or "?", rate=_money(c.per_hour),
                                        cur=cur, basis=self.t(f"probe_sb_basis_{c.basis}"))) + "</li>"
            for c in b.cards)
        link = download_link(showback.bill_csv(b), BILL_FILE, "text/csv", self.t("probe_sb_download", file=BILL_FILE))
        self.showback_box.value = (
            f"{head}<div class='gc-table'><table><thead><tr>"
            + "".join(f"<th>{html.escape(h)}</th>" for h in heads) + "</tr></thead><tbody>" + "".join(rows)
            + f"</tbody></table></div><p class='gc-probe-sb-idle-share'>{html.escape(idle)}</p>"
            f"<ul class='gc-help'>{rates}</ul><p>{link}</p>")

    def _draw_showback_chart(self) -> None:
        """Cost per user (or process) in each stretch of the watch, stacked, idle on top."""
        t = self.bill_over_time
        if t is None or self.bill is None:
            self.sb_fig = None
            self.clear_figure(self.sb_chart)
            return
        minutes = self.watch_duration_s >= 600
        x = [(ts - t.index[0]).total_seconds() / (60.0 if minutes else 1.0) for ts in t.index]
        names = {showback.IDLE: self.t("probe_sb_idle_name"), showback.UNLABELLED: self.t("probe_sb_unlabelled")}
        fig = go.Figure(layout=dict(
            height=340, margin=dict(l=60, r=30, t=50, b=50), template=TEMPLATE, barmode="stack",
            legend=dict(orientation="h", y=-0.25), title=self.t("probe_sb_chart_title") + (" — DEMO" if self.demo else ""),
            xaxis=dict(title=self.t("probe_axis_time", unit="min" if minutes else "s")),
            yaxis=dict(title=self.bill.currency)))
        for k, col in enumerate(t.columns):
            color = "#bbbbbb" if col == showback.IDLE else COLORS[k % len(COLORS)]
            fig.add_bar(x=x, y=[float(v) for v in t[col]], name=names.get(col, col), marker=dict(color=color))
        self.sb_fig = self.show_figure(self.sb_chart, fig)

    # -- record ------------------------------------------------------------------------------------
    def results_record(self) -> dict:
        rec = super().results_record()
        r = self.result
        rec.update({
            "demo": self.demo,
            "available": bool(r and r.available),
            "reason": r.reason if r else None,
            "backend": r.backend if r else None,
            "banner": self.banner.value,
            "gpus": [{"index": g.index, "name": g.name, "catalog_id": g.catalog_id,
                      "memory_total_mib": g.memory_total_mib, "utilization_gpu_pct": g.utilization_gpu_pct,
                      "power_w": g.power_w, "mig_mode": g.mig_mode, "lost": g.lost} for g in (r.gpus if r else ())],
            "values": {str(i): (None if v is None else {"gpu_id": v.gpu_id, "hourly_value": v.hourly_value,
                                                        "hourly_basis": v.hourly_basis})
                       for i, v in self.values.items()},
            "watch": None if self.report is None else {
                "duration_s": self.watch_duration_s, "interval_s": self.watch_interval_s,
                "samples": len({s.t_s for s in self.samples}), **self.report.to_dict()},
            "verdicts": self.verdicts.value,
            "waste_text": self.waste.value,
            "chart_traces": len(self.fig.data) if self.fig is not None else 0,
            "chart_points": len(self.fig.data[0].x) if self.fig is not None and self.fig.data else 0,
            "chart_title": self.fig.layout.title.text if self.fig is not None else None,
            "progress": self.progress.value,
            "handoff": self.handoff_record,
            "showback": None if self.bill is None else self.bill.to_dict(),
            "showback_html": self.showback_box.value,
            "showback_chart_traces": [tr.name for tr in self.sb_fig.data] if self.sb_fig is not None else [],
        })
        return rec
