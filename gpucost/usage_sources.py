"""Where showback's usage rows come from: a CSV export, a Prometheus server holding DCGM exporter metrics,
or the live probe's per-process samples. Each reader returns a :class:`Usage` (a usage frame for
:func:`gpucost.showback.allocate`, and the card models the source names).

**Generic CSV** (one row per sample or per stretch of use; header names, any order):

============== ======== ==========================================================================
column         needed   meaning
============== ======== ==========================================================================
time           yes      when the sample was taken / the use began (ISO 8601; UTC unless it says)
card           yes      the card (any id: ``node1:0``, a UUID)
duration_s     no       how long the row stands for [s]; without it, until the card's next sample
                        (at most the sampling interval: the median spacing, or ``interval_s``)
user, project, pod  no  who used it (empty: unlabelled)
sm_pct         one of   share of the card's SM time [%, 0–100] (time slicing)
memory_mib     these    memory held [MiB] (the memory-held rule)
mig_profile    three    the MIG instance held (``3g.40gb``): its fixed fraction of the card
gpu            no       the card's model (catalog id or name) when the card is not all one model
============== ======== ==========================================================================

**Slurm sacct** (detected by its ``JobID`` and ``AllocTRES`` columns; ``|`` or ``,`` separated), as
written by ``sacct -a -X -P -S 2026-11-01 -E 2026-12-01 --format=JobID,User,Account,NodeList,Start,End,
AllocTRES``: a job holding ``gres/gpu=N`` of a node's ``gpus_per_node`` cards for Start..End is billed
N / gpus_per_node of the node (the node is one "card" of that many GPUs: its cost is scaled by
``gpus_per_node``). user = User, project = Account, pod = JobID. Slurm allocates whole GPUs, so this is
allocation, not SM time. Times without a zone are taken as UTC. Jobs without GPUs and job steps
(``123.batch``) are left out; a running job (End ``Unknown``) runs until ``now``.

**Prometheus** with NVIDIA dcgm-exporter metrics: ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (ratio; preferred:
a truer busy signal) or ``DCGM_FI_DEV_GPU_UTIL`` (%) for the SM share, ``DCGM_FI_DEV_FB_USED`` (MiB) for
memory, read with ``/api/v1/query_range`` as ``avg_over_time(M[step])`` at every step of the period (each
point stands for the step after it). card = ``Hostname:gpu`` (else ``UUID``); project = ``namespace``,
pod = ``namespace/pod``, user = the series' ``user`` label if it has one, else the namespace; a series
without a pod is nobody's (idle); ``GPU_I_PROFILE`` (MIG) is the instance's profile. dcgm-exporter
reports a card's metrics once for each pod on it, so pods time-slicing one card share its reading (the
engine scales an over-full instant down to the whole card).
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from gpucost.errors import DataError, GpucostError
from gpucost.showback import Period, sample_durations, usage_frame

CSV_COLUMNS = ("time", "card", "duration_s", "user", "project", "pod", "sm_pct", "memory_mib", "mig_profile",
               "gpu")
SACCT_COLUMNS = ("JobID", "User", "Account", "NodeList", "Start", "End", "AllocTRES")
#: dcgm-exporter metric names (https://github.com/NVIDIA/dcgm-exporter, default-counters.csv)
ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
FB_USED = "DCGM_FI_DEV_FB_USED"
#: Prometheus refuses a range query of more than 11,000 points per series; ask in pieces of this many steps
MAX_POINTS_PER_QUERY = 10_000


@dataclass(frozen=True)
class Usage:
    """Usage rows from one source: ``frame`` (:func:`gpucost.showback.usage_frame`), the card models the
    source names (card → a GPU name or catalog id, None when it does not say), and ``scale`` (card → how
    many GPUs the "card" is: a sacct node) and ``period``, the span the source watched when it knows it
    (the probe: a card no process used over it is billed idle)."""

    frame: pd.DataFrame
    models: dict[str, str | None]
    source: str
    scale: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    period: Period | None = None  # the span the source watched (the probe), when it knows it


# --------------------------------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------------------------------

def _sniff(path: Path) -> tuple[list[str], str]:
    with path.open(encoding="utf-8", newline="") as f:
        head = f.readline()
    delim = "|" if head.count("|") > head.count(",") else ","
    return [h.strip() for h in head.rstrip("\r\n").split(delim)], delim


def read_csv(path, *, interval_s: float | None = None, gpus_per_node: int | None = None,
             now: datetime | None = None) -> Usage:
    """A generic usage CSV or a Slurm sacct export (see the module docstring); DataError naming file, row
    and column on a bad cell."""
    p = Path(path)
    if not p.is_file():
        raise GpucostError(f"{p}: file not found")
    header, delim = _sniff(p)
    if {"JobID", "AllocTRES"} <= set(header):
        return _read_sacct(p, delim, gpus_per_node, now)
    return _read_generic(p, header, interval_s)


def _rows(p: Path, delim: str) -> list[dict]:
    with p.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter=delim))


def _time(text: str, file: str, row: int, column: str) -> pd.Timestamp:
    try:
        t = pd.Timestamp(str(text).strip())
    except (ValueError, TypeError):
        t = None
    if t is None or t is pd.NaT or pd.isna(t):
        raise DataError(f"'{text}' is not an ISO date-time", file=file, row=row, column=column)
    return t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")


def _number(text: str | None, file: str, row: int, column: str, lo: float = 0.0, hi: float = math.inf) -> float:
    s = str(text or "").strip()
    if s == "":
        return math.nan
    try:
        x = float(s)
    except ValueError:
        raise DataError(f"'{text}' is not a number", file=file, row=row, column=column) from None
    if not (math.isfinite(x) and lo <= x <= hi):
        rng = f"from {lo:g} to {hi:g}" if math.isfinite(hi) else f"at least {lo:g}"
        raise DataError(f"{x:g} is out of range (must be {rng})", file=file, row=row, column=column)
    return x


def _read_generic(p: Path, header: list[str], interval_s: float | None) -> Usage:
    name = p.name
    for col in ("time", "card"):
        if col not in header:
            raise DataError(f"no '{col}' column (columns: {', '.join(header)}; a usage CSV needs "
                            f"{', '.join(CSV_COLUMNS)})", file=name, column=col)
    if not {"sm_pct", "memory_mib", "mig_profile"} & set(header):
        raise DataError("no usage column: give sm_pct, memory_mib or mig_profile", file=name)
    out: list[dict] = []
    models: dict[str, str | None] = {}
    for i, r in enumerate(_rows(p, ","), start=1):
        card = (r.get("card") or "").strip()
        if not card:
            raise DataError("empty card", file=name, row=i, column="card")
        row = {"card": card, "start": _time(r.get("time", ""), name, i, "time"),
               "user": (r.get("user") or "").strip(), "project": (r.get("project") or "").strip(),
               "pod": (r.get("pod") or "").strip(), "mig_profile": (r.get("mig_profile") or "").strip(),
               "sm_pct": _number(r.get("sm_pct"), name, i, "sm_pct", 0, 100),
               "memory_mib": _number(r.get("memory_mib"), name, i, "memory_mib"),
               "duration_s": _number(r.get("duration_s"), name, i, "duration_s")}
        out.append(row)
        gpu = (r.get("gpu") or "").strip()
        if gpu and models.get(card) not in (None, gpu):
            raise DataError(f"card '{card}' is '{models[card]}' in an earlier row", file=name, row=i, column="gpu")
        models[card] = gpu or models.get(card)
    if not out:
        raise DataError("no rows", file=name)
    frame = usage_frame(out)
    missing = frame["duration_s"].isna()
    if missing.any():
        frame.loc[missing, "duration_s"] = sample_durations(frame[missing], interval_s).to_numpy()
    return Usage(frame, models, f"csv {name}")


_GRES_RE = re.compile(r"(?:^|,)gres/gpu=(\d+)(?:,|$)")


def _sacct_row(r: dict, name: str, i: int, gpus_per_node: int, end_now: pd.Timestamp) -> dict | None:
    """One sacct row as a usage row, or None for a row that is not a started GPU job."""
    job = (r.get("JobID") or "").strip()
    m = _GRES_RE.search((r.get("AllocTRES") or "").strip())
    start_text = (r.get("Start") or "").strip()
    if "." in job or m is None or start_text in ("", "Unknown", "None"):
        return None  # a job step (its job's row holds the allocation), no GPU, or never started
    n = int(m.group(1))
    if n > gpus_per_node:
        raise DataError(f"the job holds {n} GPUs, more than --gpus-per-node {gpus_per_node}", file=name,
                        row=i, column="AllocTRES")
    start = _time(start_text, name, i, "Start")
    end_text = (r.get("End") or "").strip()
    end = end_now if end_text in ("", "Unknown", "None") else _time(end_text, name, i, "End")
    if end < start:
        raise DataError(f"End {end_text} is before Start {start_text}", file=name, row=i, column="End")
    node = (r.get("NodeList") or "").strip()
    if not node or "[" in node or "," in node:
        raise DataError(f"'{node}' is not one node (multi-node GPU jobs are not supported yet)", file=name,
                        row=i, column="NodeList")
    return {"card": node, "start": start, "duration_s": (end - start).total_seconds(),
            "user": (r.get("User") or "").strip(), "project": (r.get("Account") or "").strip(),
            "pod": job, "sm_pct": 100.0 * n / gpus_per_node}


def _read_sacct(p: Path, delim: str, gpus_per_node: int | None, now: datetime | None) -> Usage:
    name = p.name
    rows = _rows(p, delim)
    header = list(rows[0].keys()) if rows else []
    for col in SACCT_COLUMNS:
        if rows and col not in header:
            raise DataError(f"no '{col}' column (a sacct export needs {', '.join(SACCT_COLUMNS)})",
                            file=name, column=col)
    if not gpus_per_node or gpus_per_node < 1:
        raise GpucostError(f"{name} is a Slurm sacct export: give --gpus-per-node N (how many GPUs each "
                           "node has), so that a job's GPUs are a share of its node")
    t_now = pd.Timestamp(now or datetime.now(UTC))
    end_now = t_now.tz_localize("UTC") if t_now.tzinfo is None else t_now.tz_convert("UTC")
    out = [row for i, r in enumerate(rows, start=1) if (row := _sacct_row(r, name, i, gpus_per_node, end_now))]
    if not out:
        raise DataError("no GPU jobs (no row with gres/gpu=N in AllocTRES)", file=name)
    frame = usage_frame(out)
    nodes = sorted(frame["card"].unique())
    return Usage(frame, {n: None for n in nodes}, f"sacct {name}", {n: int(gpus_per_node) for n in nodes},
                 (f"Slurm allocations: a job holding N GPUs is billed N/{gpus_per_node} of its node",))


# --------------------------------------------------------------------------------------------------
# Prometheus (dcgm-exporter)
# --------------------------------------------------------------------------------------------------

def _query_range(get: Callable, url: str, query: str, start: float, end: float, step_s: int) -> list[dict]:
    """Every series of a range query over [start, end] [unix s], asked in pieces Prometheus accepts."""
    series: dict[tuple, dict] = {}
    t = start
    while t <= end:
        stop = min(end, t + (MAX_POINTS_PER_QUERY - 1) * step_s)
        try:
            resp = get(f"{url.rstrip('/')}/api/v1/query_range",
                       params={"query": query, "start": f"{t:.3f}", "end": f"{stop:.3f}", "step": f"{step_s}s"},
                       timeout=60)
        except Exception as exc:  # noqa: BLE001 - connection refused, DNS, timeouts: one line to the user
            raise GpucostError(f"cannot reach Prometheus at {url}: {type(exc).__name__}: {exc}") from None
        try:
            body = resp.json()
        except ValueError:
            raise GpucostError(f"{url} did not answer like Prometheus (HTTP {resp.status_code}, not JSON)") from None
        if body.get("status") != "success":
            raise GpucostError(f"Prometheus at {url} refused '{query}': {body.get('error', body)}")
        for s in body["data"]["result"]:
            key = tuple(sorted(s["metric"].items()))
            series.setdefault(key, {"metric": s["metric"], "values": []})["values"] += s["values"]
        t = stop + step_s
    return list(series.values())


def _series_frame(series: list[dict], value_name: str, scale: float) -> pd.DataFrame:
    frames = []
    for s in series:
        m = s["metric"]
        if not s["values"]:
            continue
        v = np.array(s["values"], dtype=object)
        ns, pod = m.get("namespace", ""), m.get("pod", "")
        card = f"{m['Hostname']}:{m.get('gpu', '')}" if m.get("Hostname") else (m.get("UUID") or m.get("gpu", ""))
        frames.append(pd.DataFrame({
            "t": v[:, 0].astype(float), value_name: v[:, 1].astype(float) * scale,
            "card": card, "model": m.get("modelName", ""), "project": ns,
            "pod": f"{ns}/{pod}" if pod else "", "user": m.get("user") or ns,
            "mig_profile": m.get("GPU_I_PROFILE", ""), "container": m.get("container", "")}))
    cols = ["t", value_name, "card", "model", "project", "pod", "user", "mig_profile", "container"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)


def read_prometheus(url: str, period: Period, *, step_s: int = 60, metric: str = "auto",
                    get: Callable | None = None) -> Usage:
    """Usage rows of ``period`` from a Prometheus server holding dcgm-exporter metrics (see the module
    docstring). ``metric``: auto (ENGINE_ACTIVE when the server has it, else GPU_UTIL) | engine | util;
    ``get``: an HTTP GET like ``requests.get`` (tests may pass their own)."""
    if get is None:
        import requests
        get = requests.get
    if not (isinstance(step_s, int) and step_s >= 1):
        raise GpucostError(f"the step must be a whole number of seconds >= 1, not {step_s}")
    if metric not in ("auto", "engine", "util"):
        raise GpucostError(f"unknown metric '{metric}': auto, engine or util")
    window = f"{step_s * 1000 - 1}ms"  # one step's samples, the left end excluded in Prometheus 2 and 3
    start = period.start.timestamp()
    end = period.end.timestamp() - step_s
    if end < start:
        raise GpucostError(f"the period is shorter than one step ({step_s} s)")
    busy: list[dict] = []
    used = None
    for name, scale in ((ENGINE_ACTIVE, 100.0), (GPU_UTIL, 1.0)):
        if (metric == "engine" and name != ENGINE_ACTIVE) or (metric == "util" and name != GPU_UTIL):
            continue
        busy = _query_range(get, url, f"avg_over_time({name}[{window}])", start, end, step_s)
        if busy:
            used = (name, scale)
            break
    mem = _query_range(get, url, f"avg_over_time({FB_USED}[{window}])", start, end, step_s)
    notes = []
    if used is None and not mem:
        raise GpucostError(f"Prometheus at {url} has no {ENGINE_ACTIVE}, {GPU_UTIL} or {FB_USED} series in "
                           f"{period.start:%Y-%m-%d %H:%M}..{period.end:%Y-%m-%d %H:%M} UTC")
    keys = ["t", "card", "model", "project", "pod", "user", "mig_profile", "container"]
    a = _series_frame(busy, "sm_pct", used[1]) if used else pd.DataFrame(columns=keys + ["sm_pct"])
    b = _series_frame(mem, "memory_mib", 1.0)
    df = a.merge(b, on=keys, how="outer") if len(b) else a.assign(memory_mib=np.nan)
    if used:
        notes.append(f"SM share from {used[0]}")
    models = {str(c): (str(mo) or None) for c, mo in df.groupby("card")["model"].first().items()}
    df = df[df["pod"] != ""]  # a card's reading without a pod on it is nobody's use: idle
    frame = usage_frame(pd.DataFrame({
        "card": df["card"], "start": pd.to_datetime(df["t"], unit="s", utc=True), "duration_s": float(step_s),
        "user": df["user"], "project": df["project"], "pod": df["pod"], "sm_pct": df["sm_pct"].clip(0, 100),
        "memory_mib": df["memory_mib"], "mig_profile": df["mig_profile"]}))
    return Usage(frame, models, f"prometheus {url}", notes=tuple(notes))


# --------------------------------------------------------------------------------------------------
# The live probe
# --------------------------------------------------------------------------------------------------

def read_probe(duration_s: float, interval_s: float, *, sample_fn: Callable[[], list[dict]],
               clock: Callable[[], float], sleep: Callable[[float], None],
               wall_start: datetime | None = None) -> Usage:
    """Per-process samples of this machine's GPUs every ``interval_s`` for ``duration_s`` (``sample_fn``:
    :func:`gpucost.probe.process_samples`; ``clock``/``sleep`` as in :func:`gpucost.monitor.run_sampler`).
    Each sample stands for one interval; pod = the process (``pid name``)."""
    from gpucost.monitor import check_sampling, paced

    n = check_sampling(duration_s, interval_s)
    t_wall = pd.Timestamp(wall_start or datetime.now(UTC))
    rows, models = [], {}
    for _k, t0 in paced(n, interval_s, clock, sleep):
        at = t_wall + pd.Timedelta(seconds=clock() - t0)
        for g in sample_fn():
            card = str(g.get("uuid") or g["index"])
            models[card] = g.get("name")
            for p in g.get("processes", ()):
                rows.append({"card": card, "start": at, "duration_s": float(interval_s),
                             "user": p.get("user") or "", "project": "",
                             "pod": f"{p['pid']} {p.get('name') or ''}".strip(), "sm_pct": p.get("sm_pct"),
                             "memory_mib": p.get("memory_mib"), "mig_profile": p.get("mig_profile") or ""})
    span = Period(t_wall.to_pydatetime(), (t_wall + pd.Timedelta(seconds=n * interval_s)).to_pydatetime())
    return Usage(usage_frame(rows), models, "probe", period=span)


__all__ = ["Usage", "CSV_COLUMNS", "SACCT_COLUMNS", "read_csv", "read_prometheus", "read_probe"]
