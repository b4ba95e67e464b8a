"""One question, one number: each question a user asks, asked through every surface that answers it — the
CLI's JSON (a real subprocess, as a user runs it), the page objects run headless, the claims engine and the
engine itself — and the answers compared. A question answered in two places with two numbers fails here.

The questions are the ones users bring (see the issue "One question, one number"): how many GPUs a ZeRO-3
run needs, what a card costs in a market, what an owned or a rented GPU-hour costs, what a million tokens
costs on a bought card, how fast a model decodes, which TCO option is cheapest, what the defaults are.
"""

from __future__ import annotations

import math
import re
from functools import cache

import pytest

from gpucost import claims, economics, memory, monitor, pricing, tco
from gpucost.catalog import Catalog
from gpucost.models import catalog_spec
from gpucost.quant import get_format, weights_file_gib
from gpucost.records import gpu
from gpucost.specs import DEFAULTS
from gpucost.speed import speed, training_time

from .conftest import cli_json, run_cli

pytestmark = pytest.mark.timeout(600)
REL = 1e-9


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return Catalog()


@cache
def cli(*args: str):
    return cli_json(*args)


@cache
def fit_page(**kw):
    from gpucost.ui.quant_fit import QuantFitPage

    rec = QuantFitPage(**kw).results_record()
    assert rec["error"] is None, rec["error"]
    return rec


@cache
def train_page(**kw):
    from gpucost.ui.sharing_scaling import SharingScalingPage

    page = SharingScalingPage(tab=1, **kw)
    assert page.train_result is not None, page.results_record()["errors"]
    return page.train_result


@cache
def tco_page(scenario: str, lang: str = "en"):
    from gpucost.ui.scenario_tco import ScenarioTcoPage

    rec = ScenarioTcoPage(scenario=scenario, lang=lang, mc_draws=0).results_record()
    assert rec["error"] is None, rec["error"]
    return rec


@cache
def card_page(**kw):
    from gpucost.ui.card_choice import CardChoicePage

    rec = CardChoicePage(**kw).results_record()
    assert rec["error"] is None, rec["error"]
    return rec


def same(*values):
    """All answers are one number (or all None)."""
    first = values[0]
    for v in values[1:]:
        if first is None or v is None:
            assert first is v is None, values
        else:
            assert v == pytest.approx(first, rel=REL), values
    return first


# --------------------------------------------------------------------------------------------------
# How many GPUs
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model, card, zero, offload, strategy", [
    ("llama-3-70b", "h100-sxm", 3, "none", "zero3"),
    ("llama-3-70b", "h100-sxm", 3, "cpu", "zero3+cpu"),
    ("llama-3.1-8b", "a100-80gb-sxm", 2, "none", "zero2"),
    ("qwen2.5-32b", "rtx-4090", 3, "none", "zero3"),
])
def test_gpus_for_a_full_fine_tune(cat, model, card, zero, offload, strategy):
    """Page 02 (its card and its fit matrix), page 05, `gpucost fit`, `gpucost plan train` and the engine."""
    engine, _ = memory.min_gpus(catalog_spec(model, cat), get_format("bf16", cat),
                                memory.Setup(mode="full", zero=zero, offload=offload), gpu(cat, card).vram_gib)
    fit = cli("fit", "--model", model, "--quant", "bf16", "--mode", "full", "--zero", str(zero), "--offload",
              offload, "--gpu", card)
    page = fit_page(model=model, quant="bf16", mode="full", zero=zero, offload=offload, gpu=card)
    plan_cli = cli("plan", "train", "--model", model, "--gpu", card, "--mode", "full", "--strategy", strategy)
    plan_page = {o.strategy: o.min_gpus for o in train_page(model=model, train_gpu=card, train_mode="full").options}
    same(engine, fit["fits"][0]["min_gpus"], page["card_min_gpus"], plan_cli["min_gpus"], plan_page[strategy])
    if offload == "none":  # the fit matrix is computed for the page's offload setting
        assert page["matrix"][card]["bf16"] == engine


