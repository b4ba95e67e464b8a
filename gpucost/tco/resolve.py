"""Resolving a scenario against the catalog: every input not in the file comes from the catalog or
``tco_defaults.csv`` with its source (a figure that has no source is a required scenario input).

Resolution happens in the display currency and the catalog's market (:mod:`gpucost.pricing`: one
market for buying and renting — a card's street price and its cloud offers are both chosen there; auto
follows the currency, so a Chinese user on CNY sees China's street price, as on every other page) and the
scenario's own money values are converted into it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from gpucost.catalog import Catalog
from gpucost.economics import SITE_TARIFF, resale_retention
from gpucost.errors import GpucostError, UnknownNameError
from gpucost.i18n import Message
from gpucost.pricing import card_prices
from gpucost.records import Gpu, gpu_records
from gpucost.specs import MAX_GPUS
from gpucost.spot import interruption_rate_per_hour, spot_bucket
from gpucost.tco.inputs import (
    CloudInputs,
    DemandInputs,
    FxInputs,
    HybridInputs,
    Inputs,
    JobLoad,
    LeaseInputs,
    Offer,
    OwnedInputs,
    Params,
    Provenance,
    SpotInputs,
)
from gpucost.tco.scenario import DEFAULT_SWINGS, Job, Scenario
from gpucost.units import HOURS_PER_MONTH, MONTHS_PER_YEAR, SECONDS_PER_HOUR, TOKENS_PER_MILLION

NAN = math.nan
#: the cloud options, their offer column and scenario key
CLOUD_PRICES = (("on-demand", "od", "cloud.on_demand_price"), ("spot", "spot", "cloud.spot_price"),
                ("reserved-1y", "r1", "cloud.reserved_1y_price"), ("reserved-3y", "r3", "cloud.reserved_3y_price"))


@dataclass
class _Ctx:
    """What resolving one scenario collects: provenance, warnings, options that cannot be priced."""

    cat: Catalog
    sc: Scenario
    cur: str
    prov: list[Provenance] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unavailable: dict[str, tuple[str, dict]] = field(default_factory=dict)
    exposed: dict[str, bool] = field(default_factory=dict)

    @property
    def v(self) -> Mapping[str, object]:
        return self.sc.values

    @property
    def label(self) -> str:
        return self.sc.label

    def note(self, key, value, unit, source, as_of="", text="") -> None:
        self.prov.append(Provenance(key, value, unit, source, str(as_of or ""), text))

    def scen_src(self, key: str) -> str:
        return self.sc.sources.get(key, f"scenario {self.sc.name}")

    def num(self, key: str) -> float:
        """A scenario number (its schema has validated it)."""
        return float(self.v[key])  # type: ignore[arg-type]

    def money(self, key: str) -> float:
        """A scenario money value in the display currency (and whether it was converted)."""
        raw = self.v[key]
        if isinstance(raw, tuple):
            val, cur = raw
            self.exposed[key] = cur != self.cur
            return float(self.cat.convert(val, cur, self.cur))
        scur = str(self.v["currency"]).upper()
        self.exposed[key] = scur != self.cur
        return float(self.cat.convert(float(raw), scur, self.cur))  # type: ignore[arg-type]

    def given(self, key: str, unit: str, money: bool = False) -> float | None:
        """The scenario's own value of ``key`` (noted), or None."""
        if self.v[key] is None:
            return None
        val = self.money(key) if money else float(self.v[key])  # type: ignore[arg-type]
        self.note(key, val, f"{self.cur}{unit}" if money else unit, self.scen_src(key))
        return val

    def default(self, key: str, fkey: str, variant=None, region=None, required_msg=None) -> float | None:
        """A tco_defaults.csv value (noted with its source), converted to the display currency."""
        row = self.cat.default_row(fkey, variant, region)
        if row is None:
            if required_msg:
                raise GpucostError(f"{self.label}: key '{key}' is required: {required_msg}")
            return None
        val, unit = float(row["value"]), row["unit"]
        if row["currency"]:
            val = float(self.cat.convert(val, row["currency"], self.cur))
            unit = unit.replace(row["currency"], self.cur)
        self.note(key, val, unit, row["source"], row["as_of"], row["notes"])
        return val

    def gpu(self, key: str, name: str) -> Gpu:
        try:
            gid = self.cat.gpu_id(name)
        except UnknownNameError as exc:
            raise GpucostError(f"{self.label}: key '{key}': {exc}") from None
        return gpu_records(self.cat)[gid]

    def known(self, fkey: str, col: str = "variant") -> list[str]:
        t = self.cat.table("tco_defaults")
        return sorted(str(x) for x in t.loc[t["key"] == fkey, col].unique())


