"""Model architectures: the catalog's models.csv, a local Hugging Face ``config.json``, or a repo id.

Pure functions over plain values, except :func:`fetch_hf_config`, the one place that reaches the network
(``huggingface_hub.hf_hub_download`` of ``config.json``, cached by the hub library). Offline
(``HF_HUB_OFFLINE=1``, no network, or huggingface_hub not installed) it raises a one-line
:class:`~gpucost.errors.GpucostError` that says so.

The architecture is broken into its weight tensors (:func:`weight_tensors`), the way llama.cpp's GGUF
files and the PyTorch modules hold them: token embedding, output head, per-layer attention
(query/key/value/output, or MLA's low-rank projections), per-layer feed-forward (gated or not, dense or
mixture-of-experts with shared experts and a router) and the 1-D norm/bias vectors. The memory engine
prices each tensor at the bits its format gives it; the LoRA counter reads the shapes from here.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from gpucost.catalog import Catalog, derived, normalize_name
from gpucost.errors import GpucostError, UnknownNameError
from gpucost.memory_profiles import LORA_TARGETS
from gpucost.serialize import Record

#: model families whose feed-forward block is a plain two-matrix MLP (up, activation, down) with biases
#: rather than a gated one (gate, up, down): StarCoder2 (config "mlp_type": "default", c_fc/c_proj),
#: GPT-2/BigCode, Phi-1/2 (fc1/fc2). Every other family in the catalog uses a gated MLP
#: (SwiGLU/GeGLU: gate_proj, up_proj, down_proj) — transformers modeling_<family>.py.
#: Falcon (modeling_falcon.py FalconMLP: dense_h_to_4h, GELU, dense_4h_to_h, no biases: its count is then 4,544 short,
#: the final LayerNorm's bias) is one too
UNGATED_MLP_FAMILIES = frozenset({"starcoder2", "gpt2", "gpt_bigcode", "phi", "gpt_neox", "opt", "falcon"})
#: families with biases on the q/k/v projections (transformers modeling_qwen2.py: bias=True on q,k,v; ChatGLM2/3 and
#: GLM-4's config ``add_qkv_bias: true`` on their fused query_key_value, modeling_chatglm.py)
QKV_BIAS_FAMILIES = frozenset({"qwen2", "qwen2_moe", "starcoder2", "chatglm"})
#: families with per-head RMSNorm on queries and keys (transformers modeling_qwen3.py, modeling_gemma3.py)
QK_NORM_FAMILIES = frozenset({"qwen3", "qwen3_moe", "gemma3", "gemma3_text"})
#: RMSNorm/LayerNorm vectors per decoder layer: 2 (pre-attention, pre-MLP) for most; Gemma 2/3 add a
#: post-attention and a post-feed-forward norm (transformers modeling_gemma2.py) = 4
NORMS_PER_LAYER = {"gemma2": 4, "gemma3": 4, "gemma3_text": 4}
#: families whose norms are LayerNorm with a bias vector (2 vectors per norm)
LAYERNORM_BIAS_FAMILIES = frozenset({"starcoder2", "gpt2", "gpt_bigcode", "phi", "gpt_neox", "opt"})
#: model_type values of config.json → catalog family names (config.json "model_type" as written by HF)
HF_MODEL_TYPES = {"llama": "llama", "mistral": "mistral", "mixtral": "mixtral", "qwen2": "qwen2",
                  "qwen3": "qwen3", "qwen3_moe": "qwen3_moe", "qwen2_moe": "qwen2_moe", "gemma": "gemma",
                  "gemma2": "gemma2", "gemma3": "gemma3", "gemma3_text": "gemma3", "phi3": "phi3",
                  "starcoder2": "starcoder2", "deepseek_v3": "deepseek_v3", "deepseek_v2": "deepseek_v3",
                  "qwen3_next": "qwen3_next", "qwen3_5": "qwen3_5", "qwen3_5_text": "qwen3_5",
                  "qwen3_5_moe": "qwen3_5_moe", "qwen3_5_moe_text": "qwen3_5_moe"}
#: hybrid Gated DeltaNet families: the full-attention layers' q_proj also yields an output gate (2 × heads ×
#: head_dim), q/k norms on those layers, and a sigmoid gate (hidden → 1) on the shared expert
GATED_ATTENTION_FAMILIES = frozenset({"qwen3_next", "qwen3_5", "qwen3_5_moe"})


@dataclass(frozen=True)
class ModelSpec(Record):
    """One model's architecture. Counts are plain numbers (parameters, not billions).

    params_total  : float  [parameters] as published (catalog) or counted from the config
    params_active : float  [parameters] per token (MoE: shared + routed experts in use)
    hidden_size, num_layers, num_attention_heads, num_kv_heads, head_dim, intermediate_size,
    moe_intermediate_size, vocab_size, max_context [tokens] … as in config.json
    sliding_window [tokens], sliding_window_layers : layers that attend only to the last window
    kv_lora_rank, qk_rope_head_dim, … : multi-head latent attention (DeepSeek V2/V3)
    """

    id: str
    name: str
    kind: str = "llm"
    family: str = "llama"
    params_total: float = 0.0
    params_active: float = 0.0
    num_layers: int = 0
    hidden_size: int = 0
    num_attention_heads: int = 0
    num_kv_heads: int = 0
    head_dim: int = 0
    intermediate_size: int = 0
    moe_intermediate_size: int = 0
    vocab_size: int = 0
    max_context: int = 0
    tie_embeddings: bool = False
    num_experts: int = 0
    experts_per_token: int = 0
    num_shared_experts: int = 0
    first_dense_layers: int = 0
    sliding_window: int = 0
    sliding_window_layers: int = 0
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    torch_dtype: str = ""
    hf_repo: str = ""
    source: str = "catalog"
    gated_mlp: bool = True
    # hybrid linear attention (Qwen3-Next, Qwen3.5: Gated DeltaNet): every full_attention_interval-th layer
    # is full attention with a KV cache, the others keep a fixed recurrent state per sequence
    full_attention_interval: int = 0
    # interleaved MoE (Llama 4 Maverick: interleave_moe_layer_step 2): every moe_layer_step-th layer is MoE,
    # the others dense with intermediate_size; 0 or 1: every layer after first_dense_layers
    moe_layer_step: int = 0
    linear_num_key_heads: int = 0
    linear_num_value_heads: int = 0
    linear_key_head_dim: int = 0
    linear_value_head_dim: int = 0
    linear_conv_kernel: int = 0
    # a vision-language model: tokens one image becomes in the language model (at the resolution its row's
    # notes state: Qwen2.5-VL 256 at 448×448, Gemma 3 256 at any size); 0: text only or not known
    image_tokens: int = 0
    # Llama 3.2 Vision (mllama): this many of num_layers are cross-attention layers — they attend to the image
    # tokens only (their KV cache holds those), the others to the text only
    cross_attention_layers: int = 0

    # -- derived ----------------------------------------------------------------------------------
    @property
    def is_llm(self) -> bool:
        return self.kind == "llm" and self.num_layers > 0

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def is_hybrid(self) -> bool:
        return self.full_attention_interval > 1 and self.linear_num_value_heads > 0

    @property
    def attention_layers(self) -> tuple[int, ...]:
        """Layers with (full or sliding) attention and a KV cache: all, or every interval-th of a hybrid."""
        if not self.is_hybrid:
            return tuple(range(self.num_layers))
        return tuple(i for i in range(self.num_layers) if (i + 1) % self.full_attention_interval == 0)

    @property
    def linear_layers(self) -> tuple[int, ...]:
        """Gated DeltaNet layers of a hybrid (none otherwise)."""
        attn = set(self.attention_layers)
        return tuple(i for i in range(self.num_layers) if i not in attn)

    @property
    def linear_conv_channels(self) -> int:
        """Channels of a Gated DeltaNet layer's causal conv1d: q and k (key heads × key dim) and v."""
        return (2 * self.linear_num_key_heads * self.linear_key_head_dim
                + self.linear_num_value_heads * self.linear_value_head_dim)

    @property
    def linear_state_values(self) -> int:
        """Values a Gated DeltaNet layer keeps per sequence, whatever its length: the recurrent state (value
        heads × key dim × value dim) and the last kernel − 1 steps of the conv input."""
        if not self.is_hybrid:
            return 0
        return (self.linear_num_value_heads * self.linear_key_head_dim * self.linear_value_head_dim
                + (self.linear_conv_kernel - 1) * self.linear_conv_channels)

    @property
    def q_dim(self) -> int:
        """Width of the query projection output [values] (heads × head_dim)."""
        if self.is_mla:
            return self.num_attention_heads * (self.qk_nope_head_dim + self.qk_rope_head_dim)
        return self.num_attention_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of one of the key/value projections [values] (KV heads × head_dim)."""
        return self.num_kv_heads * self.head_dim

    @property
    def moe_layers(self) -> int:
        return len(self.moe_layer_ids)

    @property
    def moe_layer_ids(self) -> tuple[int, ...]:
        """The layers whose feed-forward is a mixture of experts."""
        if not self.is_moe:
            return ()
        step = max(self.moe_layer_step, 1)
        return tuple(i for i in range(self.first_dense_layers, self.num_layers) if (i + 1) % step == 0)

    @property
    def kv_values_per_token_per_layer(self) -> int:
        """Values cached per token per full-attention layer: 2 × KV heads × head_dim (K and V), or for
        MLA the compressed latent plus the decoupled RoPE key, kv_lora_rank + qk_rope_head_dim
        (DeepSeek-V2 paper, arXiv 2405.04434, section 2.1.3)."""
        if self.is_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.num_kv_heads * self.head_dim

    @property
    def kv_values_per_token_per_layer_expanded(self) -> int:
        """K and V per token per layer when an engine caches MLA attention uncompressed (per head)."""
        if self.is_mla:
            return self.num_attention_heads * (self.qk_nope_head_dim + self.qk_rope_head_dim + self.v_head_dim)
        return self.kv_values_per_token_per_layer



@dataclass(frozen=True)
class TensorGroup:
    """Weight tensors of one kind: ``numel`` values each, rows of ``ne0`` values (llama.cpp's ne[0],
    the input dimension), one per entry of ``layers`` (or a single global tensor when layers is None)."""

    kind: str
    ne0: int
    numel: int
    layers: tuple[int, ...] | None = None
    trainable_lora: bool = False  # a Linear that LoRA can adapt (in, out) = (ne0, numel / ne0)
    field_note: str = field(default="", compare=False)

    @property
    def count(self) -> int:
        return 1 if self.layers is None else len(self.layers)

    @property
    def total(self) -> float:
        return float(self.numel) * self.count


# --------------------------------------------------------------------------------------------------
# Construction
# --------------------------------------------------------------------------------------------------

def _int(v) -> int:
    """A whole number from a table cell or config value (0 when absent; -1 for ±inf, which the config
    checks then refuse with the field's name)."""
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        return 0
    if math.isnan(f):
        return 0
    return int(f) if math.isfinite(f) else -1


def _float(v) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(f) else f


def spec_from_row(row: Mapping) -> ModelSpec:
    """A :class:`ModelSpec` from one row of models.csv (billions → parameter counts)."""
    family = str(row.get("family") or "llama")
    total = _float(row.get("params_total_b")) * 1e9
    active = _float(row.get("params_active_b")) * 1e9 or total
    hidden = _int(row.get("hidden_size"))
    heads = _int(row.get("num_attention_heads"))
    head_dim = _int(row.get("head_dim")) or (hidden // heads if heads else 0)
    tie = row.get("tie_embeddings")
    spec = ModelSpec(
        id=str(row["id"]), name=str(row.get("hf_repo") or row["id"]), kind=str(row.get("kind") or "llm"),
        family=family, params_total=total, params_active=active, num_layers=_int(row.get("num_layers")),
        hidden_size=hidden, num_attention_heads=heads,
        num_kv_heads=_int(row.get("num_kv_heads")) or heads, head_dim=head_dim,
        intermediate_size=_int(row.get("intermediate_size")),
        moe_intermediate_size=_int(row.get("moe_intermediate_size")), vocab_size=_int(row.get("vocab_size")),
        max_context=_int(row.get("max_context")), tie_embeddings=bool(tie) if tie is not None and tie == tie else False,
        num_experts=_int(row.get("num_experts")), experts_per_token=_int(row.get("experts_per_token")),
        num_shared_experts=_int(row.get("num_shared_experts")),
        first_dense_layers=_int(row.get("first_dense_layers")), sliding_window=_int(row.get("sliding_window")),
        sliding_window_layers=_int(row.get("sliding_window_layers")), kv_lora_rank=_int(row.get("kv_lora_rank")),
        q_lora_rank=_int(row.get("q_lora_rank")), qk_rope_head_dim=_int(row.get("qk_rope_head_dim")),
        qk_nope_head_dim=_int(row.get("qk_nope_head_dim")), v_head_dim=_int(row.get("v_head_dim")),
        torch_dtype=str(row.get("torch_dtype") or ""), hf_repo=str(row.get("hf_repo") or ""),
        source="catalog", gated_mlp=family not in UNGATED_MLP_FAMILIES,
        full_attention_interval=_int(row.get("full_attention_interval")),
        linear_num_key_heads=_int(row.get("linear_num_key_heads")),
        linear_num_value_heads=_int(row.get("linear_num_value_heads")),
        linear_key_head_dim=_int(row.get("linear_key_head_dim")),
        linear_value_head_dim=_int(row.get("linear_value_head_dim")),
        linear_conv_kernel=_int(row.get("linear_conv_kernel")), moe_layer_step=_int(row.get("moe_layer_step")),
        image_tokens=_int(row.get("image_tokens")), cross_attention_layers=_int(row.get("cross_attention_layers")))
    if spec.is_mla and spec.head_dim != spec.qk_nope_head_dim + spec.qk_rope_head_dim:
        # the catalog stores hidden/heads in head_dim for MLA models; the real query/key head is nope + rope
        spec = replace(spec, head_dim=spec.qk_nope_head_dim + spec.qk_rope_head_dim)
    return spec


def _first(cfg: Mapping, *keys: str) -> int:
    """The first of ``keys`` that ``cfg`` sets to a non-zero number (configs of different families name
    the same thing differently: hidden_size / n_embd / d_model), else 0."""
    return next((v for v in (_int(cfg.get(k)) for k in keys) if v), 0)


def _language_config(config: Mapping) -> dict:
    """A multimodal config's language model (``text_config``) merged over the outer config."""
    cfg = dict(config)
    if isinstance(cfg.get("text_config"), Mapping):
        text = dict(cfg["text_config"])
        text.setdefault("model_type", cfg.get("model_type", ""))
        cfg = {**cfg, **text}
    return cfg


def _sliding_layers(cfg: Mapping, family: str, layers: int) -> tuple[int, int]:
    """(sliding window [tokens], layers that use it) — 0, 0 without sliding-window attention."""
    sliding = _int(cfg.get("sliding_window")) if cfg.get("use_sliding_window", True) is not False else 0
    if not sliding:
        return 0, 0
    if family == "gemma2":  # alternating local/global layers
        n = layers // 2
    elif family == "gemma3":
        n = layers - layers // (_int(cfg.get("sliding_window_pattern")) or 6)
    elif isinstance(cfg.get("layer_types"), list):
        n = sum(1 for t in cfg["layer_types"] if "sliding" in str(t))
    elif family in ("qwen2", "qwen3", "qwen3_moe", "qwen2_moe"):  # the window is off unless switched on
        n = layers if cfg.get("use_sliding_window") else 0
    else:
        n = layers
    return (sliding, n) if n else (0, 0)


def spec_from_hf_config(config: Mapping, name: str = "config.json") -> ModelSpec:
    """A :class:`ModelSpec` from a Hugging Face ``config.json`` (a dict). Parameters are counted from the
    architecture. Multimodal configs (``text_config``) use their language model."""
    cfg = _language_config(config)
    model_type = str(cfg.get("model_type", "")).lower()
    family = HF_MODEL_TYPES.get(model_type, model_type or "llama")
    hidden = _first(cfg, "hidden_size", "n_embd", "d_model")
    layers = _first(cfg, "num_hidden_layers", "n_layer", "num_layers")
    heads = _first(cfg, "num_attention_heads", "n_head")
    if not (hidden and layers and heads):
        raise GpucostError(f"{name}: not a decoder-only language-model config (needs hidden_size, "
                           "num_hidden_layers and num_attention_heads)")
    experts = _first(cfg, "num_local_experts", "num_experts", "n_routed_experts")
    kv_lora = _int(cfg.get("kv_lora_rank"))
    mla_head_dim = _int(cfg.get("qk_nope_head_dim")) + _int(cfg.get("qk_rope_head_dim"))
    sliding, sw_layers = _sliding_layers(cfg, family, layers)
    repo = str(cfg.get("_name_or_path") or "")
    spec = ModelSpec(
        id=repo or name, name=repo or name, kind="llm",
        family=family, num_layers=layers, hidden_size=hidden, num_attention_heads=heads,
        num_kv_heads=_first(cfg, "num_key_value_heads", "num_kv_heads") or heads,
        head_dim=mla_head_dim if kv_lora else (_int(cfg.get("head_dim")) or hidden // heads),
        intermediate_size=_first(cfg, "intermediate_size", "n_inner") or 4 * hidden,
        moe_intermediate_size=_int(cfg.get("moe_intermediate_size"))
        or (_int(cfg.get("intermediate_size")) if experts else 0),
        vocab_size=_int(cfg.get("vocab_size")), max_context=_first(cfg, "max_position_embeddings", "n_positions"),
        tie_embeddings=bool(cfg.get("tie_word_embeddings", False)), num_experts=experts,
        experts_per_token=_first(cfg, "num_experts_per_tok", "num_experts_per_token"),
        num_shared_experts=_int(cfg.get("n_shared_experts")), first_dense_layers=_int(cfg.get("first_k_dense_replace")),
        sliding_window=sliding, sliding_window_layers=sw_layers, kv_lora_rank=kv_lora,
        q_lora_rank=_int(cfg.get("q_lora_rank")), qk_rope_head_dim=_int(cfg.get("qk_rope_head_dim")),
        qk_nope_head_dim=_int(cfg.get("qk_nope_head_dim")), v_head_dim=_int(cfg.get("v_head_dim")),
        torch_dtype=str(cfg.get("torch_dtype") or cfg.get("dtype") or ""), hf_repo=repo,
        source="config.json", gated_mlp=family not in UNGATED_MLP_FAMILIES)
    step = _first(cfg, "interleave_moe_layer_step", "decoder_sparse_step")
    if experts and step > 1:
        spec = replace(spec, moe_layer_step=step, intermediate_size=_first(cfg, "intermediate_size_mlp",
                                                                          "intermediate_size") or spec.intermediate_size)
    if _int(cfg.get("full_attention_interval")) > 1 and _int(cfg.get("linear_num_value_heads")):
        shared = _int(cfg.get("shared_expert_intermediate_size"))
        spec = replace(spec, full_attention_interval=_int(cfg.get("full_attention_interval")),
                       linear_num_key_heads=_int(cfg.get("linear_num_key_heads")),
                       linear_num_value_heads=_int(cfg.get("linear_num_value_heads")),
                       linear_key_head_dim=_int(cfg.get("linear_key_head_dim")),
                       linear_value_head_dim=_int(cfg.get("linear_value_head_dim")),
                       linear_conv_kernel=_int(cfg.get("linear_conv_kernel_dim")),
                       num_shared_experts=(shared // spec.moe_intermediate_size
                                           if experts and shared and spec.moe_intermediate_size else
                                           spec.num_shared_experts))
    if isinstance(cfg.get("cross_attention_layers"), list) and cfg["cross_attention_layers"]:
        # mllama: image tokens reach the text model only through these layers; one image is up to
        # max_num_tiles tiles of (image_size / patch_size)² patches and a class token each
        vision: Mapping = config["vision_config"] if isinstance(config.get("vision_config"), Mapping) else {}
        patch = _int(vision.get("patch_size"))
        per_tile = (_int(vision.get("image_size")) // patch) ** 2 + 1 if patch else 0
        spec = replace(spec, cross_attention_layers=len(cfg["cross_attention_layers"]),
                       image_tokens=per_tile * (_int(vision.get("max_num_tiles")) or 1) if per_tile else 0)
    _check_config_spec(spec, name)
    total, active = count_parameters(spec)
    return replace(spec, params_total=total, params_active=active)


#: what a config.json's shape fields may be: (field, lowest, highest) — beyond any real model, far below
#: what would exhaust memory or time (num_hidden_layers 1e9 used to run out of memory)
CONFIG_BOUNDS = (("num_layers", 1, 10_000), ("hidden_size", 1, 1_000_000), ("num_attention_heads", 1, 100_000),
                 ("num_kv_heads", 1, 100_000), ("head_dim", 1, 100_000), ("intermediate_size", 1, 10_000_000),
                 ("moe_intermediate_size", 0, 10_000_000), ("vocab_size", 0, 100_000_000),
                 ("max_context", 0, 1_000_000_000), ("num_experts", 0, 100_000), ("experts_per_token", 0, 100_000),
                 ("num_shared_experts", 0, 100_000), ("first_dense_layers", 0, 10_000),
                 ("cross_attention_layers", 0, 10_000), ("image_tokens", 0, 10_000_000),
                 ("sliding_window", 0, 1_000_000_000), ("kv_lora_rank", 0, 1_000_000), ("q_lora_rank", 0, 1_000_000),
                 ("qk_rope_head_dim", 0, 100_000), ("qk_nope_head_dim", 0, 100_000), ("v_head_dim", 0, 100_000),
                 ("full_attention_interval", 0, 10_000), ("linear_num_key_heads", 0, 100_000),
                 ("linear_num_value_heads", 0, 100_000), ("linear_key_head_dim", 0, 100_000),
                 ("linear_value_head_dim", 0, 100_000), ("linear_conv_kernel", 0, 1_000),
                 ("moe_layer_step", 0, 10_000))


#: the config.json key a ModelSpec field is read from, for messages
CONFIG_KEYS = {"num_layers": "num_hidden_layers", "num_kv_heads": "num_key_value_heads",
               "max_context": "max_position_embeddings", "num_experts": "num_local_experts / num_experts",
               "experts_per_token": "num_experts_per_tok", "num_shared_experts": "n_shared_experts",
               "first_dense_layers": "first_k_dense_replace"}


def _check_config_spec(spec: ModelSpec, name: str) -> None:
    """One line naming the first shape field of a config that no model can have (negative, infinite,
    absurdly large), instead of negative memory or an exhausted machine."""
    for field_, lo, hi in CONFIG_BOUNDS:
        v = getattr(spec, field_)
        if not lo <= v <= hi:
            shown = "infinite" if v == -1 else f"{v:,}"
            key = CONFIG_KEYS.get(field_, field_)
            raise GpucostError(f"{name}: {key} is {shown}; it must be a whole number from {lo:,} to {hi:,}")
    if spec.num_kv_heads > spec.num_attention_heads:
        raise GpucostError(f"{name}: {spec.num_kv_heads} key/value heads but only {spec.num_attention_heads} "
                           "attention heads")
    if spec.num_experts and spec.experts_per_token > spec.num_experts:
        raise GpucostError(f"{name}: num_experts_per_tok is {spec.experts_per_token:,} but the model has only "
                           f"{spec.num_experts:,} experts ({CONFIG_KEYS['num_experts']}); it must be from 1 to "
                           f"{spec.num_experts:,}")


def parse_config_json(data: str | bytes, label: str) -> dict:
    """A config.json's content (text, or bytes as uploaded or fetched) as a dict; one line naming ``label``
    when it is not readable JSON or not an object."""
    try:
        cfg = json.loads(data.decode("utf-8-sig") if isinstance(data, bytes) else data)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise GpucostError(f"{label}: not a readable JSON config ({type(exc).__name__})") from None
    if not isinstance(cfg, dict):
        raise GpucostError(f"{label}: not a JSON object")
    return cfg


def load_config_file(path: str | Path) -> ModelSpec:
    """A :class:`ModelSpec` from a local ``config.json``."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GpucostError(f"{p}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GpucostError(f"{p}: not a readable JSON config ({type(exc).__name__})") from None
    cfg = parse_config_json(text, str(p))
    spec = spec_from_hf_config(cfg, name=p.name)
    if spec.id == p.name:
        spec = replace(spec, id=p.parent.name or p.name, name=str(p))
    return spec


#: seconds to wait for the Hub (HF_ENDPOINT, e.g. a mirror) to accept a connection before saying "offline"
HUB_CONNECT_TIMEOUT_S = 2.0


def _check_reachable(repo_id: str, instead: str = "Use --config FILE with a local copy of its config.json") -> None:
    """One quick TCP connection to the Hub (or the HF_ENDPOINT mirror): offline answers in about a second
    with one line instead of huggingface_hub's five retries with back-off (about 24 s and a dozen lines)."""
    import socket
    from urllib.parse import urlsplit

    url = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "huggingface.co", port), timeout=HUB_CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise GpucostError(f"'{repo_id}' is not in the catalog and {url.hostname} cannot be reached "
                           f"({exc.strerror or type(exc).__name__}): offline? {instead}") from None


def fetch_hf_config(repo_id: str) -> dict:
    """Download (or read from the hub cache) ``config.json`` of a Hugging Face repo — the only network
    access of gpucost's engines. Raises GpucostError with one line when offline or not found."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        raise GpucostError(f"'{repo_id}' is not in the catalog and HF_HUB_OFFLINE is set: cannot fetch its "
                           "config.json (use --config FILE with a local copy)")
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.utils import HfHubHTTPError
    except ImportError:
        raise GpucostError(f"'{repo_id}' is not in the catalog and huggingface_hub is not installed to fetch "
                           "its config.json (pip install huggingface_hub, or use --config FILE)") from None
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(repo_id=repo_id, filename="config.json")
    if isinstance(cached, str):
        path = cached
    else:
        _check_reachable(repo_id)
        try:
            path = hf_hub_download(repo_id=repo_id, filename="config.json")
        except HfHubHTTPError as exc:
            status = getattr(getattr(exc, "response", None), "status_code", None)
            raise GpucostError(f"cannot fetch config.json of '{repo_id}' from Hugging Face (HTTP {status}: "
                               "gated, private or not found)") from None
        except Exception as exc:  # noqa: BLE001 - network errors come in many types; all are one line here
            raise GpucostError(f"cannot fetch config.json of '{repo_id}': offline or Hugging Face unreachable "
                               f"({type(exc).__name__}); use --config FILE with a local copy") from None
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


#: the largest config.json read into memory from the Hub (a real one is a few KB)
HUB_CONFIG_MAX_BYTES = 1 << 20
HUB_READ_TIMEOUT_S = 10.0
_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")


def read_hf_config(repo_id: str) -> dict:
    """``config.json`` of a Hugging Face repo read into memory, nothing written (the public app's pages:
    a visitor's request must not write on the server's disk); one line on any failure. The CLI uses
    :func:`fetch_hf_config`, which keeps the hub library's cache."""
    import urllib.error
    import urllib.request

    repo_id = str(repo_id).strip()
    if not _REPO_ID.fullmatch(repo_id) or ".." in repo_id:
        raise GpucostError(f"'{repo_id[:100]}' is not a Hugging Face repo id (owner/name)")
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        raise GpucostError(f"'{repo_id}': HF_HUB_OFFLINE is set, its config.json cannot be fetched")
    _check_reachable(repo_id, "Upload its config.json instead")
    base = (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
    url = f"{base}/{repo_id}/resolve/main/config.json"
    try:
        with urllib.request.urlopen(url, timeout=HUB_READ_TIMEOUT_S) as resp:  # noqa: S310 - the Hub's URL
            body = resp.read(HUB_CONFIG_MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise GpucostError(f"cannot fetch config.json of '{repo_id}' from Hugging Face (HTTP {exc.code}: "
                           "gated, private or not found)") from None
    except (OSError, ValueError) as exc:
        raise GpucostError(f"cannot fetch config.json of '{repo_id}': offline or Hugging Face unreachable "
                           f"({type(exc).__name__})") from None
    if len(body) > HUB_CONFIG_MAX_BYTES:
        raise GpucostError(f"config.json of '{repo_id}' is larger than {HUB_CONFIG_MAX_BYTES // 1024} KB")
    return parse_config_json(body, f"config.json of '{repo_id}'")


# --------------------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------------------

def _alias_index(m) -> dict[str, str]:
    index: dict[str, str] = {}
    for mid, repo, al in zip(m["id"], m["hf_repo"].fillna(""), m["aliases"].fillna(""), strict=True):
        for name in [mid, repo, *str(al or "").split(";")]:
            if name and name.strip():
                index.setdefault(normalize_name(name), mid)
                index.setdefault(name.strip().lower(), mid)
    return index


def model_names(catalog: Catalog) -> list[str]:
    m = catalog.table("models")
    return list(m["id"]) + [r for r in m["hf_repo"] if r]


def model_index(catalog: Catalog) -> dict[str, str]:
    """Normalized id, repo id and every alias → model id (once per loaded models table)."""
    return derived(catalog.table("models"), "model_alias_index", _alias_index)


def model_id(name: str, catalog: Catalog | None = None) -> str | None:
    """The catalog id for an id, HF repo id or alias (case-insensitive), or None."""
    catalog = catalog or Catalog()
    index = model_index(catalog)
    return index.get(str(name).strip().lower()) or index.get(normalize_name(name))


def resolve_model(name: str | None = None, *, config: str | Path | None = None, catalog: Catalog | None = None,
                  fetch: bool = True) -> ModelSpec:
    """The :class:`ModelSpec` for a catalog name (id, HF repo id, alias), a local config.json, or — when
    ``fetch`` — a Hugging Face repo id fetched through :func:`fetch_hf_config`.

    Unknown names raise UnknownNameError with the closest catalog names.
    """
    if config is not None:
        return load_config_file(config)
    if not name or not str(name).strip():
        raise GpucostError("give a model (--model NAME) or a config.json (--config FILE)")
    catalog = catalog or Catalog()
    mid = model_id(name, catalog)
    if mid is not None:
        return catalog_spec(mid, catalog)
    looks_like_repo = "/" in str(name) and not str(name).startswith((".", "/")) and str(name).count("/") == 1
    if looks_like_repo and fetch:
        spec = spec_from_hf_config(fetch_hf_config(str(name).strip()), name=str(name))
        return replace(spec, id=str(name).strip(), name=str(name).strip(), hf_repo=str(name).strip(),
                       source="huggingface")
    raise UnknownNameError("model", str(name), model_names(catalog),
                           hint="or a Hugging Face repo id 'org/name', or --config FILE")


def catalog_spec(mid: str, catalog: Catalog) -> ModelSpec:
    """The catalog model ``mid`` (KeyError when models.csv has no such id); built once per loaded table."""
    specs = derived(catalog.table("models"), "catalog_specs_by_id",
                    lambda df: {str(r["id"]): spec_from_row(r) for r in df.to_dict(orient="records")})
    return specs[mid]


def catalog_specs(catalog: Catalog) -> list[ModelSpec]:
    """Every catalog model, in table order."""
    return [spec_from_row(r) for r in catalog.table("models").to_dict(orient="records")]


# --------------------------------------------------------------------------------------------------
# Tensors and parameter counts
# --------------------------------------------------------------------------------------------------

def weight_tensors(spec: ModelSpec) -> list[TensorGroup]:
    """The model's weights as tensor groups (see module docstring). Diffusion models (no LLM
    architecture) are one group ``other`` of ``params_total`` values."""
    if not spec.is_llm:
        return [TensorGroup("other", 0, int(spec.params_total))]
    h, L, V = spec.hidden_size, spec.num_layers, spec.vocab_size
    all_layers = tuple(range(L))
    groups = [TensorGroup("token_embd", h, h * V)]
    if not spec.tie_embeddings:
        groups.append(TensorGroup("output", h, h * V))
    # attention
    if spec.is_mla:
        nh, rope, nope, vd = spec.num_attention_heads, spec.qk_rope_head_dim, spec.qk_nope_head_dim, spec.v_head_dim
        if spec.q_lora_rank:
            groups.append(TensorGroup("attn_q_a", h, h * spec.q_lora_rank, all_layers, True))
            groups.append(TensorGroup("attn_q_b", spec.q_lora_rank, spec.q_lora_rank * nh * (nope + rope),
                                      all_layers, True))
        else:
            groups.append(TensorGroup("attn_q", h, h * nh * (nope + rope), all_layers, True))
        groups.append(TensorGroup("attn_kv_a_mqa", h, h * (spec.kv_lora_rank + rope), all_layers, True))
        groups.append(TensorGroup("attn_kv_b", spec.kv_lora_rank, spec.kv_lora_rank * nh * (nope + vd),
                                  all_layers, True))
        groups.append(TensorGroup("attn_output", nh * vd, nh * vd * h, all_layers, True))
    else:
        attn = spec.attention_layers
        q_out = spec.q_dim * (2 if spec.family in GATED_ATTENTION_FAMILIES else 1)  # + the output gate
        groups.append(TensorGroup("attn_q", h, h * q_out, attn, True))
        groups.append(TensorGroup("attn_k", h, h * spec.kv_dim, attn, True))
        groups.append(TensorGroup("attn_v", h, h * spec.kv_dim, attn, True))
        groups.append(TensorGroup("attn_output", spec.q_dim, spec.q_dim * h, attn, True))
    if spec.is_hybrid:  # Gated DeltaNet: in_proj_qkvz, in_proj_ba, the causal conv1d, out_proj
        lin = spec.linear_layers
        key = spec.linear_num_key_heads * spec.linear_key_head_dim
        val = spec.linear_num_value_heads * spec.linear_value_head_dim
        groups.append(TensorGroup("ssm_in", h, h * (2 * key + 2 * val), lin, True))
        groups.append(TensorGroup("ssm_ba", h, h * 2 * spec.linear_num_value_heads, lin))
        groups.append(TensorGroup("ssm_conv1d", spec.linear_conv_kernel,
                                  spec.linear_conv_channels * spec.linear_conv_kernel, lin))
        groups.append(TensorGroup("ssm_out", val, val * h, lin, True))
    # feed-forward
    moe_layers = spec.moe_layer_ids
    dense_layers = tuple(i for i in all_layers if i not in set(moe_layers))
    inter = spec.intermediate_size
    if dense_layers:
        if spec.gated_mlp:
            groups.append(TensorGroup("ffn_gate", h, h * inter, dense_layers, True))
        groups.append(TensorGroup("ffn_up", h, h * inter, dense_layers, True))
        groups.append(TensorGroup("ffn_down", inter, inter * h, dense_layers, True))
    if moe_layers:
        mi, E = spec.moe_intermediate_size or inter, spec.num_experts
        groups.append(TensorGroup("ffn_gate_inp", h, h * E, moe_layers))
        groups.append(TensorGroup("ffn_gate_exps", h, h * mi * E, moe_layers, True))
        groups.append(TensorGroup("ffn_up_exps", h, h * mi * E, moe_layers, True))
        groups.append(TensorGroup("ffn_down_exps", mi, mi * h * E, moe_layers, True))
        if spec.num_shared_experts:
            si = mi * spec.num_shared_experts
            groups.append(TensorGroup("ffn_gate_shexp", h, h * si, moe_layers, True))
            groups.append(TensorGroup("ffn_up_shexp", h, h * si, moe_layers, True))
            groups.append(TensorGroup("ffn_down_shexp", si, si * h, moe_layers, True))
            if spec.family in GATED_ATTENTION_FAMILIES:  # shared_expert_gate: hidden → 1
                groups.append(TensorGroup("ffn_gate_inp_shexp", h, h, moe_layers))
    groups.append(TensorGroup("norm", h, _vector_params(spec)))
    return groups


def _vector_params(spec: ModelSpec) -> int:
    """1-D parameters (norm weights, biases) of the whole model [values]."""
    h, L = spec.hidden_size, spec.num_layers
    per_norm = 2 * h if spec.family in LAYERNORM_BIAS_FAMILIES else h
    n = NORMS_PER_LAYER.get(spec.family, 2) * per_norm * L + per_norm  # + final norm
    if spec.family in QKV_BIAS_FAMILIES:
        n += (spec.q_dim + 2 * spec.kv_dim) * L
    if spec.family in LAYERNORM_BIAS_FAMILIES:  # biases on every Linear (StarCoder2 use_bias)
        n += h * L + (spec.intermediate_size + h) * L
    if spec.family in QK_NORM_FAMILIES:
        n += 2 * spec.head_dim * L
    if spec.is_hybrid:
        # q/k norms of the full-attention layers; per Gated DeltaNet layer dt_bias and A_log (one per value
        # head) and the gated RMSNorm over a value head
        n += 2 * spec.head_dim * len(spec.attention_layers)
        n += (2 * spec.linear_num_value_heads + spec.linear_value_head_dim) * len(spec.linear_layers)
    if spec.is_mla:
        n += (spec.q_lora_rank + spec.kv_lora_rank) * L  # q_a_layernorm, kv_a_layernorm
    if spec.is_moe and spec.family == "deepseek_v3":
        n += spec.num_experts * spec.moe_layers  # e_score_correction_bias
    return n


def count_parameters(spec: ModelSpec) -> tuple[float, float]:
    """(total, active per token) parameters counted from the architecture."""
    groups = weight_tensors(spec)
    total = sum(g.total for g in groups)
    if not spec.is_moe:
        return total, total
    inactive = 0.0
    for g in groups:
        if g.kind.endswith("_exps"):
            inactive += g.total * (1 - spec.experts_per_token / spec.num_experts)
    return total, total - inactive


def param_split(spec: ModelSpec) -> dict[str, float]:
    """Parameters by role [values]: embed, output, blocks (per-layer matrices), vectors, extra.

    ``extra`` is the published total minus what the architecture accounts for (vision towers of
    multimodal checkpoints, multi-token-prediction heads), never negative.
    """
    groups = weight_tensors(spec)
    out = {"embed": 0.0, "output": 0.0, "blocks": 0.0, "vectors": 0.0, "router": 0.0, "extra": 0.0}
    for g in groups:
        if g.kind == "token_embd":
            out["embed"] += g.total
        elif g.kind == "output":
            out["output"] += g.total
        elif g.kind == "norm":
            out["vectors"] += g.total
        elif g.kind == "ffn_gate_inp":
            out["router"] += g.total
        elif g.kind == "other":
            out["extra"] += g.total
        else:
            out["blocks"] += g.total
    counted = sum(out.values())
    if spec.is_llm and spec.params_total > counted:
        out["extra"] = spec.params_total - counted
    return out


def lora_trainable_params(spec: ModelSpec, rank: int, targets: str | tuple[str, ...] = "all-linear") -> float:
    """Exact LoRA parameters: for each adapted Linear of shape (in, out), rank × (in + out)
    (LoRA paper, arXiv 2106.09685: W + BA with B ∈ R^{out×r}, A ∈ R^{r×in}).

    targets : "all-linear" (every projection in the decoder blocks, PEFT's target_modules="all-linear"),
              "attention" (q, k, v, o), "qkv" (q, k and v: a fused QKV projection such as Qwen 1's c_attn,
              ChatGLM's query_key_value or Baichuan's W_pack, ms-swift 1.x's default), "qv" (q and v, the LoRA
              paper's choice), or a tuple of tensor kinds.
              Mixture-of-experts weights count once per expert.
    """
    if rank < 1:
        raise GpucostError(f"LoRA rank must be a whole number >= 1, not {rank}")
    if not spec.is_llm:
        raise GpucostError(f"{spec.id}: LoRA estimates need a language-model architecture")
    if isinstance(targets, str):
        if targets not in LORA_TARGETS:
            raise UnknownNameError("LoRA target set", targets, LORA_TARGETS)
        kinds = LORA_TARGETS[targets]
    else:
        kinds = tuple(targets)
    n = 0.0
    for g in weight_tensors(spec):
        if not g.trainable_lora or (kinds != "all" and g.kind not in kinds):
            continue
        experts = spec.num_experts if g.kind.endswith("_exps") else 1
        in_f = g.ne0
        out_f = g.numel // (in_f * experts)
        n += rank * (in_f + out_f) * experts * g.count
    return n




def layer_params(spec: ModelSpec) -> float:
    """Parameters of the largest decoder layer [values] (what ZeRO-3/FSDP gathers at once)."""
    if not spec.is_llm:
        return spec.params_total
    per = np.zeros(spec.num_layers)
    for g in weight_tensors(spec):
        if g.layers is not None:
            per[list(g.layers)] += g.numel
    return float(per.max())