def test_an_fsdp_full_fine_tune_is_the_same_on_the_page_and_the_cli(cat):
    """Sharded by PyTorch FSDP instead of DeepSpeed ZeRO-3, page 02 and `gpucost fit` give the same per-GPU memory
    and the same number of cards; FSDP's AdamW temporary makes each card hold more than DeepSpeed's."""
    args = ("fit", "--model", "llama-3-70b", "--quant", "bf16", "--mode", "full", "--zero", "3", "--gpus", "8",
            "--gpu", "h100-sxm")
    fit = cli(*args, "--sharder", "fsdp")
    page = fit_page(model="llama-3-70b", quant="bf16", mode="full", zero=3, gpus=8, sharder="fsdp", gpu="h100-sxm")
    same(fit["per_gpu_gib"]["total"], page["per_gpu_gib"]["total"])
    same(fit["fits"][0]["min_gpus"], page["card_min_gpus"])
    assert fit["sharder"] == "fsdp"
    assert fit["per_gpu_gib"]["total"] > cli(*args)["per_gpu_gib"]["total"]


def test_zero3_claim_counts_are_the_planners(cat):
    """Page 06's ZeRO claim and the planner answer the same question for the same model the same way."""
    from gpucost.claims.quantization import dense_model
    from gpucost.plan import fit_strategies

    r = claims.evaluate("zero3_100b", cat)
    spec = dense_model(cat, 100.0, 80)
    fits = fit_strategies(spec, get_format("bf16", cat), gpu(cat, "a100-80gb-sxm"), memory.Setup(mode="full"),
                          max_gpus=4096)
    same(r.computed["min_gpus_zero3"], fits["zero3"][1])
    same(r.computed["min_gpus_zero3_offload"], fits["zero3+cpu"][1])


@pytest.mark.parametrize("model, quant, card", [
    ("llama-3.1-70b", "q4_k_m", "rtx-4090"),
    ("llama-3.1-70b", "q4_k_m", "a100-80gb-sxm"),
    ("llama-3.1-70b", "awq-4bit-g128", "rtx-4090"),
    ("qwen2.5-72b", "bf16", "h100-sxm"),
])
def test_gpus_to_serve_a_model(cat, model, quant, card):
    fmt = get_format(quant, cat)
    s = memory.Setup(engine="llama.cpp" if fmt.is_gguf else DEFAULTS.engine)
    engine, _ = memory.min_gpus(catalog_spec(model, cat), fmt, s, gpu(cat, card).vram_gib)
    fit = cli("fit", "--model", model, "--quant", quant, "--gpu", card)
    page = fit_page(model=model, quant=quant, gpu=card)
    same(engine, fit["fits"][0]["min_gpus"], page["card_min_gpus"], page["matrix"][card][quant])


# --------------------------------------------------------------------------------------------------
# Memory, file size, longest context
# --------------------------------------------------------------------------------------------------

def test_memory_file_and_longest_context_of_one_setup(cat):
    spec, fmt = catalog_spec("llama-3.1-8b", cat), get_format("q4_k_m", cat)
    fit = cli("fit", "--model", "llama-3.1-8b", "--quant", "q4_k_m", "--gpu", "rtx-4090")
    page = fit_page(model="llama-3.1-8b", quant="q4_k_m", gpu="rtx-4090")
    s = memory.Setup(engine="llama.cpp")
    same(weights_file_gib(spec, fmt), fit["weights_file_gib"], page["weights_file_gib"])
    same(memory.estimate(spec, fmt, s).total_gib, fit["per_gpu_gib"]["total"], page["per_gpu_gib"]["total"])
    same(memory.max_context(spec, fmt, s, 24.0), fit["max_context"], page["max_context"])