# --------------------------------------------------------------------------------------------------
# The owned card
# --------------------------------------------------------------------------------------------------

def _owned_prices(c: _Ctx, g: Gpu) -> dict[str, float]:
    prices_of = card_prices(c.cat, c.cur).get(g.id)
    prices = {}
    for cond in ("new", "used"):
        key = f"owned.price_{cond}"
        val = c.given(key, "", money=True)
        if val is None:
            q = prices_of.basis(cond) if prices_of is not None else None
            val = q.value if q is not None else NAN
            # the price moves with the exchange rate unless every quote it is taken from is in the currency
            c.exposed[key] = q is None or not q.local
            if q is not None:
                c.note(key, val, c.cur, q.source, q.as_of,
                       f"median of the catalog's rows {q.where}"
                       + (" (converted through fx.csv)" if c.exposed[key] else ""))
        prices[cond] = val
        if val != val:
            c.unavailable[f"buy-{cond}"] = ("unavail_no_price", {"what": cond, "gpu": g.name, "field": key})
    if "buy-new" in c.unavailable:
        c.unavailable.setdefault("lease", c.unavailable["buy-new"])
    return prices


def _host(c: _Ctx, g: Gpu) -> tuple[float, float]:
    """(host cost per card, host power per card [W])."""
    cost = c.given("owned.host_cost_per_gpu", "", money=True)
    if cost is None and c.v["owned.host"] is not None:
        row = c.cat.default_row("host_cost_per_gpu", variant=str(c.v["owned.host"]))
        if row is None:
            raise GpucostError(f"{c.label}: key 'owned.host': unknown host '{c.v['owned.host']}'; known: "
                               + ", ".join(c.known("host_cost_per_gpu")))
        cost = float(c.cat.convert(row["value"], row["currency"] or c.cur, c.cur))
        c.exposed["owned.host_cost_per_gpu"] = (row["currency"] or c.cur) != c.cur
        c.note("owned.host_cost_per_gpu", cost, c.cur, row["source"], row["as_of"], row["notes"])
    if cost is None:
        raise GpucostError(f"{c.label}: key 'owned.host_cost_per_gpu' is required (the host share per card: "
                           f"CPU, RAM, board, PSU, chassis; 0 if the card goes into a machine you own), or "
                           f"owned.host: one of {', '.join(c.known('host_cost_per_gpu'))}")
    if cost == 0:
        c.warnings.append(Message("tw_host_zero"))
    power = c.given("owned.host_power_w_per_gpu", "W")
    if power is None:  # a baseboard (HGX/OAM) server draws more per card than a PCIe server (gpus.csv host_type)
        power = c.default("owned.host_power_w_per_gpu", "host_power_w_per_gpu",
                          "sxm-server" if g.on_baseboard else "pcie-server", required_msg="no host power default")
    return cost, float(power)  # type: ignore[arg-type]


def _given_or_default(c: _Ctx, key: str, unit: str, fkey: str, variant=None, region=None, msg=None,
                      money: bool = False) -> float | None:
    if c.v[key] is not None:
        return c.given(key, unit, money=money)
    return c.default(key, fkey, variant, region, required_msg=msg)


