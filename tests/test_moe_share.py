"""A mixture-of-experts model's routed experts compute at a share of the dense rate (gpucost.speed, fitted by
gpucost.validation.fit.fit_moe_share on the corpus's MoE serving runs, judged on documents left out)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpucost.catalog import Catalog
from gpucost.models import catalog_spec
from gpucost.quant import get_format
from gpucost.records import gpu
from gpucost.serving_step import step_cost
from gpucost.speed import EngineEfficiency, _expert_flops_per_token, speed
from gpucost.validation import moe_ratios
from gpucost.validation.fit import MOE_GRID, fit_moe_share, fitted_table

EFF = EngineEfficiency("hand", 0.8, 0.1, 0.0, 0.5, 0.01, math.nan, (), "", "", "")


@pytest.fixture(scope="module")
def cat():
    return Catalog()


def test_a_token_of_qwen3_30b_a3b_computes_in_8_of_its_128_experts(cat):
    # Qwen3-30B-A3B (config.json): 48 MoE layers, 128 experts of gate, up and down projections 2048 × 768, 8 per
    # token: 2 × 48 × 8 × 3 × 2048 × 768 = 3,623,878,656 FLOP per token in the routed experts. A dense model: none.
    assert _expert_flops_per_token(catalog_spec("qwen3-30b-a3b", cat)) == 3_623_878_656
    assert _expert_flops_per_token(catalog_spec("llama-3.1-8b", cat)) == 0


def test_routed_experts_take_their_share_of_the_dense_rate_in_a_prompt(cat):
    """A 2,048-token prompt of Qwen3-30B-A3B in BF16 on an H100 (989.4 dense TFLOPS, η_c 0.5): with the experts at a
    quarter of the rate their 2,048 × 3,623,878,656 FLOP take 3 × as long again; a dense model is not affected."""
    q, bf16, h100 = catalog_spec("qwen3-30b-a3b", cat), get_format("bf16", cat), gpu(cat, "h100-sxm")
    quarter = EngineEfficiency(**{**EFF.__dict__, "moe_compute_share": 0.25})
    slow = speed(q, bf16, h100, context=2048, engine="vllm", eff=quarter).prefill_tokens_per_s
    fast = speed(q, bf16, h100, context=2048, engine="vllm", eff=EFF).prefill_tokens_per_s
    assert 2048 / slow - 2048 / fast == pytest.approx(2048 * 3_623_878_656 * 3 / (989.4e12 * 0.5), rel=1e-9)
    llama = catalog_spec("llama-3.1-8b", cat)
    assert speed(llama, bf16, h100, context=2048, engine="vllm", eff=quarter).prefill_tokens_per_s == \
        speed(llama, bf16, h100, context=2048, engine="vllm", eff=EFF).prefill_tokens_per_s


def test_a_serving_step_and_speed_take_the_same_share(cat):
    """One home: a compute-bound decode step of 2,048 sequences is the same in the serving step model and speed(),
    and with the experts at a quarter of the rate it takes more than half as long again."""
    q, bf16, h100 = catalog_spec("qwen3-30b-a3b", cat), get_format("bf16", cat), gpu(cat, "h100-sxm")
    quarter = EngineEfficiency(**{**EFF.__dict__, "moe_compute_share": 0.25})
    sp = speed(q, bf16, h100, batch=2048, context=100, engine="vllm", eff=quarter)
    assert step_cost(q, bf16, h100, engine="vllm", eff=quarter).seconds(2048, 100) * 1e3 == \
        pytest.approx(sp.step_ms, rel=1e-12)
    assert sp.step_ms > speed(q, bf16, h100, batch=2048, context=100, engine="vllm", eff=EFF).step_ms * 1.5


def _curve(crossing: float) -> np.ndarray:
    """estimate ÷ measured over MOE_GRID of a run measured as estimated at ``crossing`` (compute-bound: ∝ 1/share)"""
    return crossing / MOE_GRID


def test_the_share_is_the_documents_median_each_document_one_vote():
    # five runs of one document measured at a quarter of the rate, one each of two others at a half and three
    # quarters: the documents' median is a half (the runs' median would be a quarter)
    ratios = [("a", f"a{i}", _curve(0.25)) for i in range(5)] + [("b", "b0", _curve(0.5)), ("c", "c0", _curve(0.75))]
    assert fit_moe_share(ratios).moe_compute_share == 0.5
    # a document left out is not fitted on: without "a", the others (and one more at three quarters) say 0.75
    more = ratios + [("d", "d0", _curve(0.75))]
    fit = fit_moe_share(more, exclude_source="a")
    assert fit.moe_compute_share == 0.75 and fit.sources == ("b", "c", "d") and "a0" not in fit.rows
    # fewer than two documents left: no share (the experts compute at the dense rate)
    assert fit_moe_share(ratios[:5] + [("b", "b0", _curve(0.5))], exclude_source="b") is None
    # a run with no finite estimate at some share is left out
    assert fit_moe_share([("a", "a0", _curve(0.25)), ("b", "b0", np.full(len(MOE_GRID), np.nan)),
                          ("c", "c0", _curve(0.5))]).sources == ("a", "c")


def test_the_share_is_fitted_on_runs_the_experts_products_govern(cat):
    """Which runs fit the share is chosen on the model alone: TensorRT-LLM's Qwen3-30B-A3B on a B200 with 2,048-token
    prompts and 128 output tokens (prefill-bound) is fitted on; SGLang's cookbook run of one client decoding 1,000
    tokens at a time (weights and cache read) is not, nor is a dense model's run."""
    rows = cat.table("benchmarks").set_index("id", drop=False)
    pick = {"sv0182": "prefill-bound MoE", "sv0327": "dense"}
    cook = rows[(rows["source_id"] == "sgl-cookbook-qwen3") & (rows["category"] == "serving_throughput")]
    low = cook[cook["concurrency"].astype(float) == cook["concurrency"].astype(float).min()].iloc[0]
    got = moe_ratios(cat, fitted_table(cat), [rows.loc[i].to_dict() for i in pick] + [low.to_dict()])
    assert [rid for _src, rid, _r in got] == ["sv0182"]
    # TensorRT-LLM's table: 6,251 output tokens/s; at the dense rate gpucost estimates 3.5 × that
    assert got[0][2][-1] > 3.0 and got[0][2][0] < got[0][2][-1] / 3