def test_experts_in_host_ram_and_images_on_page_02_and_the_cli(cat):
    """Page 02's two model-specific inputs ask the engines the CLI asks: GPT-OSS 120B in MXFP4 on an RTX 4090
    with the experts of all 36 layers in host RAM on a 12-channel DDR5-6000 server (memory on the card and
    in RAM, decode speed) and Qwen2.5-VL 7B with four images (KV cache); a text-only dense model shows
    neither input."""
    from gpucost.ui.quant_fit import QuantFitPage

    moe = fit_page(model="gpt-oss-120b", quant="mxfp4", engine="llama.cpp", gpu="rtx-4090", cpu_moe=36,
                   host_bw_gbps=576)
    fit = cli("fit", "--model", "gpt-oss-120b", "--quant", "mxfp4", "--engine", "llama.cpp", "--gpu", "rtx-4090",
              "--cpu-moe", "36")
    sp = cli("speed", "--model", "gpt-oss-120b", "--quant", "mxfp4", "--engine", "llama.cpp", "--gpu", "rtx-4090",
             "--cpu-moe", "36", "--host-bw", "576")
    assert moe["cpu_moe"] == 36
    same(fit["per_gpu_gib"]["total"], moe["per_gpu_gib"]["total"])
    same(fit["cpu_gib"], moe["cpu_gib"])
    row = next(r for r in moe["speed"] if r["gpu"] == "rtx-4090" and r["gpus"] == 1)
    same(sp["decode_tokens_per_s"], row["tokens_per_s"])
    vl = fit_page(model="qwen2.5-vl-7b", quant="bf16", engine="vllm", images=4)
    fit_vl = cli("fit", "--model", "qwen2.5-vl-7b", "--quant", "bf16", "--engine", "vllm", "--images", "4")
    assert vl["images"] == 4
    same(fit_vl["per_gpu_gib"]["kv_cache"], vl["per_gpu_gib"]["kv_cache"])
    page = QuantFitPage(model="llama-3.1-8b", images=4, cpu_moe=8)
    assert [page.fields[k].box.layout.display for k in ("images", "cpu_moe", "host_bw_gbps")] == ["none"] * 3
    assert page.results_record()["images"] == 0 and page.results_record()["cpu_moe"] == 0


def test_the_int8_claim_uses_the_fit_engines_memory(cat):
    r = claims.evaluate("int8_memory", cat)
    fit = cli("fit", "--model", "llama-3-8b", "--quant", "bnb-int8", "--engine", "transformers")
    same(r.computed["total_quant_gib"], fit["per_gpu_gib"]["total"])


def test_the_70b_claim_uses_the_fit_engines_memory(cat):
    r = claims.evaluate("vram_under_16gb_70b", cat)
    fmt = r.computed["smallest_format"]
    engine = "llama.cpp" if get_format(fmt, cat).is_gguf else "transformers"
    fit = cli("fit", "--model", "llama-3-70b", "--quant", fmt, "--engine", engine)
    same(r.computed["smallest_total_gib"], fit["per_gpu_gib"]["total"])


# --------------------------------------------------------------------------------------------------
# What a card costs
# --------------------------------------------------------------------------------------------------

def _rank_price(rec: dict, gid: str):
    return next((c["price"] for c in rec["cards"] if c["id"] == gid), None)


def test_rtx_4090_in_cny_is_one_price_everywhere(cat):
    """Page 01, `gpucost gpus`, page 03 (a scenario owning a 4090, shown in CNY) and page 06."""
    price, _src, _d = pricing.card_price(cat, "rtx-4090", "CNY", "new")
    gpus = {g["id"]: g for g in cli("gpus", "--currency", "CNY")}
    page01 = card_page(currency="CNY", min_vram_gib=24, sort_by="price")
    page03 = tco.resolve(tco.load_scenario("developer"), cat, currency="CNY").params.owned.price_new
    claim = claims.evaluate("rtx4090_price_vs_a100", cat, currency="CNY").computed["gpu_price_money"]
    same(price, gpus["rtx-4090"]["price_new"], _rank_price(page01, "rtx-4090"), page03, claim)