def _site(c: _Ctx) -> dict[str, float]:
    site, region = str(c.v["owned.site"]), c.v["region"]
    out = {
        "idle": _given_or_default(c, "owned.idle_power_fraction", "fraction of TDP", "gpu_idle_power_fraction",
                                  msg="no gpu_idle_power_fraction in tco_defaults.csv"),
        "pue": _given_or_default(c, "owned.pue", "ratio", "pue", site, msg=f"no PUE for site '{site}'"),
        "fail": _given_or_default(c, "owned.failure_rate_per_year", "per card-year", "gpu_failure_rate_per_year",
                                  msg="no gpu_failure_rate_per_year in tco_defaults.csv"),
    }
    if c.v["owned.electricity_per_kwh"] is None and not region:
        raise GpucostError(f"{c.label}: key 'owned.electricity_per_kwh' is required (or key 'region': one of "
                           f"{', '.join(c.known('electricity_per_kwh', 'region'))})")
    out["kwh"] = _given_or_default(
        c, "owned.electricity_per_kwh", "/kWh", "electricity_per_kwh", SITE_TARIFF[site], str(region), money=True,
        msg=f"tco_defaults.csv has no {SITE_TARIFF[site]} electricity price for region '{region}' (regions: "
            f"{', '.join(c.known('electricity_per_kwh', 'region'))})")
    if c.v["owned.colocation_per_kw_month"] is not None or site == "colocation":
        out["colo"] = _given_or_default(c, "owned.colocation_per_kw_month", "/kW-month", "colocation_per_kw_month",
                                        region=str(region or ""), money=True,
                                        msg="no colocation price in tco_defaults.csv for this region; give your "
                                            "quote per kW-month")
    else:
        out["colo"] = 0.0
    return out  # type: ignore[return-value]


def _owned(c: _Ctx) -> tuple[OwnedInputs, Gpu]:
    g = c.gpu("owned.gpu", str(c.v["owned.gpu"]))
    tdp = c.given("owned.tdp_w", "W")
    if tdp is None:
        if not g.tdp_w:
            raise GpucostError(f"{c.label}: key 'owned.tdp_w' is required: gpus.csv has no TDP for {g.id}")
        tdp = g.tdp_w
        c.note("owned.tdp_w", tdp, "W", g.source, g.as_of)
    prices = _owned_prices(c, g)
    host_cost, host_w = _host(c, g)
    site = _site(c)
    rho = c.given("owned.resale_retention_per_year", "per year")
    if rho is None:
        rho, why = resale_retention(c.cat, g.id, c.cur)
        if rho != rho:
            raise GpucostError(f"{c.label}: key 'owned.resale_retention_per_year' is required ({why})")
        c.note("owned.resale_retention_per_year", rho, "per year", why)
    staff = c.num("owned.staff_hours_per_month") * c.money("owned.staff_cost_per_hour")
    return OwnedInputs(
        count=c.num("owned.count"), tdp_w=float(tdp), host_power_w=host_w, idle_power_fraction=site["idle"],
        max_utilization=c.num("owned.max_utilization"), always_on=1.0 if c.v["owned.always_on"] else 0.0,
        pue=site["pue"], electricity_per_kwh=site["kwh"], colocation_per_kw_month=site["colo"],
        maintenance_fraction_per_year=c.num("owned.maintenance_per_year"),
        failure_rate_per_year=site["fail"], staff_per_month=staff, price_new=prices["new"],
        price_used=prices["used"], host_cost=host_cost, resale_retention_per_year=float(rho),
        resale_fee_fraction=float(c.v["owned.resale_fee"])), g  # type: ignore[arg-type]


