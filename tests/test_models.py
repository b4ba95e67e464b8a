"""Model resolution and the architecture breakdown, against published parameter counts and by hand."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gpucost.catalog import Catalog
from gpucost.errors import GpucostError, UnknownNameError
from gpucost.models import (
    catalog_spec,
    catalog_specs,
    count_parameters,
    fetch_hf_config,
    load_config_file,
    lora_trainable_params,
    param_split,
    resolve_model,
)
from tests.conftest import run_cli

# Llama-2-7B's config.json (meta-llama/Llama-2-7b-hf), the fields that matter
LLAMA2_7B_CONFIG = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                    "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32000,
                    "max_position_embeddings": 4096, "tie_word_embeddings": False, "torch_dtype": "float16",
                    "_name_or_path": "meta-llama/Llama-2-7b-hf"}


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return Catalog()


#: catalog rows whose published count includes a part the tensor model does not hold, and why
UNMODELLED = {"deepseek-v3.2": "the DeepSeek Sparse Attention indexer (active count 2.2 % low)",
              "deepseek-v3.2-exp": "the DeepSeek Sparse Attention indexer (active count 2.2 % low)"}


def test_every_catalog_llm_counts_to_its_published_total(cat):
    """The tensor breakdown plus the vision tower (vision_params_b, from the checkpoint's config) adds up to
    models.csv's params_total_b within 0.1 %, or half a unit of its last printed digit (0.135 B: ±0.5 M)."""
    table = cat.table("models").set_index("id")
    for spec in catalog_specs(cat):
        if not spec.is_llm or spec.id in UNMODELLED:
            continue
        vision = float(table.at[spec.id, "vision_params_b"] or 0) * 1e9
        if vision != vision:
            vision = 0.0
        total, active = count_parameters(spec)
        tol = max(1e-3 * spec.params_total, 0.5e6)
        assert total + vision == pytest.approx(spec.params_total, abs=tol), spec.id
        assert active + vision == pytest.approx(spec.params_active, abs=max(1e-3 * spec.params_active, 0.5e6)), spec.id
        if vision:
            assert param_split(spec)["extra"] == pytest.approx(vision, rel=1e-2)   # held at 16 bits


def test_llama2_7b_from_config_json_by_hand(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(LLAMA2_7B_CONFIG))
    spec = load_config_file(p)
    # embeddings 32000*4096 = 131,072,000, twice (untied) = 262,144,000
    # per layer: attention 4*4096^2 = 67,108,864; MLP 3*4096*11008 = 135,266,304; 2 norms 8,192
    # 32 layers: 32 * 202,383,360 = 6,476,267,520; final norm 4,096 → 6,738,415,616 (the models.csv note)
    assert spec.params_total == 6_738_415_616
    assert spec.num_kv_heads == 32 and spec.head_dim == 128 and spec.source == "config.json"


def test_qwen3_next_from_its_config_json_counts_like_the_catalog(tmp_path):
    # Qwen3-Next-80B-A3B-Thinking's config.json shape keys (as published): the counted total is the catalog's
    # 79,674 M (the multi-token-prediction layer excluded, as for DeepSeek), 3,875 M active per token
    import json

    from gpucost.models import load_config_file

    cfg = {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "hidden_size": 2048,
           "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
           "intermediate_size": 5120, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
           "num_experts": 512, "num_experts_per_tok": 10, "decoder_sparse_step": 1, "full_attention_interval": 4,
           "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
           "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "vocab_size": 151936,
           "max_position_embeddings": 262144, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    spec = load_config_file(path)
    assert spec.is_hybrid and len(spec.attention_layers) == 12 and spec.attention_layers[0] == 3
    assert round(spec.params_total / 1e6) == 79_674
    assert round(spec.params_active / 1e6) == 3_875
    assert spec.linear_state_values == 32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)


def test_llama4_maverick_interleaves_moe_and_dense_layers(cat):
    # config.json text_config: 48 layers, interleave_moe_layer_step 2 (layers 2, 4, … 48 are MoE: 128
    # experts of 8,192 + one shared, top-1), the other 24 dense with intermediate_size_mlp 16,384
    spec = catalog_spec("llama-4-maverick", cat)
    assert spec.moe_layers == 24 and spec.moe_layer_ids[:2] == (1, 3)
    total, active = count_parameters(spec)
    h = 5120
    dense_ffn, expert = 3 * h * 16384, 3 * h * 8192
    # between the 24 dense and 24 MoE layers the difference is the experts, the shared expert and the router
    assert total - count_parameters(replace(spec, moe_layer_step=0, num_experts=0))[0] == pytest.approx(
        24 * (128 * expert + expert + h * 128) + 24 * dense_ffn - 48 * dense_ffn)
    assert round((total + 0.872e9) / 1e6) == 401_584  # + the vision tower = the checkpoint's total
    assert round((active + 0.872e9) / 1e6) == 18_057


def test_lora_parameters_exact():
    spec = resolve_model("llama-2-7b")
    # LoRA rank 8 on q_proj and v_proj: 8*(4096+4096) per matrix, 2 per layer, 32 layers = 4,194,304
    # (the count PEFT prints for Llama-2-7B with r=8 on q,v)
    assert lora_trainable_params(spec, 8, "qv") == 4_194_304
    # … and on q, k and v (ms-swift 1.x's default, a fused QKV projection): 3 per layer = 6,291,456
    assert lora_trainable_params(spec, 8, "qkv") == 6_291_456
    # all linear layers, rank 16: q,k,v,o 4 * 16*(4096+4096) = 524,288; gate, up 2 * 16*(4096+11008)
    # = 483,328; down 16*(11008+4096) = 241,664 → 1,249,280 per layer, × 32 = 39,976,960
    assert lora_trainable_params(spec, 16) == 39_976_960
    with pytest.raises(GpucostError):
        lora_trainable_params(spec, 0)
    with pytest.raises(UnknownNameError, match="closest"):
        lora_trainable_params(spec, 8, "attentions")


def test_names_ids_repo_ids_aliases_case_insensitive(cat):
    assert resolve_model("LLAMA3.1:8B", catalog=cat).id == "llama-3.1-8b"
    assert resolve_model("meta-llama/Llama-3.1-8B-Instruct", catalog=cat).id == "llama-3.1-8b"
    assert resolve_model("Qwen/Qwen2.5-7B-Instruct", catalog=cat).id == "qwen2.5-7b"
    assert resolve_model("mixtral", catalog=cat).id == "mixtral-8x7b"


def test_unknown_name_gets_closest_names(cat):
    with pytest.raises(UnknownNameError) as err:
        resolve_model("llamma-3-8b", catalog=cat)
    assert "llama-3-8b" in str(err.value) and "\n" not in str(err.value)


def test_repo_id_offline_says_so_in_one_line(cat, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(GpucostError) as err:
        resolve_model("some-org/some-new-model", catalog=cat)
    msg = str(err.value)
    assert "HF_HUB_OFFLINE" in msg and "\n" not in msg


def test_repo_id_online_goes_through_the_hub_client(cat, monkeypatch, tmp_path):
    """A repo id not in the catalog is fetched with huggingface_hub.hf_hub_download (faked here)."""
    huggingface_hub = pytest.importorskip("huggingface_hub")

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({**LLAMA2_7B_CONFIG, "_name_or_path": ""}))
    calls = []

    def fake_download(repo_id, filename, **kw):
        calls.append((repo_id, filename))
        return str(cfg)

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr("gpucost.models._check_reachable", lambda repo_id: None)   # online, as far as it knows
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    spec = resolve_model("some-org/llama-like", catalog=cat)
    assert calls == [("some-org/llama-like", "config.json")]
    assert spec.id == "some-org/llama-like" and spec.params_total == 6_738_415_616


def test_hub_failure_is_one_line(monkeypatch):
    huggingface_hub = pytest.importorskip("huggingface_hub")

    def broken(**kw):
        raise OSError("network is unreachable")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr("gpucost.models._check_reachable", lambda repo_id: None)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda repo_id, filename, **kw: broken())
    with pytest.raises(GpucostError, match="offline or Hugging Face unreachable"):
        fetch_hf_config("org/model")