def test_rtx_4090_bought_in_cny_in_the_global_market_is_one_price_everywhere(cat):
    """`--currency CNY --market global`: buying follows the market like renting does. `gpucost gpus`, page 01
    and page 03 set to that market, `gpucost tco` and the claims engine give one buy-new price (and TCO), the
    global USD price converted at one rate — not the China street price."""
    from gpucost.offers import Market
    from gpucost.ui.card_choice import CardChoicePage
    from gpucost.ui.scenario_tco import ScenarioTcoPage

    world = cat.with_market(Market("global"))
    price = pricing.card_price(world, "rtx-4090", "CNY", "new")[0]
    flags = ("--currency", "CNY", "--market", "global")
    gpus = {g["id"]: g for g in cli("gpus", *flags)}
    page01 = CardChoicePage(currency="CNY", min_vram_gib=24, sort_by="price")
    page01.market_dd.value = "global"
    engine = tco.resolve(tco.load_scenario("developer"), world, currency="CNY")
    claim = claims.evaluate("rtx4090_price_vs_a100", world, currency="CNY").computed["gpu_price_money"]
    same(price, gpus["rtx-4090"]["price_new"], _rank_price(page01.results_record(), "rtx-4090"),
         engine.params.owned.price_new, claim, pricing.card_price(cat, "rtx-4090", "USD", "new")[0] * cat.fx_rate("CNY"))
    assert price != pytest.approx(pricing.card_price(cat, "rtx-4090", "CNY", "new")[0])   # China's is another
    out = cli("tco", "--scenario", "developer", *flags)
    page03 = ScenarioTcoPage(scenario="developer", currency="CNY", mc_draws=0)
    page03.market_dd.value = "global"
    rec = page03.results_record()
    assert rec["error"] is None and rec["market"] == "global" and out["currency"] == "CNY"
    for oid in ("buy-new", "lease", "buy-used", "on-demand"):
        same(next(o["total_cost"] for o in out["options"] if o["id"] == oid),
             next(o["total_cost"] for o in rec["options"] if o["id"] == oid))
    assert "Street prices (buy new or used, lease to own) come from the same market" in page03.asof.value


def test_a100_new_and_used_prices_are_one_price_everywhere(cat):
    gpus = {g["id"]: g for g in cli("gpus", "--currency", "USD")}
    claim = claims.evaluate("used_a100_discount", cat, currency="USD").computed
    page01 = card_page(currency="USD", min_vram_gib=80, sort_by="price")
    same(pricing.card_price(cat, "a100-80gb-sxm", "USD", "new")[0], gpus["a100-80gb-sxm"]["price_new"],
         claim["price_new_median_money"], _rank_price(page01, "a100-80gb-sxm"))
    same(pricing.card_price(cat, "a100-80gb-sxm", "USD", "used")[0], gpus["a100-80gb-sxm"]["price_used"],
         claim["price_used_median_money"])


def test_a_rented_a100_hour_is_one_price_everywhere(cat):
    """`gpucost gpus`, page 01 on the cloud basis, `gpucost plan train`, the probe page's value of an hour
    and the economics module."""
    hc = economics.card_hourly_cost(cat, "a100-80gb-sxm", "USD", "cloud")
    gpus = {g["id"]: g for g in cli("gpus")}
    page01 = card_page(price_basis="cloud", min_vram_gib=80, sort_by="price")
    plan_cli = cli("plan", "train", "--model", "llama-3.1-8b", "--gpu", "a100-80gb-sxm")
    same(hc.per_hour, gpus["a100-80gb-sxm"]["cloud_hourly"], _rank_price(page01, "a100-80gb-sxm"),
         plan_cli["price_per_gpu_hour"], monitor.card_value(cat, "a100-80gb-sxm", "USD").hourly_value)