def _lease(c: _Ctx, horizon: int) -> LeaseInputs:
    rate = c.given("lease.annual_rate", "per year")
    region = c.v["region"]
    if rate is None:
        row = c.cat.default_row("financing_rate_per_year", region=str(region)) if region else None
        if row is not None and row["region"]:
            rate = float(row["value"])
            c.note("lease.annual_rate", rate, "per year", row["source"], row["as_of"], row["notes"])
        else:
            rate = NAN
            c.unavailable["lease"] = ("unavail_financing", {"region": str(region or "?")})
    return LeaseInputs(annual_rate=rate, term_months=float(c.v["lease.term_months"] or horizon),  # type: ignore[arg-type]
                       down_payment_fraction=float(c.v["lease.down_payment"]))  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# The cloud card and spot
# --------------------------------------------------------------------------------------------------

def relative_speed(catalog: Catalog, fast_gpu: str, ref_gpu: str) -> tuple[float, str]:
    """Dense training throughput of ``fast_gpu`` over ``ref_gpu`` (:attr:`Gpu.training_tflops`)."""
    recs = gpu_records(catalog)
    a, b = recs[catalog.gpu_id(fast_gpu)], recs[catalog.gpu_id(ref_gpu)]
    if a.id == b.id:
        return 1.0, "same card"
    x, y = a.training_tflops, b.training_tflops
    if x and y:
        return x / y, (f"dense {a.training_precision.upper()}/{b.training_precision.upper()} {x:g} / {y:g} "
                       "TFLOPS (gpus.csv)")
    return NAN, "no common throughput figure in gpus.csv"


def _offer_table(c: _Ctx, cloud_gpu: str):
    from gpucost.pricing import offer_rows

    o = offer_rows(c.cat, c.cur)   # the offers the user's market prices from (gpucost.pricing)
    o = o[o["gpu_id"] == cloud_gpu]
    providers = c.v["cloud.providers"]
    if isinstance(providers, (list, tuple)) and providers:
        _check_providers(c, providers)
        wanted = {str(p).lower() for p in providers}
        o = o[o["provider"].str.lower().isin(wanted)]
    if c.v["cloud.instance"]:
        o = o[o["InstanceType"].str.lower() == str(c.v["cloud.instance"]).lower()]
    if o.empty:
        return o.assign(od=[], spot=[], r1=[], r3=[], r1_note=[], r3_note=[])
    rates = c.cat.fx.set_index("currency")["per_usd"]
    conv = rates[c.cur] / o["currency"].map(rates).to_numpy() / o["AcceleratorCount"].to_numpy()
    o = o.assign(od=o["Price"] * conv, spot=o["SpotPrice"] * conv, r1=o["ReservedPrice1y"] * conv,
                 r3=o["ReservedPrice3y"] * conv, r1_note="", r3_note="")
    for col, key in (("r1", "reserved_discount_1y"), ("r3", "reserved_discount_3y")):
        for idx in o.index[o[col].isna() & o["od"].notna()]:
            provider = str(o.at[idx, "provider"])
            row = c.cat.default_row(key, variant=provider)
            if row is not None:
                o.at[idx, col] = o.at[idx, "od"] * (1 - row["value"])
                o.at[idx, f"{col}_note"] = (f"on-demand × (1 − {row['value']:.4f}) — {key} for "
                                            f"{provider} in tco_defaults.csv ({row['source']})")
    return o


def known_providers(catalog: Catalog) -> list[str]:
    """Every provider a scenario may name: those of the catalog's cloud_offers.csv and of the bundled snapshot
    (a provider missing from a user's own table is known, and has no offer there; a typo is unknown)."""
    from gpucost.catalog import bundled_data_dir

    bundled = Catalog(overrides={n: bundled_data_dir() / f"{n}.csv" for n in ("cloud_offers", "gpus", "fx")})
    return sorted(set(catalog.offers["provider"]) | set(bundled.offers["provider"]))