def test_the_command_line_says_which_share_a_moe_answer_took(cat):
    """`gpucost speed --json` for a MoE model names the share of data/moe_efficiency.csv (read from the file) and
    takes the prompt at it: the same number as speed() with the catalog's factors; a dense model's answer is silent."""
    import csv

    from gpucost.speed import card_efficiency

    from .conftest import DATA, cli_json

    with open(DATA / "moe_efficiency.csv", encoding="utf-8") as fh:
        share = float(next(csv.DictReader(fh))["moe_compute_share"])
    d = cli_json("speed", "--model", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--engine", "vllm", "--quant", "fp8-e4m3",
                 "--context", "4096")
    assert any(f"{share:.2f} of the dense compute rate" in n for n in d["notes"])
    q, fp8, h100 = catalog_spec("qwen3-30b-a3b", cat), get_format("fp8-e4m3", cat), gpu(cat, "h100-sxm")
    eff = card_efficiency("vllm", h100, fp8, cat)
    assert eff.moe_compute_share == share < 1
    assert d["prefill_tokens_per_s"] == pytest.approx(
        speed(q, fp8, h100, context=4096, engine="vllm", catalog=cat).prefill_tokens_per_s, rel=1e-9)
    dense = cli_json("speed", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--quant", "fp8-e4m3")
    assert not any("mixture-of-experts" in n for n in dense["notes"])