def test_a_rented_h100_hour_in_a_chosen_market_is_one_price_everywhere(cat):
    """Renting in Europe without marketplaces: `gpucost gpus`, `prices show`, `plan train`, page 01 set to
    that market and the economics module give one price — and it is not the global one (a US marketplace
    listing), so the market reached every surface."""
    from gpucost.offers import Market
    from gpucost.ui.card_choice import CardChoicePage

    eu = cat.with_market(Market("eu", ("hyperscaler", "neocloud")))
    hc = economics.card_hourly_cost(eu, "h100-sxm", "USD", "cloud")
    flags = ("--market", "eu", "--no-marketplaces")
    gpus = {g["id"]: g for g in cli("gpus", *flags)}
    shown = cli("prices", "show", "--gpu", "h100-sxm", *flags)
    plan_cli = cli("plan", "train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", *flags)
    page = CardChoicePage(price_basis="cloud", min_vram_gib=80, sort_by="price")
    page.market_dd.value, page.market_kinds["marketplace"].value = "eu", False
    same(hc.per_hour, gpus["h100-sxm"]["cloud_hourly"], shown["cheapest"], plan_cli["price_per_gpu_hour"],
         _rank_price(page.results_record(), "h100-sxm"))
    assert gpus["h100-sxm"]["cloud_market"] in ("eu", "global") and shown["market"] == "eu"
    assert hc.per_hour != pytest.approx(economics.card_hourly_cost(cat, "h100-sxm", "USD", "cloud").per_hour)


def _card_without_cloud_offer(cat) -> str:
    ps = pricing.price_index(cat, "USD")
    ok = ps[ps["cloud_hourly"].isna() & ps["price_new"].notna()]
    return str(ok.index[0])


def test_an_owned_idle_hour_is_one_value_everywhere(cat):
    """The probe page and CLI (monitor.card_value), the Prometheus rules' annotation and the idle claim:
    the value an owned card loses each hour it is owned (economics at utilization 1)."""
    gid = _card_without_cloud_offer(cat)
    want = economics.card_hourly_cost(cat, gid, "USD", "new", economics.calendar_ownership()).capital_per_hour
    v = monitor.card_value(cat, gid, "USD")
    assert v.hourly_basis == "amortized-new"
    claim = claims.evaluate("idle_reclaim", cat, gpu=gid, currency="USD").computed["hourly_value_money_per_hour"]
    same(want, v.hourly_value, claim)
    rules = run_cli("rules", "--gpu", gid).stdout
    shown = float(re.search(r"is worth ([0-9.,]+) USD per hour", rules).group(1).replace(",", ""))
    assert shown == pytest.approx(want, abs=0.0005)  # the annotation rounds to 3 decimals


def test_a_bought_rtx_3080_hour(cat):
    """The hourly cost of an owned RTX 3080 busy half the time: the same number for every surface that
    prices a served token or a training run on it (the economics module)."""
    h = economics.card_hourly_cost(cat, "rtx-3080", "USD", "new")
    rho, _ = economics.resale_retention(cat, "rtx-3080")
    price = pricing.card_price(cat, "rtx-3080", "USD", "new")[0]
    kwh, _ = economics.default_electricity_per_kwh(cat, "USD")
    by_hand = price * (1 - rho**3) / (3 * 8760 * 0.5) + 0.320 * kwh  # 320 W TDP
    same(by_hand, h.per_hour)


# --------------------------------------------------------------------------------------------------
# Speed and the cost of a token or a run
# --------------------------------------------------------------------------------------------------