def _check_providers(c: _Ctx, providers) -> None:
    known = known_providers(c.cat)
    lower = {k.lower() for k in known}
    for p in providers:
        if str(p).strip().lower() not in lower:
            from gpucost.errors import closest

            hint = "" if closest(str(p), known) else "known: " + ", ".join(known)
            raise GpucostError(f"{c.label}: key 'cloud.providers': {UnknownNameError('provider', str(p), known, hint=hint)}")


def _best_offer(o, col: str) -> tuple[Offer | None, str]:
    rows = o.dropna(subset=[col])
    if rows.empty:
        return None, ""
    r = rows.sort_values(col).iloc[0]
    note = r.get(f"{col}_note", "") if col in ("r1", "r3") else ""
    label = f"{r['provider']} {r['InstanceType']}" + (f" ({r['Region']})" if r["Region"] else "")
    return Offer(float(r[col]), label, r["source"] + (f"; {note}" if note else ""), str(r["as_of"])), r["currency"]


def _cloud(c: _Ctx, owned: Gpu) -> tuple[CloudInputs, Gpu, dict[str, Offer]]:
    g = c.gpu("cloud.gpu", str(c.v["cloud.gpu"] or owned.id))
    speed = c.given("cloud.relative_speed", "×")
    if speed is None:
        speed, why = relative_speed(c.cat, g.id, owned.id)
        if speed != speed:
            raise GpucostError(f"{c.label}: key 'cloud.relative_speed' is required ({why})")
        c.note("cloud.relative_speed", speed, "×", why)
    table = _offer_table(c, g.id)
    offers: dict[str, Offer] = {}
    for opt, col, key in CLOUD_PRICES:
        if c.v[key] is not None:
            offers[opt] = Offer(c.money(key), "your price", c.scen_src(key))
        else:
            best, cur = _best_offer(table, col)
            if best is None:
                c.unavailable[opt] = ("unavail_no_cloud", {"what": opt, "gpu": g.name, "field": key})
                continue
            offers[opt] = best
            c.exposed[key] = cur != c.cur
        c.note(key, offers[opt].price, f"{c.cur}/GPU-hour", offers[opt].source, offers[opt].as_of, offers[opt].label)

    def price(opt: str) -> float:
        return offers[opt].price if opt in offers else NAN

    return CloudInputs(relative_speed=float(speed), on_demand_per_gpu_hour=price("on-demand"),
                       spot_per_gpu_hour=price("spot"), reserved_1y_per_gpu_hour=price("reserved-1y"),
                       reserved_3y_per_gpu_hour=price("reserved-3y")), g, offers


def _spot(c: _Ctx) -> tuple[SpotInputs, tuple[float, float]]:
    """Spot inputs and the interruption rate's (low, high) range (NaN when there is no bucket)."""
    lam, rng = NAN, (NAN, NAN)
    if c.v["spot.interruptions_per_month"] is not None:
        p = float(c.v["spot.interruptions_per_month"])  # type: ignore[arg-type]
        lam = interruption_rate_per_hour(p)
        c.note("spot.interruptions_per_month", p, "per month", c.scen_src("spot.interruptions_per_month"))
    elif c.v["spot.interruption_bucket"] is not None:
        b = spot_bucket(c.cat, str(c.v["spot.interruption_bucket"]))
        lam, rng = b.rate_per_hour, b.rate_range_per_hour
        c.note("spot.interruption_bucket", b.per_month, "chance per month", b.source, b.as_of,
               f"bucket {b.bucket}: " + b.notes)
    if "spot" not in c.unavailable:
        missing = [k for k in ("spot.checkpoint_minutes", "spot.restart_minutes") if c.v[k] is None]
        if lam != lam:
            missing.insert(0, "spot.interruption_bucket")
        if missing:
            c.unavailable["spot"] = ("unavail_spot_inputs", {"field": ", ".join(missing)})
    minutes = {k: float(c.v[k] or 0.0) / 60 for k in ("spot.checkpoint_minutes", "spot.restart_minutes")}  # type: ignore[arg-type]
    return SpotInputs(interruptions_per_hour=lam, checkpoint_hours=minutes["spot.checkpoint_minutes"],
                      restart_hours=minutes["spot.restart_minutes"], gpus_per_job=float(c.v["spot.gpus_per_job"]),  # type: ignore[arg-type]
                      job_gpu_hours=float(c.v["spot.job_gpu_hours"] or NAN),  # type: ignore[arg-type]
                      deadline_hours=float(c.v["spot.deadline_hours"] or NAN)), rng  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# Demand and jobs
