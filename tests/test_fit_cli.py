"""gpucost fit / gpucost speed as a user runs them, and page 02 run headless (papermill)."""

from __future__ import annotations

import json

import pytest

from gpucost.catalog import Catalog
from gpucost.memory import Setup, estimate
from gpucost.models import catalog_spec
from gpucost.quant import get_format
from gpucost.specs import DEFAULTS

from .conftest import cli_json, run_cli, run_notebook

PER_GPU_KEYS = {"weights", "kv_cache", "activations", "gradients", "optimizer", "overhead", "total"}


def test_fit_json_contract_and_values():
    r = cli_json("fit", "--model", "Llama-3.1-8B", "--quant", "Q4_K_M", "--context", "8192")
    assert set(r) >= {"per_gpu_gib", "cpu_gib", "weights_file_gib", "fits"}
    assert set(r["per_gpu_gib"]) == PER_GPU_KEYS
    pg = r["per_gpu_gib"]
    assert pg["total"] == pytest.approx(sum(v for k, v in pg.items() if k != "total"), abs=1e-3)
    # 2 × 32 layers × 8 KV heads × 128 × 8192 tokens × 2 B = 1 GiB; GGUF default engine is llama.cpp
    assert r["engine"] == "llama.cpp" and pg["kv_cache"] == pytest.approx(1.0)
    assert r["weights_file_gib"] == pytest.approx(4.58, abs=0.01)  # llama.cpp README: 4.58 GiB
    fits = {f["gpu"]: f for f in r["fits"]}
    assert len(fits) == len(Catalog().gpus)
    assert set(fits["rtx-4090"]) >= {"gpu", "vram_gib", "min_gpus", "fits_on_one", "reason"}
    assert fits["rtx-4090"]["min_gpus"] == 1 and fits["rtx-4090"]["fits_on_one"] is True


def test_fit_training_zero3_with_a_card_name():
    r = cli_json("fit", "--model", "llama-3.1-70b", "--quant", "bf16", "--mode", "full", "--gpus", "8",
                 "--zero", "3", "--offload", "cpu", "--gpu", "A100 80GB SXM")
    assert [f["gpu"] for f in r["fits"]] == ["a100-80gb-sxm"]
    # ZeRO-3 + CPU offload: optimizer states, master weights and gradients in CPU RAM (16 bytes/param)
    assert r["per_gpu_gib"]["optimizer"] == 0
    assert r["cpu_gib"] == pytest.approx(70.554e9 * 16 / 2**30, rel=1e-3)
    assert "max_context" in r and "max_batch" in r
    # the page/engine give the same numbers, at the shared default context (training and inference alike)
    e = estimate(catalog_spec("llama-3.1-70b", Catalog()), get_format("bf16"),
                 Setup(mode="full", context=DEFAULTS.context, gpus=8, zero=3, offload="cpu", engine="transformers"))
    assert r["per_gpu_gib"]["total"] == pytest.approx(e.per_gpu.total, abs=1e-3)


def test_fit_impossible_count_is_null():
    r = cli_json("fit", "--model", "llama-3.1-405b", "--quant", "fp32", "--gpu", "rtx-3060-12gb")
    assert r["fits"][0]["min_gpus"] is None and r["fits"][0]["fits_on_one"] is False


def test_fit_from_a_local_config_json(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632,
                               "num_hidden_layers": 22, "num_attention_heads": 32, "num_key_value_heads": 4,
                               "vocab_size": 32000, "max_position_embeddings": 2048}))
    r = cli_json("fit", "--config", str(cfg), "--quant", "bf16", "--context", "2048", "--engine", "transformers")
    # TinyLlama-1.1B's shapes: 1,100,048,384 parameters × 2 B (its model card: 1.1B)
    assert r["per_gpu_gib"]["weights"] == pytest.approx(1_100_048_384 * 2 / 2**30, rel=1e-4)
    # KV: 2 × 22 × 4 × 64 × 2048 × 2 B = 46,137,344 B
    assert r["per_gpu_gib"]["kv_cache"] == pytest.approx(46_137_344 / 2**30, abs=1e-4)