def test_decode_speed_and_cost_per_million_tokens_on_a_bought_4090(cat):
    spec, fmt, g = catalog_spec("llama-3.1-8b", cat), get_format("q4_k_m", cat), gpu(cat, "rtx-4090")
    sp = speed(spec, fmt, g, engine="llama.cpp", catalog=cat)
    costs = economics.token_costs(cat, "rtx-4090", sp.decode_tokens_per_s, 1, "USD")
    cli_sp = cli("speed", "--model", "llama-3.1-8b", "--quant", "q4_k_m", "--gpu", "rtx-4090")
    row = next(r for r in fit_page(model="llama-3.1-8b", quant="q4_k_m", gpu="rtx-4090")["speed"]
               if r["gpu"] == "rtx-4090")
    same(sp.decode_tokens_per_s, cli_sp["decode_tokens_per_s"], row["tokens_per_s"])
    for basis in ("new", "used", "cloud"):
        same(costs[basis], cli_sp["cost_per_1m_tokens"][basis], row[basis])


def test_training_speed_of_a_lora_run_on_a_4090(cat):
    """speed.training_time, `gpucost plan train`, page 05, the 4090-vs-A100 claim and the startup scenario's
    LoRA job (page 03) all train Llama 3 8B with LoRA on one RTX 4090 at the same tokens/s. (At 4,096 tokens the run
    fits one 24 GiB card only with the states offloaded, once the caching allocator's reserve is counted: the plan
    and page 05 are asked for that one-card layout, whose speed the model does not slow.)"""
    spec, g = catalog_spec("llama-3-8b", cat), gpu(cat, "rtx-4090")
    tps = training_time(spec, g, mode="lora", catalog=cat).tokens_per_s
    plan_cli = cli("plan", "train", "--model", "llama-3-8b", "--gpu", "rtx-4090", "--mode", "lora",
                   "--strategy", "zero3+cpu")
    assert plan_cli["min_gpus"] == 1
    page05 = {o.strategy: o.tokens_per_s for o in train_page(model="llama-3-8b", train_gpu="rtx-4090",
                                                               train_mode="lora").options}
    claim = claims.evaluate("rtx4090_training_vs_a100", cat).computed["gpu_tokens_per_s"]
    inp = tco.resolve(tco.load_scenario("startup"), cat)
    job = next(j for j in inp.jobs if j.kind == "training")
    sc_tokens = next(j.tokens for j in inp.scenario.jobs if j.name == job.name)
    same(tps, plan_cli["tokens_per_s"], page05["zero3+cpu"], claim, sc_tokens / (job.hours_per_unit * 3600))


def test_cost_of_a_training_run_on_rented_h100s(cat):
    """`gpucost plan train` and page 02 in training mode price a 1B-token full fine-tune the same way."""
    plan_cli = cli("plan", "train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--strategy", "zero3")
    row = next(r for r in fit_page(model="llama-3.1-8b", quant="bf16", mode="full", zero=3, gpu="h100-sxm",
                                   train_tokens_m=1000.0)["speed"] if r["gpu"] == "h100-sxm")
    same(plan_cli["min_gpus"], row["gpus"])
    same(plan_cli["time_to_train_hours"], row["hours"])
    same(plan_cli["cost"], row["cloud"])


def test_relative_speed_of_two_cards(cat):
    a, b = gpu(cat, "a100-80gb-sxm"), gpu(cat, "rtx-4090")
    inp = tco.resolve(tco.load_scenario("startup"), cat)  # owns 4090s, rents A100s
    claim = claims.evaluate("rtx4090_training_vs_a100", cat).computed
    same(a.training_tflops / b.training_tflops, inp.params.cloud.relative_speed,
         claim["reference_dense_tflops"] / claim["gpu_dense_tflops"])


# --------------------------------------------------------------------------------------------------
# TCO
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("scenario", ["developer", "startup", "midsize", "university-lab"])
def test_every_presets_options_and_cheapest(scenario):
    """`gpucost tco` and page 03 (and the engine): every option's total and the cheapest, in the page's
    currency (the English page shows USD whatever the scenario's own currency)."""
    engine = tco.run(scenario, currency="USD")
    out = cli("tco", "--scenario", scenario, "--currency", "USD")
    page = tco_page(scenario)
    assert page["result_currency"] == "USD"
    assert out["cheapest_id"] == page["cheapest"] == engine.cheapest
    for o in engine.options:
        a = next(x for x in out["options"] if x["id"] == o.id)
        b = next(x for x in page["options"] if x["id"] == o.id)
        same(o.total_cost, a["total_cost"], b["total_cost"])