# --------------------------------------------------------------------------------------------------

def regions(catalog: Catalog) -> list[str]:
    """The regions tco_defaults.csv has an electricity price for: what a scenario's ``region`` names."""
    t = catalog.table("tco_defaults")
    return sorted({str(x) for x in t.loc[t["key"] == "electricity_per_kwh", "region"] if str(x)})


def check_region(catalog: Catalog, region: str) -> str:
    """``region`` (upper-cased) when tco_defaults.csv prices electricity there — exactly, by its country
    (US-FL → US) or with a row for every region, as :meth:`Catalog.default_row` looks it up;
    UnknownNameError with the closest regions otherwise."""
    if not str(region).strip() or catalog.default_row("electricity_per_kwh", region=str(region)) is None:
        known = regions(catalog)
        raise UnknownNameError("region", str(region), known, hint="tco_defaults.csv has electricity prices for "
                               + ", ".join(known))
    return str(region).strip().upper()


def _base_utilization(c: _Ctx, count: float) -> float:
    cap = count * HOURS_PER_MONTH
    if c.v["demand.utilization"] is not None:
        return float(c.v["demand.utilization"])  # type: ignore[arg-type]
    if c.v["demand.gpu_hours_per_month"] is not None:
        return float(c.v["demand.gpu_hours_per_month"]) / cap  # type: ignore[arg-type]
    if c.v["demand.gpu_hours_per_year"] is not None:
        return float(c.v["demand.gpu_hours_per_year"]) / MONTHS_PER_YEAR / cap  # type: ignore[arg-type]
    return 0.0


def _training_hours(c: _Ctx, j: Job, g: Gpu) -> float:
    from gpucost import speed
    from gpucost.models import resolve_model

    if j.gpu_hours is not None:
        c.note(f"job {j.name}: GPU-hours per run", j.gpu_hours, "GPU-h", c.scen_src("demand.jobs"), "",
               "given directly in the scenario")
        return j.gpu_hours
    try:
        spec = resolve_model(j.model, catalog=c.cat, fetch=False)
        h = float(speed.training_time(spec, g, mode=j.mode, tokens=float(j.tokens or 0), catalog=c.cat).hours)
    except GpucostError as exc:
        raise GpucostError(f"{c.label}: job '{j.name}': {exc}") from None
    c.note(f"job {j.name}: GPU-hours per run", h, "GPU-h",
           "gpucost.speed.training_time (6N/4N FLOP per token over dense peak × MFU)", "",
           f"{j.model}, {j.mode}, {j.tokens:,.0f} tokens on one {g.id}")
    return h


