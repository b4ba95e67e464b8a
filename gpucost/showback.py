"""Showback for shared GPUs: who used the cards over a period, and what each user, project or pod owes.

Pure: a frame of usage rows and each card's hourly cost in, a :class:`Bill` out. The rows come from a
source (:mod:`gpucost.usage_sources`: a CSV export, a Prometheus server with DCGM exporter metrics, or
the live probe); nothing here reads a file, a server or NVML.

**Usage rows** (:data:`USAGE_COLUMNS`): one consumer (``user``, ``project``, ``pod``) on one ``card`` from
``start`` for ``duration_s`` seconds, holding

* ``sm_pct``      its share of the card's SM time [% of the card] (time slicing),
* ``memory_mib``  the memory it held [MiB] (memory-held sharing), and/or
* ``mig_profile`` the MIG instance it held ("3g.40gb"): its fixed fraction of the card is the profile's
  compute slices over the card's (data/mig_profiles.csv, read through :func:`gpucost.plan.share.mig_profiles`).

**The rule** that turns a row into a share ``w`` of its card: a row with a MIG profile gets the profile's
fraction; otherwise ``rule="sm"`` takes ``sm_pct / 100`` and ``rule="memory"`` ``memory_mib`` over the
card's memory. Shares of one card at one instant that add up to more than the whole card (per-process
readings overlap) are scaled down to add up to 1. A consumer's use is ``Σ w × hours`` [GPU-hours].

**The money.** Each card costs its hourly cost × the hours of the period (an owned card costs every hour
it is owned, busy or idle; a rented one every hour it is rented): :func:`card_rate` takes it from
:func:`gpucost.economics.card_hourly_cost` counted over every hour (``calendar_ownership``: amortisation
and power × PUE × the electricity price) for an owned card and from :func:`gpucost.pricing.card_price`
(the offer per GPU-hour) for a rented one. Of that cost, a consumer's part is its use over the period's
hours; what nobody used (idle time, and time without samples) is the **idle** part, either its own line
(``idle="separate"``) or spread over the consumers pro rata to their use (``idle="spread"``). Each card's
cost is rounded to the cent and split in whole cents by the largest remainder, so every card's lines add
up exactly to its cost, and the bill to the sum of the cards.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

import numpy as np
import pandas as pd

from gpucost.errors import GpucostError, UnknownNameError
from gpucost.serialize import Record
from gpucost.specs import SPECS
from gpucost.units import SECONDS_PER_HOUR

#: the sharing rules, idle rules and groupings (input specs: the CLI's and the page's choices)
RULES = tuple(SPECS["showback_rule"].choices)
IDLE_RULES = tuple(SPECS["showback_idle"].choices)
GROUPINGS = tuple(SPECS["showback_by"].choices)
#: the columns of a usage frame (see the module docstring); labels may be empty
USAGE_COLUMNS = ("card", "start", "duration_s", "user", "project", "pod", "sm_pct", "memory_mib", "mig_profile")
#: the name of a consumer whose row has no label of the grouping, and of the idle line
UNLABELLED = "(unlabelled)"
IDLE = "(idle)"
#: money is split in hundredths of the currency unit (cents, fen)
MINOR_UNITS = 100


# --------------------------------------------------------------------------------------------------
# Periods
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Period(Record):
    """A stretch of time [start, end) in UTC."""

    start: datetime
    end: datetime

    @property
    def hours(self) -> float:
        return (self.end - self.start).total_seconds() / SECONDS_PER_HOUR

    def to_dict(self) -> dict:
        return {"start": self.start.isoformat(), "end": self.end.isoformat(), "hours": self.hours}


_MONTH_RE = re.compile(r"^(\d{4})-(\d{2})$")


def _instant(text: str, end: bool) -> datetime:
    """An ISO date (a whole day: its start, or for an ``end`` the start of the next day) or date-time
    (UTC unless it says otherwise)."""
    s = text.strip()
    try:
        if len(s) == 10:
            d = date.fromisoformat(s)
            dt = datetime(d.year, d.month, d.day, tzinfo=UTC)
            return dt + timedelta(days=1) if end else dt
        dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise GpucostError(f"bad period '{text}': use YYYY-MM, or START..END with ISO dates "
                           "(2026-11-01..2026-11-30) or date-times") from None
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def parse_period(text: str) -> Period:
    """``YYYY-MM`` (that calendar month, UTC) or ``START..END``: ISO dates (END's whole day included:
    2026-11-01..2026-11-30 is November) or ISO date-times (END excluded)."""
    s = str(text).strip()
    m = _MONTH_RE.match(s)
    if m:
        y, mo = int(m.group(1)), int(m.group(2))
        if not 1 <= mo <= 12:
            raise GpucostError(f"bad period '{text}': month {mo} is not 01 to 12")
        start = datetime(y, mo, 1, tzinfo=UTC)
        end = datetime(y + (mo == 12), mo % 12 + 1, 1, tzinfo=UTC)
        return Period(start, end)
    if ".." not in s:
        raise GpucostError(f"bad period '{text}': use YYYY-MM (2026-11) or START..END (2026-11-01..2026-11-30)")
    a, b = s.split("..", 1)
    p = Period(_instant(a, False), _instant(b, True))
    if p.end <= p.start:
        raise GpucostError(f"bad period '{text}': the end is not after the start")
    return p


def covering_period(usage: pd.DataFrame) -> Period:
    """The period from the first row's start to the last row's end (when no period is asked for)."""
    if usage.empty:
        raise GpucostError("no usage rows: nothing to bill")
    start = usage["start"].min()
    end = (usage["start"] + pd.to_timedelta(usage["duration_s"], unit="s")).max()
    return Period(start.to_pydatetime(), end.to_pydatetime())


# --------------------------------------------------------------------------------------------------
# What a card costs per hour
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CardRate(Record):
    """One card's hourly cost [currency per hour] and where it comes from.

    basis : owned (economics: amortisation + power, every hour) | rented (the offer) | given (--hourly)
    """

    gpu_id: str | None
    per_hour: float
    currency: str
    basis: str
    memory_total_mib: float | None = None
    source: str = ""
    as_of: str = ""
    notes: tuple[str, ...] = ()
    gpus: int = 1  # how many GPUs the "card" stands for (a Slurm node): GPU-hours are its hours × this


def card_rate(catalog, gpu: str | None, currency: str, *, rented: bool = False, hourly: float | None = None,
              ownership=None) -> CardRate:
    """The hourly cost of a card of model ``gpu`` (catalog id or name): ``hourly`` when given (a price the
    user pays, basis "given"); rented: the card's cloud offer per GPU-hour (:func:`gpucost.pricing.card_price`);
    owned: :func:`gpucost.economics.card_hourly_cost` of the new card counted over every hour it is owned
    (:func:`gpucost.economics.calendar_ownership`)."""
    from gpucost.economics import calendar_ownership, card_hourly_cost
    from gpucost.pricing import card_price
    from gpucost.records import gpu as gpu_record
    from gpucost.units import MIB_PER_GIB

    cur = currency.upper()
    catalog.fx_rate(cur)
    gid = catalog.gpu_id(gpu) if gpu else None
    mem = float(gpu_record(catalog, gid).vram_gib) * MIB_PER_GIB if gid else None
    if hourly is not None:
        if not (isinstance(hourly, (int, float)) and math.isfinite(hourly) and hourly >= 0):
            raise GpucostError(f"the hourly price must be a number >= 0, not {hourly}")
        return CardRate(gid, float(hourly), cur, "given", mem, "given by the user")
    if gid is None:
        raise GpucostError("the card's model is not known: give --gpu ID (or --hourly PRICE)")
    if rented:
        price, src, asof = card_price(catalog, gid, cur, "cloud")
        if price is None:
            raise GpucostError(f"no cloud offer for '{gid}' in the catalog: give --hourly PRICE")
        return CardRate(gid, float(price), cur, "rented", mem, src, asof)
    h = card_hourly_cost(catalog, gid, cur, "new", calendar_ownership(ownership))
    if h.per_hour is None:
        raise GpucostError(f"no new price for '{gid}' in the catalog: give --hourly PRICE or --rented")
    return CardRate(gid, float(h.per_hour), cur, "owned", mem, h.source, h.as_of, h.notes)


def card_rates(catalog, models: Mapping[str, str | None], currency: str, *, gpu: str | None = None,
               rented: bool = False, hourly: float | None = None, scale: Mapping[str, int] | None = None,
               ownership=None) -> dict[str, CardRate]:
    """Every card's :class:`CardRate`: its model is ``gpu`` when given, else what the source names
    (a catalog id or name, or an NVML / DCGM name such as "NVIDIA A100-SXM4-80GB", matched with
    :func:`gpucost.monitor.match_gpu`). ``scale``: card → how many GPUs it stands for (a Slurm node):
    its rate and memory are that many cards'. One rate is worked out once per model."""
    from dataclasses import replace

    from gpucost.monitor import match_gpu

    by_model: dict[str | None, CardRate] = {}
    out = {}
    for card, named in models.items():
        model = gpu
        if model is None and named:
            try:
                model = catalog.gpu_id(named)
            except UnknownNameError:
                model, why = match_gpu(catalog, named)
                if model is None and hourly is None:
                    raise GpucostError(f"card {card}: {why}; give --gpu ID (the card's catalog model)") from None
        if model not in by_model:
            by_model[model] = card_rate(catalog, model, currency, rented=rented, hourly=hourly, ownership=ownership)
        r = by_model[model]
        n = int((scale or {}).get(card, 1))
        if n != 1:
            r = replace(r, per_hour=r.per_hour * n, gpus=n,
                        memory_total_mib=None if r.memory_total_mib is None else r.memory_total_mib * n,
                        notes=(*r.notes, f"{n} GPUs of {r.per_hour:g} {r.currency}/h each"))
        out[card] = r
    return out