def test_the_startup_preset_in_chinese_and_cny():
    out = cli("tco", "--scenario", "startup", "--currency", "CNY")
    page = tco_page("startup", "zh")
    assert page["result_currency"] == out["currency"] == "CNY"
    for a in out["options"]:
        same(a["total_cost"], next(x["total_cost"] for x in page["options"] if x["id"] == a["id"]))


def test_the_spot_hazard_of_a_bucket(cat):
    """tco (startup: bucket 10-15 %), the spot claim and the fleet simulator use one hazard."""
    from gpucost import plan
    from gpucost.spot import spot_bucket

    want = spot_bucket(cat, "10-15%").rate_per_hour
    inp = tco.resolve(tco.load_scenario("startup"), cat)
    claim = claims.evaluate("spot_discount", cat, interruption_bucket="10-15%").computed
    sim = plan.plan_scale("sample", "spot", gpu="h100-sxm", catalog=cat, spot_bucket="10-15%", compare=False)
    same(want, inp.params.spot.interruptions_per_hour, claim["interruption_rate_per_hour"],
         sim.result.params["interruption_rate_per_hour"])


def test_the_cheapest_tco_claim_reads_the_engine(cat):
    r = claims.evaluate("hybrid_cuts_60pct", cat, currency="USD")
    engine = tco.run("midsize", currency="USD")
    same(r.computed["hybrid_money"], engine.option("hybrid").total_cost)
    same(r.computed["baseline_money"], engine.option("on-demand").total_cost)


# --------------------------------------------------------------------------------------------------
# Defaults and rankings
# --------------------------------------------------------------------------------------------------

def test_the_cli_and_the_pages_start_from_the_same_defaults():
    fit = cli("fit", "--model", "llama-3.1-8b", "--quant", "q4_k_m")
    page = fit_page()
    assert fit["context"] == page["context"] == DEFAULTS.context
    assert fit["batch"] == page["batch"] == DEFAULTS.batch
    sp = cli("speed", "--model", "llama-3.1-8b", "--quant", "bf16", "--gpu", "rtx-4090")
    assert sp["context"] == DEFAULTS.context and sp["engine"] == DEFAULTS.engine
    full = cli("fit", "--model", "llama-3.1-8b", "--quant", "bf16", "--mode", "full")
    assert full["context"] == DEFAULTS.context  # training too (it was 2048 on the CLI, 4096 on the page)
    assert sp["cost_assumptions"]["amortize_years"] == DEFAULTS.amortization_years
    assert sp["cost_assumptions"]["utilization"] == DEFAULTS.utilization


def test_page_01_and_the_cli_rank_the_same_cards_in_the_same_order():
    for basis, precision in (("new", "bf16"), ("cloud", "fp8")):
        out = cli("gpus", "--rank", "--basis", basis, "--precision", precision)
        page = card_page(price_basis=basis, precision=precision)
        assert [c["id"] for c in out["cards"]] == page["ranked_ids"]
        for a, b in zip(out["cards"][:10], page["cards"], strict=False):
            same(a["tflops_per_1k"], b["tflops_per_1k"])


def test_no_surface_prints_a_non_finite_number():
    for doc in (cli("tco", "--scenario", "startup"), cli("gpus"), cli("claims")):
        text = str(doc)
        assert "nan" not in text.lower().replace("nano", "") and "inf" not in re.sub(r"\binf\w+", "", text)
    assert all(not (isinstance(v, float) and not math.isfinite(v)) for v in DEFAULTS.__dict__.values())