def _serving_tps(c: _Ctx, j: Job, g: Gpu) -> float | None:
    from gpucost import speed
    from gpucost.models import resolve_model
    from gpucost.quant import get_format

    if j.tokens_per_second_per_gpu is not None:
        return j.tokens_per_second_per_gpu
    if j.benchmark is not None:
        b = c.cat.table("benchmarks")
        hit = b[b["id"] == j.benchmark]
        if hit.empty:
            raise UnknownNameError("benchmark", j.benchmark, b["id"])
        r = hit.iloc[0]
        if r["category"] != "decode_speed" or r["unit"] != "tokens/s":
            raise GpucostError(f"{c.label}: job '{j.name}': benchmark {j.benchmark} is not a decode speed in tokens/s")
        c.note(f"job {j.name}: tokens/s", float(r["measured"]), "tokens/s", r["source"], r["as_of"],
               f"benchmarks.csv {j.benchmark}: {r['model_id']} {r['quant']} on {r['gpu_id']}, batch {r['batch']:g}")
        if r["gpu_id"] != g.id:
            c.warnings.append(Message("tw_benchmark_gpu", job=j.name, benchmark=j.benchmark, measured=r["gpu_id"],
                                      owned=g.id))
        return float(r["measured"])
    if j.gpu_hours is not None:
        return None
    try:
        spec = resolve_model(j.model, catalog=c.cat, fetch=False)
        tps = float(speed.speed(spec, get_format(j.quant, c.cat), g, batch=int(j.batch), context=int(j.context),
                                engine=j.engine, catalog=c.cat).decode_tokens_per_s)
    except GpucostError as exc:
        raise GpucostError(f"{c.label}: job '{j.name}': {exc}") from None
    c.note(f"job {j.name}: tokens/s", tps, "tokens/s", "gpucost.speed.speed (decode roofline with calibrated "
           "engine efficiency)", "", f"{j.model} {j.quant} on one {g.id}, {j.engine}, batch {j.batch}, "
           f"context {j.context}")
    return tps


#: the most GPU-hours one job may take a month: every card gpucost sizes (MAX_GPUS) busy all month
MAX_JOB_HOURS_PER_MONTH = MAX_GPUS * HOURS_PER_MONTH


def _jobs(c: _Ctx, g: Gpu) -> tuple[JobLoad, ...]:
    out = []
    for j in c.sc.jobs:
        if j.kind == "training":
            unit = _training_hours(c, j, g)
            hours = unit * j.runs_per_month
            how = f"{j.runs_per_month:g} run(s) of {unit:,.4g} GPU-hours"
        else:
            tps = _serving_tps(c, j, g)
            millions = (j.tokens_per_month or 0.0) / TOKENS_PER_MILLION
            if tps:
                unit = TOKENS_PER_MILLION / (tps * SECONDS_PER_HOUR)
                hours = millions * unit
                src = f"benchmarks.csv {j.benchmark}" if j.benchmark else \
                    "tokens_per_second_per_gpu" if j.tokens_per_second_per_gpu is not None else "the speed estimate"
                how = f"{j.tokens_per_month or 0:,.4g} tokens at {tps:,.4g} tokens/s ({src})"
            else:
                hours = float(j.gpu_hours or 0.0)
                unit = hours / millions if millions else NAN
                how = "gpu_hours"
        if not hours <= MAX_JOB_HOURS_PER_MONTH:  # NaN included
            raise GpucostError(f"{c.label}: job '{j.name}' needs {hours:,.4g} GPU-hours a month ({how}); at most "
                               f"{MAX_JOB_HOURS_PER_MONTH:,.0f} ({MAX_GPUS:,} cards busy all month)")
        out.append(JobLoad(j.name, j.kind, float(hours), float(unit), int(j.first_month)))
    return tuple(out)


def _swings(c: _Ctx, owned: OwnedInputs, demand_u: float, lam: float, lam_range) -> dict[str, tuple[float, float]]:
    sw = {k: float(c.v[f"uncertainty.{k}"]) for k in DEFAULT_SWINGS}  # type: ignore[arg-type]
    lo, hi = lam_range
    rho, pue = owned.resale_retention_per_year, owned.pue
    return {
        "hardware_price": (1 - sw["hardware_price"], 1 + sw["hardware_price"]),
        "cloud_price": (1 - sw["cloud_price"], 1 + sw["cloud_price"]),
        "utilization": (max(0.0, demand_u - sw["utilization"]),
                        min(float(owned.max_utilization), demand_u + sw["utilization"])),
        "electricity": (1 - sw["electricity"], 1 + sw["electricity"]),
        "resale": (max(1e-3, rho - sw["resale"]), min(1.0, rho + sw["resale"])),
        "interruption": ((lo / lam if lo == lo and lam > 0 else 1 - sw["interruption"]),
                         (hi / lam if hi == hi and lam > 0 else 1 + sw["interruption"])),
        "fx": (1 - sw["fx"], 1 + sw["fx"]),
        "pue": (max(1.0, pue * (1 - sw["pue"])) / pue, (pue * (1 + sw["pue"])) / pue),
    }