# --------------------------------------------------------------------------------------------------
# Usage frames
# --------------------------------------------------------------------------------------------------

def usage_frame(rows) -> pd.DataFrame:
    """A usage frame (:data:`USAGE_COLUMNS`) from a frame or an iterable of mappings: ``start`` as UTC
    timestamps, numbers as floats (NaN: not read), labels as categories of strings ("" when missing)."""
    df = rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    labels = ("card", "user", "project", "pod", "mig_profile")
    for col in USAGE_COLUMNS:
        if col not in df.columns:
            df[col] = pd.Categorical.from_codes(np.zeros(len(df), dtype=np.int8), categories=pd.Index([""], dtype=object)) \
                if col in labels else np.nan
    df = df[list(USAGE_COLUMNS)]
    if len(df):
        df["start"] = pd.to_datetime(df["start"], utc=True)
    else:
        df["start"] = pd.to_datetime(pd.Series([], dtype="object"), utc=True)
    for col in ("duration_s", "sm_pct", "memory_mib"):
        df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
    for col in labels:
        # categories: a month of samples names a few cards and consumers millions of times
        if not (isinstance(df[col].dtype, pd.CategoricalDtype) and list(df[col].cat.categories) == [""]
                and not df[col].isna().any()):
            df[col] = _labels(df[col])
    return df


