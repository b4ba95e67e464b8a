"""The estimators against the validation corpus (data/benchmarks.csv: published measurements, each from a
named source document), with the error cross-validated by source document: every speed factor is refitted
without the document whose rows are judged. Memory and file size have no fitted factor."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpucost.bands import band
from gpucost.catalog import Catalog
from gpucost.records import gpu_records
from gpucost.validation import (
    BAND_COVERAGE_TARGET,
    BAND_SIDE_MISS,
    BOUNDS,
    CATEGORIES,
    P90_RATIO,
    TARGETS,
    band_coverage,
    band_quantiles,
    convert,
    markdown_table,
    summary,
    validate,
)
from gpucost.validation.corpus import row_estimate
from gpucost.validation.fit import fitted_table

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cat():
    return Catalog()


@pytest.fixture(scope="module")
def results(cat):
    return validate(cat)


@pytest.fixture(scope="module")
def summ(results):
    return summary(results).set_index("category")


def test_units_are_converted_explicitly():
    assert convert(14.38, "GB") == (pytest.approx(14.38e9 / 2**30), "GiB")   # 13.39 GiB
    assert convert(37235.11, "MiB") == (pytest.approx(37235.11 / 1024), "GiB")
    assert convert(18.9, "GiB") == (18.9, "GiB")
    assert convert(115.42, "tokens/s") == (115.42, "tokens/s")


def test_the_corpus_is_broad_and_every_row_names_its_document(cat, results):
    bench = cat.table("benchmarks")
    assert len(bench) >= 400
    assert bench["source_id"].astype(str).str.len().gt(0).all()
    # a public address, or (gpucost's own measurements) the raw output committed in this repository
    src = bench["source"].astype(str)
    own = src[~src.str.startswith("http")]
    assert all((ROOT / s.split(" ")[0]).is_file() for s in own), set(own)
    assert bench["source_id"].nunique() >= 40
    est = results[results["role"] == "validation"]
    assert len(est) >= 400 and est["source_id"].nunique() >= 40
    # the hardware judged: catalog cards, and cards named in memory rows (no speed figure needed)
    judged = set(est["gpu"]) - {""}
    assert len(judged) >= 20
    recs = gpu_records(cat)
    assert {g for g in judged if g in recs and recs[g].vendor.lower() == "amd"} >= {"mi300x", "rx-7900-xtx"}
    assert {"llama.cpp", "vllm", "transformers", "sglang", "exllamav2", "torchtune", "unsloth"} <= set(est["engine"])


def test_every_row_is_estimated_or_skipped_for_a_stated_reason(cat, results):
    assert len(results) == len(cat.table("benchmarks"))
    skipped = results[results["role"] == "skipped"]
    assert skipped["reason"].str.len().gt(0).all()
    est = results[results["role"] == "validation"]
    assert est["estimate"].notna().all() and (est["estimate"] > 0).all()
    assert np.isfinite(est["error_pct"]).all()


def test_a_documents_rows_are_judged_with_factors_fitted_without_it(cat, results):
    """Cross-validation by document: the estimates of the llama.cpp decode rows of the largest llama.cpp
    document are the ones made with factors refitted without that document, not with the full fit (a least-absolute
    fit may land on the same value for one kernel path without the document: some of its rows, not each, move)."""
    dec = results[(results["category"] == "decode_speed") & (results["engine"] == "llama.cpp")
                  & (results["role"] == "validation")]
    src = dec["source_id"].value_counts().index[0]
    bench = cat.table("benchmarks").set_index("id")
    without, with_it = fitted_table(cat, exclude_source=src), fitted_table(cat)
    moved = 0
    for _, r in dec[dec["source_id"] == src].iterrows():
        row = bench.loc[r["id"]].to_dict() | {"id": r["id"]}
        held_out = row_estimate(row, cat, without)
        assert r["estimate"] == pytest.approx(held_out)
        moved += held_out != pytest.approx(row_estimate(row, cat, with_it), rel=1e-4)
    assert moved > 0   # the document moved the factors it was fitted on


@pytest.mark.parametrize("category", ["file_size", "inference_memory", "training_memory", "decode_speed",
                                      "prefill_speed"])
def test_cross_validated_median_error_holds_its_bound(summ, category):
    """The bound the suite holds: the measured cross-validated median, a little above (README)."""
    row = summ.loc[category]
    assert row["estimated"] >= 20 and row["sources"] >= 5, "too few rows to judge"
    assert row["median_abs_error_pct"] <= BOUNDS[category], markdown_table(summ.reset_index())


def test_expert_offload_rows_are_judged_with_the_hosts_bandwidth_apart_and_never_fitted_on(cat, results):
    """Published llama.cpp runs with experts in host RAM (--n-cpu-moe, or -ot regexes of whole layers) are
    estimated with the option and the host memory bandwidth their notes state (channels × 8 B × rate),
    reported under their own engine label, never fitted on; a row whose host bandwidth is not stated is
    skipped with that reason. Hand check: the Qwen3-235B-A22B Q6_K run on an RTX 3090 with the experts of
    89 layers on a 12-channel DDR5-6000 EPYC is the engine's answer for 89 layers at 576 GB/s."""
    from gpucost.models import catalog_spec
    from gpucost.quant import get_format
    from gpucost.speed import speed
    from gpucost.validation.fit import corpus_terms

    bench = cat.table("benchmarks").set_index("id")
    offload = bench[bench["offload"].fillna("").str.startswith("cpu-moe:")]
    judged = results[results["id"].isin(offload.index) & (results["role"] == "validation")].set_index("id")
    assert len(offload) >= 40 and len(judged) >= 6
    assert set(judged["engine"]) == {"llama.cpp --n-cpu-moe"}
    assert not set(offload.index) & {t.id for t in corpus_terms(cat)}
    skipped = results[results["id"].isin(offload.index) & (results["role"] == "skipped")]
    assert (skipped["reason"] == "experts in host RAM, but the host's memory bandwidth is not stated").sum() >= 10
    rid = next(i for i, r in offload.iterrows() if r["model_id"] == "qwen3-235b-a22b" and r["quant"] == "q6_k"
               and r["category"] == "decode_speed")
    assert "host_bw_gbps=576" in bench.loc[rid, "notes"] and bench.loc[rid, "offload"] == "cpu-moe:89"
    sp = speed(catalog_spec("qwen3-235b-a22b", cat), get_format("q6_k", cat), gpu_records(cat)["rtx-3090"],
               context=128 // 2, engine="llama.cpp", catalog=cat, cpu_moe=89, host_bw_gbps=576)
    # cross-validated factors differ a little from the full fit: the same order, within 10 %
    assert judged.loc[rid, "estimate"] == pytest.approx(sp.decode_tokens_per_s_per_seq, rel=0.10)


def test_serving_rows_are_judged_with_the_serving_engine_and_never_fitted_on(cat, results, summ):
    """Published serving runs (throughput with many requests in flight) are estimated with the step model page 07
    and `gpucost serve` use (gpucost.serving_step.step_cost), their benchmark replayed as it was run (gpucost.replay),
    and no serving row enters the speed fit."""
    from gpucost.models import catalog_spec
    from gpucost.quant import get_format
    from gpucost.replay import Request, replay
    from gpucost.scheduling import scheduler, trtllm_bench_kv_requests, trtllm_bench_settings, with_settings
    from gpucost.serving import Load, kv_capacity, plan_serving, saturated
    from gpucost.serving_step import step_cost
    from gpucost.validation.fit import corpus_terms

    row = summ.loc["serving_throughput"]
    assert row["estimated"] >= 300 and row["median_abs_error_pct"] <= BOUNDS["serving_throughput"]
    serving_ids = set(results[results["category"].str.startswith("serving_")]["id"])
    assert serving_ids and not serving_ids & {t.id for t in corpus_terms(cat)}
    # TensorRT-LLM's perf overview: Llama 3.1 8B FP8 on one H100 SXM, 128 in / 128 out, 30,000 requests queued at
    # once to trtllm-bench (output tokens/s of the whole run)
    bench = cat.table("benchmarks").set_index("id")
    ids = [i for i, r in bench.iterrows() if r["source_id"] == "trtllm-perf-overview-v1.0"
           and r["model_id"] == "llama-3.1-8b" and r["gpu_id"] == "h100-sxm" and r["prompt_tokens"] == 128
           and r["gen_tokens"] == 128]
    assert len(ids) == 1
    r = results.set_index("id").loc[ids[0]]
    assert r["measured"] == bench.loc[ids[0], "measured"]   # published as written, tokens/s
    assert "30000 requests" in bench.loc[ids[0], "notes"] and "ModelOpt" in bench.loc[ids[0], "notes"]
    spec, fmt, h100 = catalog_spec("llama-3.1-8b", cat), get_format("fp8-e4m3", cat), gpu_records(cat)["h100-sxm"]
    # the run as the document describes it: ModelOpt's FP8 checkpoint carries an FP8 KV cache; trtllm-bench sizes
    # its batch from the requests whose KV fits (32 layers × 8 KV heads × 128 × 1 byte × 2 per token, 80 GiB less
    # 8.03 GB of FP8 weights, × 0.95) and chunks contexts
    kv_req = trtllm_bench_kv_requests(spec.params_total, 32, 8, 128, 1.0, 1.0, 80.0, 1, 1, 128, 128)
    bs, tokens = trtllm_bench_settings(kv_req, 128, 128)
    sched = with_settings(scheduler("tensorrt-llm", h100), max_running=bs, token_budget=tokens, chunked=True)
    per_seq, pool = kv_capacity(spec, fmt, h100, context=256, prompt=128, engine="tensorrt-llm", kv_dtype="fp8")
    run = replay([Request(128, 128)] * 30000, step_cost(spec, fmt, h100, engine="tensorrt-llm", kv_dtype="fp8",
                                                       catalog=cat).seconds,
                 sched, clients=None, kv_tokens=pool / per_seq * 256)
    assert r["estimate"] == pytest.approx(run.output_tokens_per_s)
    # one model of the world: without latency targets the serving plan runs a replica at the steady state of the
    # same step model and the engine's own defaults
    sat = saturated(spec, fmt, h100, 128, 128, engine="tensorrt-llm", catalog=cat)
    plan = plan_serving(spec, fmt, h100, Load(1, 128, 128), engine="tensorrt-llm", catalog=cat)
    assert plan.point.requests_per_s == pytest.approx(sat.requests_per_s)


def test_a_serving_run_with_speculative_decoding_is_skipped_not_judged(cat):
    """A launch command with SGLang's or vLLM's --speculative-* flags (EAGLE, NEXTN/MTP) emits several tokens a step,
    which gpucost's step model has not: the row is skipped with that reason; notes that only say there was no
    speculative decoding are judged."""
    from gpucost.errors import GpucostError

    row = {"id": "x", "category": "serving_throughput", "model_id": "qwen3-235b-a22b", "quant": "", "mode": "inference",
           "engine": "sglang", "engine_version": "0.5.6", "backend": "cuda", "gpu_id": "b200", "num_gpus": 8,
           "prompt_tokens": 500, "gen_tokens": 500, "concurrency": 16, "measured": 800, "unit": "tokens/s",
           "measure_kind": "throughput", "as_of": "2026-01-14",
           "notes": "launch 'python -m sglang.launch_server --tp 8' (no speculative decoding); --num-prompts 80"}
    assert row_estimate(row, cat) > 0
    for flag in ("--speculative-algo NEXTN --speculative-num-steps 3", "--speculative-algorithm EAGLE"):
        with pytest.raises(GpucostError, match="speculative decoding is not modelled"):
            row_estimate({**row, "notes": f"launch 'python -m sglang.launch_server --tp 8 {flag}'"}, cat)


def test_a_decode_figure_that_includes_the_prefill_is_estimated_as_a_whole_generate(cat):
    """A static batch timed from its prompts to its last token (TensorRT-LLM's blogs: out_tps = output_seqlen ×
    batch_size / total_latency): the batch's prompts are one prefill, which makes the first token, then a decode step
    for each of the others; read per GPU, the figure is the run's divided by its cards. Such a row is never fitted on."""
    from gpucost.models import catalog_spec
    from gpucost.quant import get_format
    from gpucost.records import gpu
    from gpucost.speed import engine_efficiency, speed
    from gpucost.validation.corpus import INCLUDES_PREFILL, comparison_value
    from gpucost.validation.fit import terms_of

    table = fitted_table(cat)
    row = {"id": "x", "category": "decode_speed", "model_id": "llama-2-13b", "quant": "fp8-e4m3", "mode": "inference",
           "engine": "tensorrt-llm", "engine_version": "0.5.0", "backend": "cuda", "gpu_id": "h200", "num_gpus": 1,
           "batch": 64, "prompt_tokens": 2048, "gen_tokens": 128, "measured": 1349, "unit": "tokens/s/gpu",
           "measure_kind": "throughput", "source_id": "x", "as_of": "2023-11-13",
           "notes": f"static batch, aggregate over the batch {INCLUDES_PREFILL}"}
    s, f, g = catalog_spec("llama-2-13b", cat), get_format("fp8-e4m3", cat), gpu(cat, "h200")
    eff = engine_efficiency("tensorrt-llm", cat, f, table=table)
    step = speed(s, f, g, batch=64, context=2048 + 64, engine="tensorrt-llm", eff=eff, catalog=cat).step_ms / 1e3
    pre = 2048 * 64 / speed(s, f, g, batch=1, context=2048, engine="tensorrt-llm", eff=eff, catalog=cat,
                            prefill_batch=64).prefill_tokens_per_s
    assert row_estimate(row, cat, table) == pytest.approx(128 * 64 / (pre + 127 * step), rel=1e-9)
    # without the marker the same figure is read as decode steps alone: faster
    plain = {**row, "notes": "aggregate over the batch"}
    assert row_estimate(plain, cat, table) == pytest.approx(64 / step, rel=1e-9)
    assert row_estimate(plain, cat, table) > row_estimate(row, cat, table)
    assert comparison_value({**row, "num_gpus": 2}) == (2698, "tokens/s")
    assert terms_of(row, cat) is None and terms_of(plain, cat) is not None
    # the eleventh blind round's SGLang rows say "summed over the batch": the same reading; a row that says neither
    # is one sequence's tokens/s
    summed = {**row, "notes": "Output Throughput = batch_size * output_len / (latency - ttft): SUMMED over the batch"}
    assert row_estimate(summed, cat, table) == pytest.approx(row_estimate(plain, cat, table), rel=1e-12)
    one = {**row, "notes": "per sequence"}
    assert row_estimate(one, cat, table) == pytest.approx(1 / step, rel=1e-9)


#: categories whose issue target (median and p90 ≤ 2.5 × median) is not met yet: README "what still misses"
MISSED = {"training_memory", "decode_speed", "inference_memory", "prefill_speed", "file_size", "serving_throughput"}


@pytest.mark.parametrize("category", sorted(TARGETS))
def test_issue_targets(summ, category, request):
    """The issue's targets on the cross-validated figures. Where one is missed the test is an expected
    failure that turns into a failure the day it is met (strict), so the README is updated with it."""
    if category in MISSED:
        request.applymarker(pytest.mark.xfail(strict=True, reason="target missed: see README error table"))
    row = summ.loc[category]
    assert row["median_abs_error_pct"] <= TARGETS[category]
    assert row["p90_abs_error_pct"] <= P90_RATIO * row["median_abs_error_pct"]


def test_bands_hold_about_eight_in_ten_measurements(results, cat):
    """A band that holds 8 in 10 measurements of documents left out holds at least as many of the corpus's own."""
    ok = results[results["role"] == "validation"]
    for category in ("inference_memory", "training_memory", "decode_speed"):
        rows = ok[ok["category"] == category]
        inside = [band(category, e, cat).low * est <= m <= band(category, e, cat).high * est
                  for e, est, m in zip(rows["engine"], rows["estimate"], rows["measured"], strict=True)]
        assert np.mean(inside) >= 0.8, (category, np.mean(inside))


#: categories whose band holds more than 9 in 10 rows of documents left out (too wide for most): README
COVERAGE_MISSES = {
    "inference_memory": "one document of 2023-10 (optimum-benchmark's running-mistrals/-vicunas, 45 rows) read "
                        "nvidia-smi at 1.1-5.4 x the estimate; the band's top keeps no more than 1 in 10 rows above it, "
                        "so it runs to 3.8 x and holds 94 % of the rows of the other documents (README)",
}


@pytest.mark.parametrize("category", ["file_size", "inference_memory", "training_memory", "decode_speed",
                                      "prefill_speed", "serving_throughput", "serving_ttft", "serving_tpot"])
def test_bands_hold_eight_in_ten_measurements_of_documents_left_out(results, category, request):
    """Issue 25: each row against the band made without its document covers 80 % ± 10 of the rows."""
    if category in COVERAGE_MISSES:
        request.applymarker(pytest.mark.xfail(strict=True, reason=COVERAGE_MISSES[category]))
    cov = band_coverage(results).set_index("category").loc[category]
    assert cov["sources"] >= 3 and cov["rows"] >= 20
    lo, hi = BAND_COVERAGE_TARGET
    assert lo <= cov["coverage"] <= hi, cov.to_dict()


#: categories whose rows of documents left out fall beyond one end of their band more often than 1 in 10: README
#: (serving TPOT was, until the six SGLang documents of 2026-12-06 widened its band's top: dstack's DeepSeek-R1 TPOTs;
#: prefill was from the eighth blind round, 10 of 97 rows above, until the tenth round's P40 rows — 0.6 % of their
#: measurement when llama.cpp was priced at the P40's FP16 rate — were estimated on its int8 path: 10 of 105; serving
#: TTFT was at the eleventh round's refit, 15 of 147 below a low end that was already the others' minimum, until the
#: latencies of GPUStack's 1,000-request bursts were estimated: 13 of 184 below, 18 above)
MISSED_SIDES: dict[str, str] = {}


@pytest.mark.parametrize("category", ["file_size", "inference_memory", "training_memory", "decode_speed",
                                      "prefill_speed", "serving_throughput", "serving_ttft", "serving_tpot"])
def test_no_more_than_one_in_ten_of_documents_left_out_fall_beyond_either_end_of_the_band(results, category,
                                                                                         request):
    """A p10–p90 band misses 1 in 10 above and 1 in 10 below; above a memory band's high end is a card that runs out
    of memory, below a speed band's low end a job that costs more than the page said."""
    if category in MISSED_SIDES:
        request.applymarker(pytest.mark.xfail(strict=True, reason=MISSED_SIDES[category]))
    cov = band_coverage(results).set_index("category").loc[category]
    assert cov["below"] <= BAND_SIDE_MISS * cov["rows"], cov.to_dict()
    assert cov["above"] <= BAND_SIDE_MISS * cov["rows"], cov.to_dict()


def test_a_document_above_the_others_widens_the_high_end_of_the_band_only():
    """Four documents measure 0.9–1.1 × the estimate, a fifth 1.5 × on 15 of 95 rows: judged without it, its rows
    are all above the others' band, so the high end widens as far as it goes (the max) while the low end stays the
    p10 — one quantile for both ends would have widened the low end too, and called the band 8 in 10."""
    import pandas as pd

    rows = [{"category": "training_memory", "engine": "x", "source_id": f"doc{d}", "role": "validation",
             "estimate": 10.0, "measured": 10.0 * r}
            for d in range(4) for r in np.linspace(0.9, 1.1, 20)]
    rows += [{"category": "training_memory", "engine": "x", "source_id": "high", "role": "validation",
              "estimate": 10.0, "measured": 15.0}] * 15
    results = pd.DataFrame(rows)
    # engine x's own band cannot hold "high" on its side (15 of 95 rows above even its max): it is not kept, and x
    # carries the band of every engine's rows, widened at the top only
    assert band_quantiles(results, "training_memory") == {"*": (0.10, 0.0)}
    cov = band_coverage(results).set_index("category").loc["training_memory"]
    assert (cov["rows"], cov["above"]) == (95, 15)   # the high end of a band without "high" is 1.1: all its rows
    assert cov["below"] <= 0.10 * 80


def test_an_engine_keeps_a_band_of_its_own_only_where_it_holds_its_documents_left_out():
    """Engine a's three documents agree (0.95–1.05): its own band holds each left out and is kept, narrower than
    every engine's; engine b's three documents do not (0.5, 1.0 and 2.0 × the estimate): no band of b's own made
    without one of them holds it, so b carries every engine's band."""
    import pandas as pd

    def rows(engine, doc, lo, hi):
        return [{"category": "decode_speed", "engine": engine, "source_id": doc, "role": "validation",
                 "estimate": 100.0, "measured": 100.0 * r} for r in np.linspace(lo, hi, 12)]

    results = pd.DataFrame([r for d in range(3) for r in rows("a", f"a{d}", 0.95, 1.05)]
                           + rows("b", "b0", 0.45, 0.55) + rows("b", "b1", 0.95, 1.05) + rows("b", "b2", 1.9, 2.1))
    qs = band_quantiles(results, "decode_speed")
    assert set(qs) == {"*", "a"}
    from gpucost.validation import error_bands

    bands = error_bands(results).set_index("engine")
    assert set(bands.index) == {"*", "a"}
    assert bands.loc["a", "high"] - bands.loc["a", "low"] < bands.loc["*", "high"] - bands.loc["*", "low"]


def test_ttft_band_holds_documents_left_out(results):
    """Missed (59 %) while TTFT rows came from 4 documents whose ratios hardly overlapped; the two optimum-benchmark
    documents of 2026-12-06 (105 prefill latencies) brought it into the target (README)."""
    cov = band_coverage(results).set_index("category").loc["ttft"]
    assert BAND_COVERAGE_TARGET[0] <= cov["coverage"] <= BAND_COVERAGE_TARGET[1]


def test_stored_factors_and_bands_are_a_refit_of_the_corpus():
    """data/engine_efficiency.csv and data/error_bands.csv are what tools/calibrate.py fits now."""
    r = subprocess.run([sys.executable, "tools/calibrate.py", "--check"], cwd=ROOT, capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stdout + r.stderr


def test_markdown_error_table_lists_every_estimated_category(summ):
    md = markdown_table(summ.reset_index())
    for cat_ in CATEGORIES:
        if summ.loc[cat_, "estimated"]:
            assert f"| {cat_} |" in md
    assert "≤ 15 %" in md   # the decode target is printed next to the measured figure


def test_runs_their_own_source_calls_unrepresentative_are_kept_but_neither_fitted_nor_judged(cat, results):
    """1337hero's RX 7900 XTX repository logs a day of fixing its host: its README puts the first runs (about
    760 t/s pp512) on a host without ReBAR and calls GPU 1's early figures not representative; its last run
    (3,291 t/s) is the one it reports. Those 26 rows stay in the corpus, with the source's words, unjudged."""
    from gpucost.validation.fit import corpus_terms

    bench = cat.table("benchmarks").set_index("id")
    doc = bench[bench["source_id"] == "1337hero-rx7900xtx-llama-bench-vulkan"]
    marked = doc[doc["notes"].str.contains("NOT JUDGED: ")]
    assert len(doc) == 33 and len(marked) == 26
    res = results.set_index("id")
    assert (res.loc[marked.index, "role"] == "skipped").all()
    assert res.loc[marked.index, "reason"].str.startswith("not judged: ").all()
    assert "ReBAR" in res.loc["svp0754", "reason"]
    assert res.loc["svp0785", "role"] == "validation" and res.loc["svp0785", "measured"] == pytest.approx(3290.92)
    assert not set(marked.index) & {t.id for t in corpus_terms(cat)}


def test_other_backends_fit_their_own_keys_not_cudas(cat):
    """llama.cpp's own factors (and its kernel keys) are fitted on CUDA rows; a Vulkan or ROCm row fits the keys
    that name its backend."""
    from gpucost.validation.fit import corpus_terms, fit_factors

    bench = cat.table("benchmarks").set_index("id")
    fitted = fit_factors(corpus_terms(cat))
    for key in ("llama.cpp", "llama.cpp/gguf"):
        rows = fitted[key].decode_rows + fitted[key].prefill_rows
        assert rows and set(bench.loc[list(rows), "backend"].fillna("cuda")) == {"cuda"}, key
    vulkan = fitted["llama.cpp/vulkan"].prefill_rows
    assert vulkan and set(bench.loc[list(vulkan), "backend"]) == {"vulkan"}


def test_a_key_fitted_on_one_document_judges_no_row_and_takes_its_parents_factors():
    """Two documents of decode rows on a kernel path: each is judged with what the other supports — with one
    document left, the key is not fitted and its parent's factors stand (a factor from one document was never
    judged on another); the engine's own key, fitted on three documents' float rows, stays."""
    from gpucost.validation.fit import MIN_DOCUMENTS, Terms, fit_factors

    def row(i, src, keys, eta):
        w, bw = 8e9, 1000.0   # 8 GB of weights a step on a 1 TB/s card, nothing else costs time
        return Terms(f"{src}{i}", src, keys, "decode", w, 0.0, 0.0, 0.0, bw, float("inf"), 1.0, 0.0,
                     bw * 1e9 * eta / w)

    rows = ([row(i, d, ("e",), 0.8) for d in ("A", "B", "C") for i in range(6)]
            + [row(i, "A", ("e/awq",), 0.40) for i in range(6)] + [row(i, "B", ("e/awq",), 0.42) for i in range(6)])
    assert MIN_DOCUMENTS == 2
    both = fit_factors(rows)
    assert both["e/awq"].sources == ("A", "B") and 0.39 <= both["e/awq"].bw_efficiency <= 0.43
    without_b = fit_factors([t for t in rows if t.source != "B"])
    assert "e/awq" not in without_b and without_b["e"].bw_efficiency == pytest.approx(0.8, abs=0.011)


def test_a_held_out_table_keeps_nothing_fitted_on_the_document_it_judges(cat):
    """The stored table's kernel keys were fitted on the whole corpus: leaving out a document, a key it alone
    supports is absent (the lookup falls to the parent's factors), never the stored figure fitted on it. Qwen's
    speed benchmark is the corpus's one document of transformers' FP8 path and SGLang's AWQ path."""
    from gpucost.quant import get_format
    from gpucost.speed import engine_efficiency

    src = "qwen3-speed-benchmark"
    bench = cat.table("benchmarks")
    assert set(bench[(bench["engine"] == "sglang")]["source_id"]) >= {src}
    held = fitted_table(cat, exclude_source=src)
    for key in held:
        assert not set(held[key].calibration_rows) & set(bench[bench["source_id"] == src]["id"]), key
    fp8 = get_format("fp8-e4m3", cat)
    assert engine_efficiency("transformers", cat, fp8, table=held).bw_efficiency == held["transformers"].bw_efficiency
    assert held["sglang"].bw_efficiency == held["vllm"].bw_efficiency   # SGLang's only decode rows are left out


def test_the_default_mfu_is_not_judged_on_the_rows_it_is_the_mean_of(cat, results):
    """The training-time estimate's default MFU is the geometric mean of the Llama 3 paper's three published MFUs:
    those rows are not judged with it (5.6 % off in-sample, the README's table until 2026-12-07), they are skipped;
    the two other documents' rows are."""
    bench = cat.table("benchmarks").set_index("id")
    own = cat.table("engine_efficiency").set_index("engine").at["training", "calibration_rows"].split(";")
    assert set(bench.loc[own, "source_id"]) == {"arxiv-2407.21783"}
    r = results.set_index("id").loc[own]
    assert (r["role"] == "skipped").all() and r["reason"].str.contains("no other document").all()
    assert r["estimate"].isna().all()
    # the other documents' published MFUs judge it: the 530B GPT on 2,240 A100s (54.2 % with selective recomputation,
    # 42.1 % with full) and MegaScale's 175B (55.2 %), models the catalog does not list — all above the default
    others = results[(results["category"] == "mfu") & ~results["id"].isin(own)]
    assert set(others["source_id"]) == {"arxiv-2205.05198", "arxiv-2402.15627"} and (others["role"] == "validation").all()
    default = float(cat.table("engine_efficiency").set_index("engine").at["training", "mfu"])
    got = dict(zip(others["id"], others["error_pct"], strict=True))
    assert got == pytest.approx({"mfu04": (default / 0.542 - 1) * 100, "mfu05": (default / 0.421 - 1) * 100,
                                 "mfu06": (default / 0.552 - 1) * 100})


def test_an_offload_column_that_names_what_moved_is_zeros_offload_to_the_host(cat):
    """ChatGLM-Finetuning's ZeRO-3 run writes its offload as 'params+optimizer' (no 'cpu offload' in its notes): it
    is estimated as the same run with offload 'cpu', below the run with nothing offloaded."""
    row = cat.table("benchmarks").set_index("id").loc["tcn015"].to_dict() | {"id": "tcn015"}
    assert row["offload"] == "params+optimizer" and "cpu offload" not in row["notes"].lower()
    named = row_estimate(row, cat)
    assert named == pytest.approx(row_estimate({**row, "offload": "cpu"}, cat))
    assert named < row_estimate({**row, "offload": "none"}, cat)


def test_a_document_far_off_does_not_pull_the_fit():
    """The fit minimizes Σ |log(estimate / measured)|: seven prompts run at η_c = 0.40 and three of another
    document at a twentieth of it; the fitted factor is the seven's (least squares would give 0.16)."""
    from gpucost.validation.fit import Terms, _fit_compute

    def row(i, eta_c):
        flops, peak = 7e12, 100.0   # 7 TFLOP on a 100-TFLOPS card; weights and layers cost nothing
        return Terms(f"r{i}", f"doc{i}", ("x",), "prefill", 0.0, 0.0, flops, 0.0, 1000.0, peak, 1.0, 512.0,
                     flops / (peak * 1e12 * eta_c))

    rows = [row(i, 0.40) for i in range(7)] + [row(10 + i, 0.02) for i in range(3)]
    assert _fit_compute(rows, 0.8, 0.1) == pytest.approx(0.40, abs=0.005)
    assert _fit_compute(rows[:7], 0.8, 0.1) == pytest.approx(0.40, abs=0.005)


def test_a_time_factor_is_the_median_over_documents_not_rows():
    """vLLM on ROCm: each document's median estimate ÷ measured, then the median over documents — one document
    of 100 runs at 2× does not outvote two documents at 3× and 1.5×; a document is never fitted on when judged,
    and one document left is too few to fit on."""
    from gpucost.validation.fit import fit_time_factors

    ratios = [("vllm/rocm", "A", f"a{i}", 2.0) for i in range(100)] + [("vllm/rocm", "B", "b", 3.0),
                                                                      ("vllm/rocm", "C", "c", 1.5)]
    assert fit_time_factors(ratios)["vllm/rocm"].time_factor == pytest.approx(2.0)
    held = fit_time_factors(ratios, exclude_source="A")["vllm/rocm"]
    assert held.time_factor == pytest.approx((3.0 * 1.5) ** 0.5, abs=1e-3) and held.sources == ("B", "C")
    assert fit_time_factors(ratios[:101], exclude_source="A") == {}


def test_rocm_serving_rows_are_judged_with_a_time_factor_fitted_without_their_document(cat, results):
    """Issue 25: three of the four documents of vLLM's serving runs on AMD cards ran 2–3× slower than the step model
    with vLLM's CUDA-fitted factors. A ROCm row is estimated with its steps × a factor fitted on the OTHER documents'
    ROCm rows; the time scales every step, so the throughput is the factor-1 estimate ÷ the factor exactly."""
    from gpucost.validation import time_ratios
    from gpucost.validation.fit import fit_time_factors, with_time_factors

    ok = results[(results["role"] == "validation") & (results["backend"] == "rocm") & (results["engine"] == "vllm")
                 & (results["category"] == "serving_throughput")]
    assert ok["source_id"].nunique() >= 3
    bench = cat.table("benchmarks").set_index("id")
    r = ok[ok["source_id"] == "dstack-benchmarks-deepseek-r1-2025-03"].iloc[0]
    row = bench.loc[r["id"]].to_dict() | {"id": r["id"]}
    # the speed factors, and the MoE share fitted without the document (DeepSeek-R1 is a mixture of experts), as
    # validate() prices every serving row a time factor is fitted on
    from gpucost.speed import with_moe_share
    from gpucost.validation import moe_ratios
    from gpucost.validation.fit import fit_moe_share

    base = fitted_table(cat)
    share = fit_moe_share(moe_ratios(cat, base), exclude_source=r["source_id"]).moe_compute_share
    table = with_moe_share(base, share)
    fits = fit_time_factors(time_ratios(cat, table), exclude_source=r["source_id"])
    k = fits["vllm/rocm"].time_factor
    assert r["source_id"] not in fits["vllm/rocm"].sources and 1.5 < k < 5
    plain = row_estimate(row, cat, table)
    assert r["estimate"] == pytest.approx(plain / k, rel=1e-9)
    assert r["estimate"] == pytest.approx(row_estimate(row, cat, with_time_factors(table, fits)))
    # the row's own document would have moved the factor: it is not the one fitted on every document
    stored = cat.table("engine_efficiency").set_index("engine").loc["vllm/rocm", "time_factor"]
    assert float(stored) != pytest.approx(k, abs=0.01)
    # the ROCm documents' throughput error: each at most half what it was with the CUDA factors
    before = (plain / r["measured"] - 1) * 100
    assert abs(r["error_pct"]) < abs(before) / 2


def test_an_engine_band_from_one_document_is_not_its_own():
    """TensorRT-LLM's serving TPOT comes from one document: it carries the band of every engine's rows."""
    assert band("serving_tpot", "tensorrt-llm").engine == "*"
    assert band("serving_tpot", "sglang").engine == "sglang"


def test_a_reserved_peak_is_judged_against_what_the_card_can_hold(cat, results):
    """torch.cuda.max_memory_reserved cannot pass the card: on a card too small for the allocator's whole cache the
    estimate of a reserved figure is the card less the CUDA context (never below the allocated peak). ms-swift's
    Qwen-7B full fine-tune on one A100 80GB (tma067, 512 tokens) reserved 73.37 GiB."""
    from gpucost.memory import Setup, estimate
    from gpucost.models import catalog_spec
    from gpucost.quant import get_format

    e = estimate(catalog_spec("qwen-7b", cat), get_format("bf16", cat),
                 Setup(mode="full", context=512, engine="ms-swift", precision="bf16", lora_dropout=0.0))
    floor = float(cat.table("allocator").iloc[0]["p10"])            # the least reserve runs keep
    terms = dict(e.terms)   # of what the steps free and allocate again: all but the weights and optimizer states
    kept = e.allocated_gib + (floor - 1) * (e.allocated_gib - terms["weights"] - terms["optimizer"])
    assert e.need_gib == pytest.approx(kept + 0.25)
    assert e.need_gib < 80.0 < e.per_gpu.total
    assert e.reserved_on(80.0) == pytest.approx(79.75)             # the card less the CUDA context
    assert e.reserved_on(200.0) == pytest.approx(e.engine_gib)     # room for the whole cache
    assert e.reserved_on(40.0) == pytest.approx(kept)                # never below what it keeps
    row = results.set_index("id").loc["tma067"]
    assert row["role"] == "validation" and row["measured"] == pytest.approx(73.37)
    assert row["estimate"] == pytest.approx(79.75)
    # an allocated-peak row is never capped: its card plays no part
    alloc = results[(results["category"] == "training_memory") & (results["measure_kind"] == "allocator_peak")
                    & (results["role"] == "validation")]
    vram = {g: r.vram_gib for g, r in gpu_records(cat).items()}
    assert (alloc["estimate"] > alloc["gpu"].map(vram)).any()


def test_the_long_sequence_caution_is_the_corpus(results):
    """What a training estimate at 4,096 tokens or more cautions (messages.json mn_variable_lengths): held out, half of
    ms-swift's 2024 runs at 4,096-8,192 tokens on data of varying lengths reserved at least 1.2 × the estimate, the
    most 2.7 ×."""
    bench = Catalog().table("benchmarks").set_index("id")
    long = results[(results["source_id"] == "ms-swift-benchmark-doc-2024") & (results["role"] == "validation")]
    long = long[long["id"].map(bench["context"]) >= 4096]
    ratio = long["measured"] / long["estimate"]
    assert len(long) == 26
    assert ratio.median() > 1.2 and 2.6 < ratio.max() < 2.8


def test_the_zero3_offload_caution_is_the_corpus(results):
    """What a training estimate with ZeRO-3 and an offload cautions (messages.json mn_zero3_offload): held out, 10 of the
    corpus's 20 such runs, from seven documents, measured 1.7-7.6 × the estimate."""
    bench = Catalog().table("benchmarks").set_index("id")
    off = bench[(bench["category"] == "training_memory") & (bench["zero_stage"].astype(str).isin(["3", "3.0"]))
                & bench["offload"].isin(["cpu", "params+optimizer"])].index
    r = results[results["id"].isin(off) & (results["role"] == "validation")]
    ratio = r["measured"] / r["estimate"]
    assert len(r) == 20
    high = r[ratio >= 1.69]
    assert len(high) == 10 and high["source_id"].nunique() == 7
    assert 1.69 <= ratio[ratio >= 1.69].min() < 1.75 and 7.5 < ratio.max() < 7.65


def test_a_prompt_row_on_a_card_without_a_dense_throughput_figure_sizes_no_compute(cat, results):
    """llama.cpp's DGX Spark page (GB10: gpus.csv has no dense throughput figure for it): its prompt rows are not
    estimated and enter no fit (their compute time would be zero, any compute efficiency as good as another);
    its decode rows, bound by memory, are fitted and judged."""
    from gpucost.validation.fit import corpus_terms

    ids = {t.id for t in corpus_terms(cat)}
    doc = results[results["source_id"] == "llamacpp-benches-dgx-spark"]
    pre, dec = doc[doc["category"] == "prefill_speed"], doc[doc["category"] == "decode_speed"]
    assert len(pre) == 25 and len(dec) == 25
    assert set(pre["role"]) == {"skipped"} and not set(pre["id"]) & ids
    assert (dec["role"] == "validation").all() and set(dec["id"]) <= ids
    with open(ROOT / "data" / "engine_efficiency.csv", encoding="utf-8") as fh:
        eff = [float(r["compute_efficiency"]) for r in csv.DictReader(fh) if r["compute_efficiency"]]
    assert min(eff) > 0.1   # no factor sits at the fit grid's floor


def test_a_request_latency_is_the_median_over_documents_of_each_ones_median_difference():
    """A served request's latency beyond the step model: each document's median measured − estimated TTFT of its runs
    at concurrency 1, then the median over documents (one document of 100 runs does not outvote two); never below 0;
    a document left out is not fitted on, and one document left is too few. An engine without a fit of its own takes
    vLLM's (as its speed factors do), a backend key its engine's."""
    from gpucost.validation.fit import fit_request_latency, latency_of

    diffs = ([("sglang", "A", f"a{i}", 120.0) for i in range(100)] + [("sglang", "B", "b1", 80.0),
             ("sglang", "B", "b2", 3000.0), ("sglang", "C", "c", 90.0)]
             + [("vllm", "D", "d", 40.0), ("vllm", "E", "e", -500.0), ("vllm", "F", "f", 60.0)])
    fits = fit_request_latency(diffs)
    assert fits["sglang"].request_latency_ms == pytest.approx(120.0)     # B's median is 1,540 ms: one vote of three
    assert dict(fits["sglang"].per_document) == {"A": 120.0, "B": 1540.0, "C": 90.0}
    held = fit_request_latency(diffs, exclude_source="A")["sglang"]
    assert held.sources == ("B", "C") and held.request_latency_ms == pytest.approx((1540 + 90) / 2)
    assert fit_request_latency(diffs[:101], exclude_source="A") == {}
    assert fit_request_latency([d for d in diffs if d[1] in "DE"])["vllm"].request_latency_ms == 0.0
    assert latency_of("sglang/rocm", fits) == 120.0 and latency_of("tensorrt-llm", fits) == 40.0 == latency_of("vllm", fits)
    assert latency_of("sglang", {}) == 0.0


def test_serving_ttft_rows_are_judged_with_a_request_latency_fitted_without_their_document(cat, results):
    """The step model's TTFT of a lone request leaves out what the server does per request (HTTP, tokenizing,
    scheduling, an eager prefill's launches): SGLang's cookbook runs at one request measured 2–10× it. Each TTFT row
    is estimated with the step model plus a latency fitted on the OTHER documents' runs at concurrency 1. vLLM's
    runs at concurrency 1 are dense models on CUDA (no MoE share or time factor moves them): leaving GPUStack's
    document out, the two left disagree (a 2023 AWQ build 1.8 s slow, a 16k-token prompt 0.55 s fast) and their
    median, which of two is their mean, is what judges it — the README's p90 for vLLM says so."""
    from gpucost.validation import latency_diffs
    from gpucost.validation.fit import fit_request_latency

    table = fitted_table(cat)
    diffs = [d for d in latency_diffs(cat, table) if d[0] == "vllm"]
    src = "gpustack-perflab-qwen3-8b-h100-latency"
    held = fit_request_latency(diffs, exclude_source=src)["vllm"]
    assert src not in held.sources and len(held.sources) == 2
    per = dict(held.per_document)
    assert held.request_latency_ms == pytest.approx(sum(per.values()) / 2, abs=0.1)
    bench = cat.table("benchmarks").set_index("id")
    r = results.set_index("id").loc["svr034"]
    assert r["source_id"] == src and r["role"] == "validation" and bench.at["svr034", "concurrency"] == 1
    row = bench.loc["svr034"].to_dict() | {"id": "svr034"}
    assert r["estimate"] == pytest.approx(row_estimate(row, cat, table) + held.request_latency_ms)
    # the product's latency is fitted on every document's runs
    stored = cat.table("engine_efficiency").set_index("engine").at["vllm", "request_latency_ms"]
    assert float(stored) == fit_request_latency(diffs)["vllm"].request_latency_ms > 0
    # and borrowed as the held-out judge borrows it (gpucost.validation.fit.latency_of): TensorRT-LLM, with no runs at
    # one client, takes vLLM's; SGLang on ROCm SGLang's
    from gpucost.speed import efficiency_table

    eff = efficiency_table(cat)
    assert eff["tensorrt-llm"].request_latency_ms == eff["vllm"].request_latency_ms == float(stored)
    assert eff["sglang/rocm"].request_latency_ms == eff["sglang"].request_latency_ms > eff["vllm"].request_latency_ms
    # DeepSeek-R1 on eight B200s, one request at a time (SGLang's cookbook: 126–166 ms to the first token): held out,
    # −8 to +36 % (the 4,194-token prompt's +36 % since the ninth blind round moved the MoE share from 0.30 to 0.15,
    # which slows a MoE prefill) — the step model alone had said 23–75 ms, 55–85 % short
    ds = results[(results["source_id"] == "sgl-cookbook-deepseek-r1") & (results["category"] == "serving_ttft")]
    one = ds[ds["id"].map(bench["concurrency"]) == 1]
    assert len(one) == 3 and (one["error_pct"].abs() < 40).all() and one["error_pct"].abs().median() < 15


def test_a_run_at_an_offered_rate_serves_what_is_offered_and_cached_prompts_are_not_a_ttft(cat, results):
    """Ninth blind round (docs/corpus/round_2026-12-07d_log.md): zhjunqin's vLLM runs on an RTX 3090 sent ShareGPT
    requests at 1 and 2 per second, and the server output what was offered (rate × output tokens), where the replay
    had measured a saturated server (+157 … +366 % judged blind). dennislee22's vLLM runs on an A100 hit the prefix cache
    (its logs say so): Qwen2-7B's 1,024-token prompt reached its first token in 36 ms, less than its prefill takes at
    the card's full dense rate — a TTFT the replay, which computes every prompt token, does not estimate."""
    bench = cat.table("benchmarks").set_index("id")
    r = results.set_index("id")
    for rid, rate in (("sv9001", 1.0), ("sv9004", 2.0)):
        assert r.at[rid, "estimate"] == pytest.approx(rate * float(bench.at[rid, "gen_tokens"]))
        assert abs(r.at[rid, "error_pct"]) < 15
    ttft = r.loc[["sv9020", "sv9023", "sv9026", "sv9029"]]
    assert (ttft["role"] == "skipped").all() and ttft["reason"].str.contains("prefix cache").all()
    assert 2 * 7.6e9 * 1024 / 312e12 * 1e3 > bench.at["sv9020", "measured"]   # 50 ms of prefill at 100 % of peak > 36 ms
    assert (r.loc[["sv9019", "sv9021", "sv9022", "sv9024"], "role"] == "validation").all()


def test_latencies_of_requests_sent_at_once_are_estimated_and_of_a_poisson_rate_are_not(cat, results):
    """GPUStack's perf-lab runs send 1,000 ShareGPT requests at once (`vllm bench serve`, no --max-concurrency, the
    request rate at its default, inf) — what the replay does with no concurrency stated — so their mean TTFT and TPOT
    are judged from the same replay as their throughput. Runs at a finite Poisson rate (zhjunqin's at 1–2 requests/s,
    vLLM issue #6781's at 12) are not: the replay has no arrival times."""
    bench = cat.table("benchmarks").set_index("id")
    r = results.set_index("id")
    # Qwen3-32B in vLLM on one A100, the eleventh blind round: throughput, mean TTFT, mean TPOT of one run
    thr, ttft, tpot = (r.loc[i] for i in ("r11sv001", "r11sv002", "r11sv003"))
    assert (thr["role"], ttft["role"], tpot["role"]) == ("validation",) * 3
    # everything arrives at t = 0 and is served first come, first served: the run lasts 1,000 × output ÷ throughput,
    # and the mean request waits for a good part of it before its first token
    duration_ms = 1000 * float(bench.at["r11sv001", "gen_tokens"]) / thr["estimate"] * 1e3
    assert 0.25 * duration_ms < ttft["estimate"] < duration_ms
    # the measured run says the same of itself
    measured_ms = 1000 * float(bench.at["r11sv001", "gen_tokens"]) / thr["measured"] * 1e3
    assert 0.25 * measured_ms < ttft["measured"] < measured_ms
    assert 0 < tpot["estimate"] < ttft["estimate"]
    poisson = r.loc[["sv9002", "sv9003", "sv9005", "sv9006", "r11sv011"]]
    assert (poisson["role"] == "skipped").all() and poisson["reason"].str.contains("open-loop request rate").all()