def _fx(c: _Ctx) -> FxInputs:
    def x(key: str) -> float:
        return 1.0 if c.exposed.get(key) else 0.0

    return FxInputs(hardware_factor=1.0, cloud_factor=1.0, new_exposed=x("owned.price_new"),
                    used_exposed=x("owned.price_used"), host_exposed=x("owned.host_cost_per_gpu"),
                    on_demand_exposed=x("cloud.on_demand_price"), spot_exposed=x("cloud.spot_price"),
                    reserved_1y_exposed=x("cloud.reserved_1y_price"), reserved_3y_exposed=x("cloud.reserved_3y_price"))


def _horizon(c: _Ctx, months: int | None) -> int:
    from gpucost.specs import SPECS

    return int(SPECS["horizon_months"].check(months if months is not None else c.v["horizon_months"], "months"))


def resolve(scenario: Scenario, catalog: Catalog | None = None, *, currency: str | None = None,
            months: int | None = None) -> Inputs:
    """Fill every input of ``scenario`` from the catalog and tco_defaults.csv; money in ``currency``
    (default: the scenario's). ``months`` replaces the horizon."""
    cat = catalog or Catalog()
    scur = str(scenario.values["currency"]).upper()
    for cur, where in ((scur, f"{scenario.label}: key 'currency'"), ((currency or scur).upper(), "currency")):
        try:
            cat.fx_rate(cur)
        except UnknownNameError as exc:
            raise GpucostError(f"{where}: {exc}") from None
    c = _Ctx(cat, scenario, (currency or scur).upper())
    horizon = _horizon(c, months)
    owned, og = _owned(c)
    lease = _lease(c, horizon)
    cloud, cg, offers = _cloud(c, og)
    spot, lam_range = _spot(c)
    base_u = _base_utilization(c, owned.count)
    jobs = _jobs(c, og)
    demand = DemandInputs(base_utilization=base_u, growth_per_year=float(c.v["demand.growth_per_year"]),  # type: ignore[arg-type]
                          burst_gpu_hours=float(c.v["demand.bursts.gpu_hours"]),  # type: ignore[arg-type]
                          burst_every_months=float(c.v["demand.bursts.every_months"]),  # type: ignore[arg-type]
                          burst_first_month=float(c.v["demand.bursts.first_month"]))  # type: ignore[arg-type]
    hybrid = HybridInputs(headroom_fraction=float(c.v["hybrid.headroom"]),  # type: ignore[arg-type]
                          configured_base_gpus=float(c.v["hybrid.configured_base"]  # type: ignore[arg-type]
                                                     if c.v["hybrid.configured_base"] is not None else owned.count))
    params = Params(owned, lease, cloud, spot, demand, hybrid, _fx(c))
    return Inputs(
        scenario=scenario, currency=c.cur, horizon_months=horizon, params=params, owned_gpu=og.id,
        owned_name=og.name, cloud_gpu=cg.id, cloud_name=cg.name, offers=MappingProxyType(offers),
        unavailable=MappingProxyType(c.unavailable), provenance=tuple(c.prov), warnings=tuple(c.warnings),
        swings=MappingProxyType(_swings(c, owned, base_u, spot.interruptions_per_hour, lam_range)), jobs=jobs)


__all__ = ["resolve", "relative_speed", "regions", "check_region"]