def test_unknown_repo_with_the_hub_unreachable_is_one_line_at_once(tmp_path):
    """No network: one connection attempt (here to a closed local port standing in for the Hub), then one
    line and exit 2 — not huggingface_hub's five retries with back-off (24 s, a dozen lines)."""
    import time

    t0 = time.monotonic()
    p = run_cli("fit", "--model", "some-org/not-in-catalog", "--quant", "bf16",
                env={"HF_HUB_OFFLINE": "", "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HOME": str(tmp_path)})
    assert time.monotonic() - t0 < 10      # the subprocess's start-up included; ~1 s on a laptop
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "cannot be reached" in p.stderr and "--config FILE" in p.stderr


def test_bad_config_file_is_a_clear_error(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("{not json")
    with pytest.raises(GpucostError, match="not a readable JSON"):
        load_config_file(p)
    p.write_text(json.dumps({"model_type": "vit", "image_size": 224}))
    with pytest.raises(GpucostError, match="not a decoder-only"):
        load_config_file(p)
    with pytest.raises(GpucostError, match="file not found"):
        load_config_file(tmp_path / "missing.json")


def test_moe_and_mla_shapes(cat):
    dsv3 = resolve_model("deepseek-v3", catalog=cat)
    # MLA caches kv_lora_rank + qk_rope_head_dim = 512 + 64 values per token per layer (DeepSeek-V2 paper)
    assert dsv3.kv_values_per_token_per_layer == 576
    mix = resolve_model("mixtral-8x7b", catalog=cat)
    # GQA: 2 × 8 KV heads × 128 = 2048 values per token per layer
    assert mix.kv_values_per_token_per_layer == 2048


def test_page_02_takes_an_uploaded_config_json_like_the_cli(tmp_path):
    """Any other model on the page: its config.json, read in memory; the same memory as `fit --config`;
    a broken one is a message next to the upload and the page keeps its last good answer."""
    from gpucost.ui.quant_fit import QuantFitPage

    cfg = {**LLAMA2_7B_CONFIG, "_name_or_path": "acme/llama-like-7b"}
    page = QuantFitPage(quant="bf16", engine="transformers", gpu="a100-80gb-sxm")
    page._on_config({"new": [{"name": "config.json", "content": json.dumps(cfg).encode()}]})
    rec = page.results_record()
    assert rec["model"] == "acme/llama-like-7b" and "acme/llama-like-7b" in page.summary.value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    p = run_cli("fit", "--config", str(path), "--quant", "bf16", "--engine", "transformers", "--gpu",
                "a100-80gb-sxm", "--json")
    assert p.returncode == 0, p.stderr
    assert rec["per_gpu_gib"]["total"] == pytest.approx(json.loads(p.stdout)["per_gpu_gib"]["total"])
    page._on_config({"new": [{"name": "broken.json", "content": b"{not json"}]})
    assert "broken.json: not a readable JSON config" in page.config_msg.value
    assert page.results_record()["model"] == "acme/llama-like-7b"


def test_page_02_takes_a_hugging_face_repo_id_read_in_memory(tmp_path, monkeypatch):
    """A repo id typed on page 02: its config.json is fetched from the Hub (here a local stand-in named by
    HF_ENDPOINT) into memory — nothing written on the server's disk — and gives the CLI's memory; an
    unknown repo, a malformed id or an unreachable Hub is one line next to the input."""
    import http.server
    import os
    import threading

    from gpucost.ui.quant_fit import QuantFitPage

    cfg = json.dumps({**LLAMA2_7B_CONFIG, "_name_or_path": "acme/llama-like-7b"}).encode()

    class Hub(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server API
            ok = self.path == "/acme/llama-like-7b/resolve/main/config.json"
            self.send_response(200 if ok else 404)
            self.end_headers()
            self.wfile.write(cfg if ok else b"not found")

        def log_message(self, *args):
            pass

    hub = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{hub.server_address[1]}")
    home = os.environ["HOME"]
    before = sorted(str(p) for p in Path(home).rglob("*"))
    try:
        page = QuantFitPage(quant="bf16", engine="transformers", gpu="a100-80gb-sxm")
        page.hub.value = "acme/llama-like-7b"
        rec = page.results_record()
        assert rec["model"] == "acme/llama-like-7b", page.config_msg.value
        path = tmp_path / "config.json"
        path.write_bytes(cfg)
        p = run_cli("fit", "--config", str(path), "--quant", "bf16", "--engine", "transformers", "--gpu",
                    "a100-80gb-sxm", "--json")
        assert rec["per_gpu_gib"]["total"] == pytest.approx(json.loads(p.stdout)["per_gpu_gib"]["total"])
        page.hub.value = "acme/no-such-model"
        assert "HTTP 404" in page.config_msg.value and page.results_record()["model"] == "acme/llama-like-7b"
        page.hub.value = "../../etc/passwd"
        assert "is not a Hugging Face repo id" in page.config_msg.value
    finally:
        hub.shutdown()
    page.hub.value = "acme/other-model"   # the Hub gone: one line, quickly
    assert "cannot be reached" in page.config_msg.value or "unreachable" in page.config_msg.value
    assert sorted(str(p) for p in Path(home).rglob("*")) == before   # no cache, no file


def test_chatglm_qkv_biases_and_falcons_plain_mlp_count_exactly(cat):
    """Published totals, printed by their users: ChatGLM3-6B's num_parameters() 6,243,584,000 (q/k/v biases on its
    fused query_key_value, add_qkv_bias), GLM-4-9B-Chat's 9,399,951,360; Falcon-7B's two-matrix GELU MLP without
    biases and its tied head, 6,921,720,704 (the checkpoint's 7,217,189,760 stores the tied head twice) — gpucost's
    count leaves out only Falcon's final LayerNorm bias (4,544)."""
    assert count_parameters(catalog_spec("chatglm3-6b", cat))[0] == 6_243_584_000
    assert count_parameters(catalog_spec("glm-4-9b", cat))[0] == 9_399_951_360
    assert count_parameters(catalog_spec("falcon-7b", cat))[0] == 6_921_720_704 - 4_544