def _labels(c: pd.Series) -> pd.Categorical:
    """A label column as a categorical of strings, "" where missing (one pass over the rows)."""
    codes, uniq = pd.factorize(c, use_na_sentinel=True)
    names = [str(x) for x in uniq] + [""]
    codes = np.where(codes < 0, len(names) - 1, codes)
    cats, inv = np.unique(np.array(names, dtype=object), return_inverse=True)
    return pd.Categorical.from_codes(inv[codes], categories=pd.Index(cats, dtype=object))


def sample_durations(df: pd.DataFrame, interval_s: float | None = None) -> pd.Series:
    """How long each sample of a sampled series stands for [s]: until the card's next sampling instant,
    at most ``interval_s`` (the sampling interval; by default each card's median spacing), so that a gap
    in the samples counts as time without samples, not as use."""
    t = _ns(df["start"])
    out = np.full(len(df), np.nan)
    codes, cards = pd.factorize(df["card"])
    for k in range(len(cards)):
        idx = np.flatnonzero(codes == k)
        ts = np.unique(t[idx])
        gaps = np.diff(ts) / 1e9
        nominal = float(interval_s) if interval_s else (float(np.median(gaps)) if len(gaps) else 0.0)
        if not nominal > 0:
            raise GpucostError("cannot tell how long each sample stands for (one sample per card): give the "
                               "sampling interval (--interval) or a duration_s column")
        per_instant = np.minimum(np.append(gaps, nominal), nominal)
        out[idx] = per_instant[np.searchsorted(ts, t[idx])]
    return pd.Series(out, index=df.index)