def test_bad_input_exits_2_with_one_line():
    p = run_cli("fit", "--model", "llama-3-8bb", "--quant", "q4_k_m", "--json")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "closest: llama-3-8b" in p.stderr
    p = run_cli("fit", "--model", "acme/brand-new-llm", "--quant", "bf16", "--json")
    assert p.returncode == 2 and "HF_HUB_OFFLINE" in p.stderr and p.stderr.count("\n") == 1
    p = run_cli("fit", "--model", "llama-3-8b", "--quant", "q4_k_m", "--mode", "lora", "--json")
    assert p.returncode == 2 and "qlora" in p.stderr and "Traceback" not in p.stderr
    p = run_cli("speed", "--model", "llama-3-8b", "--quant", "q4_k_m", "--gpu", "RTX 9999", "--json")
    assert p.returncode == 2 and "unknown GPU" in p.stderr


def test_speed_json_contract():
    r = cli_json("speed", "--model", "qwen2.5-7b", "--quant", "awq", "--gpu", "A100 80GB SXM", "--batch", "4")
    assert set(r) >= {"decode_tokens_per_s", "prefill_tokens_per_s", "bound"}
    assert r["engine"] == "vllm" and r["bound"] == "memory-bandwidth"
    assert r["decode_tokens_per_s"] == pytest.approx(4 * r["decode_tokens_per_s_per_seq"])
    assert r["decode_tokens_per_s"] <= r["bandwidth_roofline_tokens_per_s"]
    assert r["cost_per_1m_tokens"]["cloud"] > 0


@pytest.mark.notebook
@pytest.mark.timeout(300)
def test_page_agrees_with_the_cli(tmp_path):
    rec = run_notebook("02_quantization_fit.ipynb", {"model": "qwen2.5-7b", "quant": "awq-4bit-g128",
                                                     "context": "8K", "batch": 2, "gpu": "A100 80GB SXM"}, tmp_path)
    assert rec["error"] is None
    cli = cli_json("fit", "--model", "qwen2.5-7b", "--quant", "awq-4bit-g128", "--context", "8192", "--batch", "2",
                   "--gpu", "a100-80gb-sxm")
    assert rec["per_gpu_gib"] == pytest.approx(cli["per_gpu_gib"])
    assert rec["card_min_gpus"] == cli["fits"][0]["min_gpus"] == 1
    assert rec["max_context"] == cli["max_context"] and rec["max_batch"] == cli["max_batch"]
    assert rec["bars"] == 7  # six components + the card's usable-memory line
    assert rec["matrix"]["a100-80gb-sxm"]["awq-4bit-g128"] == 1
    assert rec["speed"] and all(s["tokens_per_s"] > 0 for s in rec["speed"])
    # the same uncertainty band and verdict as the CLI; every speed row has its p10–p90
    assert rec["band"]["per_gpu_gib"]["high"] == pytest.approx(cli["band"]["per_gpu_gib"]["high"])
    assert rec["verdict"]["verdict"] == cli["fits"][0]["verdict"]
    assert all(s["tokens_per_s_low"] < s["tokens_per_s"] < s["tokens_per_s_high"] for s in rec["speed"])
    cats = {e["category"] for e in rec["errors"]}
    assert {"file_size", "inference_memory", "training_memory", "decode_speed"} <= cats


@pytest.mark.notebook
@pytest.mark.timeout(300)
def test_page_in_chinese_and_bad_context_is_a_message(tmp_path):
    rec = run_notebook("02_quantization_fit.ipynb", {"lang": "zh", "mode": "qlora", "quant": "bnb-nf4-dq",
                                                     "context": "2048"}, tmp_path)
    assert rec["error"] is None and rec["currency"] == "CNY"
    assert "每张需" in rec["summary"]
    rec = run_notebook("02_quantization_fit.ipynb", {"context": "lots"}, tmp_path)
    # said next to the field; the results use the shared default (4096) and are marked out of date
    assert rec["stale"] and "'lots' is not a number" in rec["invalid"]["context"]
    assert rec["context"] == 4096