def _ns(times: pd.Series) -> np.ndarray:
    """UTC timestamps as int64 nanoseconds since the epoch (without a Python loop)."""
    return pd.DatetimeIndex(times).as_unit("ns").asi8


def mig_fractions(catalog, gpu_id: str | None, profiles) -> dict[str, float]:
    """Each MIG profile name's fraction of the card (compute slices / the card's compute slices, from
    data/mig_profiles.csv); GpucostError naming the known profiles for one the table does not have."""
    from gpucost.plan.share import mig_profiles

    wanted = sorted({p for p in profiles if p})
    if not wanted:
        return {}
    if gpu_id is None:
        raise GpucostError(f"MIG profile '{wanted[0]}' on a card of unknown model: give --gpu ID")
    table = {p.profile: p.compute_fraction for p in mig_profiles(gpu_id, catalog, with_media=True)}
    out = {}
    for p in wanted:
        name = p.split("MIG ")[-1].strip()  # NVML names an instance "NVIDIA A100-SXM4-80GB MIG 3g.40gb"
        if name not in table:
            raise UnknownNameError(f"MIG profile of {gpu_id}", name, table)
        out[p] = table[name]
    return out


# --------------------------------------------------------------------------------------------------
# The bill
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BillLine(Record):
    """One line of a bill: ``name`` (a user, project or pod, or the idle line) owes ``cost`` [currency]
    (``cost_cents`` in hundredths) for ``gpu_hours`` of use; ``share`` of the bill's total."""

    name: str
    cost: float
    cost_cents: int
    gpu_hours: float
    share: float


@dataclass(frozen=True)
class CardBill(Record):
    """One card over the period: its rate, its cost, how much of it was used and how much stood idle
    [GPU-hours: the card's hours × ``gpus``, the GPUs it stands for]."""

    card: str
    gpu_id: str | None
    basis: str
    per_hour: float
    hours: float
    cost: float
    cost_cents: int
    used_gpu_hours: float
    idle_gpu_hours: float
    idle_share: float
    lines: tuple[BillLine, ...]
    source: str = ""
    as_of: str = ""
    notes: tuple[str, ...] = ()
    gpus: int = 1


@dataclass(frozen=True)
class Bill(Record):
    """Who owes what over a period (see the module docstring). ``lines`` are the consumers (and, with
    ``idle="separate"``, the idle line last); ``idle_cost`` is what idle time cost, whichever way it is
    billed; ``total`` adds up the lines exactly."""

    period: Period
    by: str
    idle: str
    rule: str
    currency: str
    total: float
    total_cents: int
    idle_cost: float
    idle_share: float
    lines: tuple[BillLine, ...]
    cards: tuple[CardBill, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def line(self, name: str) -> BillLine:
        for ln in self.lines:
            if ln.name == name:
                return ln
        raise UnknownNameError("bill line", name, [ln.name for ln in self.lines])


def largest_remainder(total: int, weights) -> np.ndarray:
    """Split ``total`` whole units in proportion to ``weights`` (≥ 0, not all 0): each gets the floor of
    its exact share, and the units left go to the largest remainders (ties: the earlier weight). The parts
    add up to ``total`` exactly."""
    w = np.asarray(weights, dtype=float)
    s = w.sum()
    if total == 0 or not s > 0:
        return np.zeros(len(w), dtype=np.int64)
    exact = total * (w / s)
    base = np.floor(exact + 1e-9).astype(np.int64)
    left = int(total - base.sum())
    if left > 0:
        order = np.lexsort((np.arange(len(w)), -(exact - base)))
        base[order[:left]] += 1
    elif left < 0:  # float noise pushed floors over the total
        order = np.lexsort((np.arange(len(w)), exact - base))
        base[order[:-left]] -= 1
    return base


def _check(by: str, idle: str, rule: str) -> None:
    for kind, v, ok in (("grouping (--by)", by, GROUPINGS), ("idle rule (--idle)", idle, IDLE_RULES),
                        ("sharing rule", rule, RULES)):
        if v not in ok:
            raise UnknownNameError(kind, v, ok, hint="one of " + ", ".join(ok))


def _shares(u: pd.DataFrame, rates: Mapping[str, CardRate], rule: str, catalog) -> np.ndarray:
    """Each row's share of its card (0 to 1), before scaling overfull instants."""
    w = np.zeros(len(u))
    mig = u["mig_profile"].to_numpy() != ""
    if mig.any():
        for card, idx in u[mig].groupby("card", sort=False).groups.items():
            fr = mig_fractions(catalog, rates[card].gpu_id, u.loc[idx, "mig_profile"])
            w[u.index.get_indexer(idx)] = u.loc[idx, "mig_profile"].map(fr).to_numpy()
    rest = ~mig
    if rule == "sm":
        w[rest] = u["sm_pct"].to_numpy()[rest] / 100.0
    else:
        total = u["card"].map({c: r.memory_total_mib for c, r in rates.items()}).to_numpy(dtype=float)
        need = rest & ~(total > 0)
        if need.any():
            raise GpucostError(f"the memory rule needs card '{u['card'].to_numpy()[need][0]}''s memory: give --gpu ID")
        with np.errstate(invalid="ignore", divide="ignore"):
            w[rest] = u["memory_mib"].to_numpy()[rest] / total[rest]
    return np.clip(np.nan_to_num(w, nan=0.0), 0.0, 1.0)


def _usage_and_currency(usage, rates: Mapping[str, CardRate]) -> tuple[pd.DataFrame, str]:
    u = usage_frame(usage) if not set(USAGE_COLUMNS) <= set(getattr(usage, "columns", ())) else usage
    missing = sorted(set(u["card"].unique()) - set(rates))
    if missing:
        raise GpucostError(f"no hourly cost for card(s) {', '.join(missing)}")
    currencies = {r.currency for r in rates.values()}
    if len(currencies) > 1:
        raise GpucostError(f"the cards' rates are in several currencies: {', '.join(sorted(currencies))}")
    return u, (currencies.pop() if currencies else "USD")


@dataclass(frozen=True)
class _RowUse:
    """Each usage row within a period: its start [ns], its card's code, its consumer's code and the
    GPU-hours of its card it used (share × hours)."""

    start: np.ndarray
    card_codes: np.ndarray
    cards: list[str]
    lab_codes: np.ndarray
    labels: list[str]
    used_h: np.ndarray


def _row_use(u: pd.DataFrame, rates: Mapping[str, CardRate], period: Period, by: str, rule: str,
             catalog=None) -> _RowUse:
    if catalog is None and (u["mig_profile"] != "").any():
        from gpucost.catalog import Catalog
        catalog = Catalog()
    start = _ns(u["start"])
    end = start + np.nan_to_num(u["duration_s"].to_numpy(), nan=0.0) * 1e9
    lo, hi = pd.Timestamp(period.start).value, pd.Timestamp(period.end).value
    dt_h = (np.minimum(end, hi) - np.maximum(start, lo)) / 1e9 / SECONDS_PER_HOUR
    keep = dt_h > 0
    if not keep.all():
        u, dt_h, start = u[keep].reset_index(drop=True), dt_h[keep], start[keep]
    w = _shares(u, rates, rule, catalog)
    card_codes, card_uniques = pd.factorize(u["card"], sort=True)
    if len(u):  # an instant of a card whose shares add up to more than the card: scale to the whole card
        inst_codes, inst = pd.factorize(start)
        slot_codes, _ = pd.factorize(card_codes.astype(np.int64) * len(inst) + inst_codes)
        w = w / np.maximum(np.bincount(slot_codes, weights=w), 1.0)[slot_codes]
    lab_codes, lab_uniques = pd.factorize(u[by], sort=True)
    return _RowUse(np.maximum(start, lo), card_codes, [str(c) for c in card_uniques], lab_codes,
                   [str(x) if str(x) else UNLABELLED for x in lab_uniques], w * dt_h)


def use_per_card(u: pd.DataFrame, rates: Mapping[str, CardRate], period: Period, by: str, rule: str,
                 catalog=None) -> tuple[list[str], list[str], np.ndarray]:
    """(cards, consumers, GPU-hours[card, consumer]) of a usage frame within ``period`` (see the module
    docstring for the rule and the scaling of over-full instants)."""
    r = _row_use(u, rates, period, by, rule, catalog)
    n = len(r.labels)
    per = np.bincount(r.card_codes * n + r.lab_codes, weights=r.used_h,
                      minlength=len(r.cards) * n).astype(float).reshape(len(r.cards), n)
    return r.cards, r.labels, per


def cost_over_time(usage, rates: Mapping[str, CardRate], period: Period, *, by: str = SPECS["showback_by"].default,
                   rule: str = SPECS["showback_rule"].default, bins: int = 24, catalog=None) -> pd.DataFrame:
    """What each consumer's use cost in each of ``bins`` equal stretches of ``period`` [currency; not
    rounded], and the idle time as its own column (``IDLE``): each stretch's row adds up to what the cards
    cost over it, and the columns over the whole period to :func:`allocate` with ``idle="separate"``
    before its rounding to cents. A row counts in the stretch where it starts (samples shorter than a
    stretch, as the probe's, fall in one). Indexed by each stretch's start."""
    _check(by, "separate", rule)
    if not (isinstance(bins, int) and bins >= 1):
        raise GpucostError(f"bins must be a whole number >= 1, not {bins}")
    u, _currency = _usage_and_currency(usage, rates)
    r = _row_use(u, rates, period, by, rule, catalog)
    lo = pd.Timestamp(period.start).value
    width = (pd.Timestamp(period.end).value - lo) / bins
    b = np.clip(((r.start - lo) // width).astype(np.int64), 0, bins - 1) if len(r.start) else r.start.astype(np.int64)
    per_hour = np.array([rates[c].per_hour for c in r.cards], dtype=float)
    cost = r.used_h * per_hour[r.card_codes] if len(r.start) else r.used_h
    n = len(r.labels)
    table = np.bincount(b * n + r.lab_codes, weights=cost, minlength=bins * n).astype(float).reshape(bins, n)
    bin_h = period.hours / bins
    idle = sum(x.per_hour for x in rates.values()) * bin_h - table.sum(axis=1)
    starts = pd.date_range(pd.Timestamp(period.start), periods=bins, freq=pd.Timedelta(hours=bin_h))
    out = pd.DataFrame(table, index=starts, columns=r.labels)
    out[IDLE] = np.maximum(idle, 0.0)
    return out


def _exact_split(value: float, row: np.ndarray, idle_h: float, spread: bool) -> np.ndarray:
    """``value`` split exactly (unrounded) over the consumers' use and, unless spread, the idle time (last)."""
    w = row if spread else np.append(row, idle_h)
    s = float(w.sum())
    return value * w / s if s > 0 else np.zeros(len(w))


def _card_bill(card: str, r: CardRate, row: np.ndarray, labels: list[str], hours: float,
               idle: str) -> tuple[CardBill, np.ndarray, int, int, np.ndarray]:
    """One card's bill, its consumers' cents, its idle line's cents, its idle time's value in cents, and the
    consumers' (then, unless spread, the idle line's) exact unrounded amounts — what their shares are of."""
    n = len(labels)
    used_h = float(row.sum())
    idle_h = max(0.0, hours - used_h)
    value = r.per_hour * hours
    cents = int(round(value * MINOR_UNITS))
    spread = idle == "spread" and used_h > 0
    separate = largest_remainder(cents, np.append(row, idle_h))
    split = largest_remainder(cents, row) if spread else separate
    lab_cents = split[:n]
    idle_cents = 0 if spread else int(split[n])
    exact = _exact_split(value, row, idle_h, spread)
    g = r.gpus
    lines = [BillLine(labels[i], int(lab_cents[i]) / MINOR_UNITS, int(lab_cents[i]), float(row[i]) * g,
                      float(exact[i]) / value if value else 0.0)
             for i in range(n) if row[i] > 0 or lab_cents[i]]
    if idle_cents or not spread:
        lines.append(BillLine(IDLE, idle_cents / MINOR_UNITS, idle_cents, idle_h * g,
                              float(exact[n]) / value if value and not spread else 0.0))
    bill = CardBill(card, r.gpu_id, r.basis, r.per_hour, hours, cents / MINOR_UNITS, cents, used_h * g,
                    idle_h * g, idle_h / hours if hours else 0.0, tuple(lines), r.source, r.as_of, r.notes, g)
    return bill, lab_cents, idle_cents, int(separate[n]), (exact if not spread else np.append(exact, 0.0))


def allocate(usage: pd.DataFrame, rates: Mapping[str, CardRate], *, period: Period | None = None,
             by: str = SPECS["showback_by"].default, idle: str = SPECS["showback_idle"].default,
             rule: str = SPECS["showback_rule"].default, catalog=None) -> Bill:
    """The bill of ``usage`` (a :func:`usage_frame`) over ``period`` (default: the span of the rows).

    rates  : card → its :class:`CardRate` (every card of the rows needs one; a card with a rate and no
             rows is billed as idle all period)
    by     : user | project | pod — whose lines the bill has
    idle   : spread (idle cost shared pro rata to use) | separate (its own line)
    rule   : sm (share of SM time) | memory (share of memory held); MIG rows use their profile's fraction
    catalog: for MIG profiles (data/mig_profiles.csv); the bundled one by default
    """
    _check(by, idle, rule)
    u, currency = _usage_and_currency(usage, rates)
    period = period or covering_period(u)
    hours = period.hours
    card_names, labels, per = use_per_card(u, rates, period, by, rule, catalog)
    n = len(labels)
    notes: list[str] = []
    cards: list[CardBill] = []
    cents_by_label = np.zeros(n, dtype=np.int64)
    exact_by_label = np.zeros(n + 1)   # unrounded amounts (the last: the idle line), for the lines' shares
    idle_cents_total = idle_value_cents = 0
    index_of = {c: i for i, c in enumerate(card_names)}
    for card in sorted(set(card_names) | set(rates)):
        row = per[index_of[card]] if card in index_of else np.zeros(n)
        bill, lab_cents, idle_cents, idle_value, exact = _card_bill(card, rates[card], row, labels, hours, idle)
        exact_by_label += exact
        if idle == "spread" and bill.used_gpu_hours == 0:
            notes.append(f"card {card} was idle all period: its cost stays on the idle line")
        cards.append(bill)
        cents_by_label += lab_cents
        idle_cents_total += idle_cents
        idle_value_cents += idle_value
    total = int(cents_by_label.sum()) + idle_cents_total
    gpus = np.array([rates[c].gpus for c in card_names], dtype=float)
    hours_by_label = (per * gpus[:, None]).sum(axis=0) if len(card_names) else np.zeros(n)
    idle_hours = sum(c.idle_gpu_hours for c in cards)
    # a line's share is of the exact (unrounded) bill: a bill of a few cents still says who used what
    value = float(exact_by_label.sum())
    share = exact_by_label / value if value > 0 else np.zeros(n + 1)
    lines = [BillLine(labels[i], int(cents_by_label[i]) / MINOR_UNITS, int(cents_by_label[i]),
                      float(hours_by_label[i]), float(share[i]))
             for i in np.lexsort((-share[:n], -cents_by_label)) if hours_by_label[i] > 0 or cents_by_label[i]]
    if idle_cents_total or idle == "separate":
        lines.append(BillLine(IDLE, idle_cents_total / MINOR_UNITS, idle_cents_total, idle_hours, float(share[n])))
    card_hours = hours * sum(c.gpus for c in cards)
    return Bill(period, by, idle, rule, currency, total / MINOR_UNITS, total, idle_value_cents / MINOR_UNITS,
                idle_hours / card_hours if card_hours else 0.0, tuple(lines), tuple(cards), tuple(notes))


def bill_csv(bill: Bill) -> str:
    """The bill as CSV text (one row per line, then the total), for a download or a spreadsheet."""
    import csv
    import io

    out = io.StringIO()
    wr = csv.writer(out, lineterminator="\n")
    wr.writerow([bill.by, f"cost_{bill.currency.lower()}", "gpu_hours", "share_pct", "period_start",
                 "period_end", "idle_rule"])
    for ln in bill.lines:
        wr.writerow([ln.name, f"{ln.cost_cents / MINOR_UNITS:.2f}", f"{ln.gpu_hours:.4f}",
                     f"{100 * ln.share:.2f}", bill.period.start.isoformat(), bill.period.end.isoformat(), bill.idle])
    wr.writerow(["(total)", f"{bill.total_cents / MINOR_UNITS:.2f}", "", "100.00", bill.period.start.isoformat(),
                 bill.period.end.isoformat(), bill.idle])
    return out.getvalue()


__all__ = ["RULES", "IDLE_RULES", "GROUPINGS", "USAGE_COLUMNS", "UNLABELLED", "IDLE", "Period", "parse_period",
           "covering_period", "CardRate", "card_rate", "card_rates", "usage_frame", "sample_durations", "mig_fractions",
           "BillLine", "CardBill", "Bill", "largest_remainder", "use_per_card", "cost_over_time", "allocate",
           "bill_csv"]