@pytest.mark.notebook
@pytest.mark.timeout(300)
def test_page_02_takes_the_loss_kernel_as_the_cli_does(tmp_path):
    """Page 02's loss-kernel input (training): QLoRA of Llama 3.1 8B at 4 × 2,048 tokens with Cut Cross-Entropy keeps
    no logits — the page and `gpucost fit --loss-kernel cce` give the same memory, and its allocated peak is the
    framework loss's less exactly the logits (4 × 2,048 × 128,256 × 12 bytes)."""
    params = {"model": "llama-3.1-8b", "mode": "qlora", "quant": "bnb-nf4-dq", "context": "2048", "batch": 4}
    plain = run_notebook("02_quantization_fit.ipynb", params, tmp_path)
    cce = run_notebook("02_quantization_fit.ipynb", {**params, "loss_kernel": "cce"}, tmp_path)
    assert plain["error"] is None and cce["error"] is None
    assert plain["loss_kernel"] is None and cce["loss_kernel"] == "cce"
    cli = cli_json("fit", "--model", "llama-3.1-8b", "--mode", "qlora", "--quant", "bnb-nf4-dq", "--context", "2048",
                   "--batch", "4", "--loss-kernel", "cce")
    assert cce["per_gpu_gib"] == pytest.approx(cli["per_gpu_gib"])
    assert cce["terms_gib"]["logits"] == 0
    assert plain["allocated_peak_gib"] - cce["allocated_peak_gib"] == pytest.approx(4 * 2048 * 128_256 * 12 / 2**30,
                                                                                    rel=1e-6)


@pytest.mark.notebook
@pytest.mark.timeout(300)
def test_page_02_takes_precision_and_lora_dropout_as_the_cli_does(tmp_path):
    """Page 02's training precision and LoRA dropout inputs: a full fine-tune of Llama 3.2 1B loaded in bf16 keeps
    8 bytes per parameter of weights, gradients and AdamW states where mixed precision keeps 16 (models.csv's 1.236 B
    parameters × 8 bytes fewer), and LoRA dropout on Llama 3.1 8B at 4 × 512 tokens without checkpointing adds one mask byte per
    adapted input value: 32 layers × 2,048 tokens × (6 × 4,096 + 14,336) = 2.375 GiB — the page and `gpucost fit`
    agree on both."""
    full = {"model": "llama-3.2-1b", "mode": "full", "quant": "bf16", "context": "512", "batch": 4}
    mixed, bf16 = (run_notebook("02_quantization_fit.ipynb", {**full, "precision": p}, tmp_path) for p in ("", "bf16"))
    assert mixed["error"] is None and bf16["error"] is None and bf16["precision"] == "bf16"
    cli = cli_json("fit", "--model", "llama-3.2-1b", "--mode", "full", "--quant", "bf16", "--context", "512",
                   "--batch", "4", "--precision", "bf16")
    assert bf16["per_gpu_gib"] == pytest.approx(cli["per_gpu_gib"])
    states = sum(mixed["terms_gib"][k] - bf16["terms_gib"][k] for k in ("weights", "gradients", "optimizer"))
    assert states == pytest.approx(1.236e9 * 8 / 2**30, rel=1e-6)
    lora = {"model": "llama-3.1-8b", "mode": "lora", "quant": "bf16", "context": "512", "batch": 4}
    off, on = (run_notebook("02_quantization_fit.ipynb", {**lora, "lora_dropout": d}, tmp_path) for d in ("off", "on"))
    assert off["lora_dropout"] == 0 and on["lora_dropout"] == pytest.approx(0.05)
    cli_on = cli_json("fit", "--model", "llama-3.1-8b", "--mode", "lora", "--quant", "bf16", "--context", "512",
                      "--batch", "4", "--lora-dropout", "0.1")
    assert on["per_gpu_gib"] == pytest.approx(cli_on["per_gpu_gib"])  # any probability above 0 keeps the same mask
    # with checkpointing (the default) one layer is recomputed at a time: one layer's masks, 2,048 × 38,912 bytes
    assert on["allocated_peak_gib"] - off["allocated_peak_gib"] == pytest.approx(2048 * 38_912 / 2**30, rel=1e-6)
