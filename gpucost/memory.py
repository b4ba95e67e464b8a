"""Memory fit: how much memory a model takes per GPU — to serve it or to train it — and on which cards,
how many of them, how long a context and how large a batch fit.

All figures are GiB (2^30 bytes) per GPU unless a name says otherwise. Pure functions over
:class:`~gpucost.models.ModelSpec`, :class:`~gpucost.quant.QuantFormat` and the catalog; the whole fit
matrix (models × formats × cards) is computed with numpy in one pass (:func:`fit_matrix`) by the same
formulas the scalar :func:`estimate` uses (:func:`_inference_bytes`, :func:`gpucost.memory_training.training_bytes`).

Inference, per GPU
    weights      the format's bytes for the tensors this GPU holds (:mod:`gpucost.quant`); tensor
                 parallel divides the matrices by N, layer split gives each GPU L/N layers; llama.cpp keeps
                 the token-embedding table in host memory (llama-model.cpp: "there is very little benefit
                 to offloading the input layer, so always keep it on the CPU")
    kv_cache     values per token per layer × layers × tokens × batch × bytes of the cache dtype:
                 2 × KV heads × head_dim for (grouped/multi-query) attention, kv_lora_rank +
                 qk_rope_head_dim for MLA; sliding-window layers hold at most the window (engines that
                 implement it); tensor parallel splits KV heads (replicated when N > KV heads)
    activations  the engine's transient peak for one forward pass (:data:`ENGINE_PROFILES`)
    overhead     the CUDA context of the process
Training, per GPU (mixed precision as in the ZeRO paper, Rajbhandari et al. 2020, arXiv 1910.02054,
section 3.1: 2Ψ fp16 weights + 2Ψ fp16 gradients + KΨ optimizer states, K = 12 for Adam: fp32 master
copy, momentum and variance; ZeRO stage 1 divides the K term by N, stage 2 also the gradients, stage 3
also the weights), activations per micro-batch (:func:`training_activation_bytes`), LoRA/QLoRA; ``overhead`` is
the CUDA context and what PyTorch's caching allocator reserves above the allocated peak, in proportion to what a
step frees and allocates again (:func:`gpucost.memory_training.reserve_ratio`). A card must hold the allocated peak, the least reserve runs keep
(:func:`gpucost.memory_training.reserve_floor`) and the CUDA context (:attr:`Estimate.need_gib`); the rest of the
reserve is cached blocks the allocator gives back when the card is full (:meth:`Estimate.reserved_on`): a card
that holds the need but not the whole reserve is a tight fit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from gpucost.errors import GpucostError, UnknownNameError
from gpucost.i18n import Message
from gpucost.memory_profiles import (  # noqa: F401 (part of this module's API)
    ACT_BYTES,
    CUDA_CONTEXT_GIB,
    DIFFUSION_DEFAULT_SIZE,
    DIFFUSION_DEFAULT_SIZE_OTHER,
    ENGINE_PROFILES,
    ENGINES,
    F32_BYTES,
    HF_HIDDEN_LIVE,
    HF_MLP_LIVE,
    INFERENCE_GPU_COUNTS,
    LLAMACPP_HIDDEN_LIVE,
    LLAMACPP_MLP_LIVE,
    LOSS_KERNELS,
    MODES,
    OFFLOADS,
    OPTIMIZERS,
    PRECISIONS,
    SGLANG_FRACTION_BY_TP,
    TRAINING_FRAMEWORKS,
    VAE_CHANNELS,
    VAE_LIVE_TENSORS,
    ZERO3_LIVE_LAYERS,
    ZERO_REDUCE_BUCKET,
    EngineProfile,
    Optimizer,
    TrainingProfile,
    holds_two_kv_caches,
)
from gpucost.memory_training import (  # noqa: F401 (part of this module's API)
    TRAINING_TERMS,
    steps_fp32_copies,
    training_activation_bytes,
    training_bytes,
    training_profile,
    training_terms,
)
from gpucost.models import QK_NORM_FAMILIES, ModelSpec, layer_params, lora_trainable_params, weight_tensors
from gpucost.quant import (
    GIB,
    KV_DTYPE_BYTES,
    QuantFormat,
    check_format_for_gpu,
    weight_bytes,
    weights_file_gib,
)
from gpucost.serialize import Record, fields_dict, jsonable, number
from gpucost.specs import DEFAULTS, SHARDERS

# --------------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Breakdown(Record):
    """Memory of one GPU by component [GiB]."""

    weights: float = 0.0
    kv_cache: float = 0.0
    activations: float = 0.0
    gradients: float = 0.0
    optimizer: float = 0.0
    overhead: float = 0.0

    @property
    def total(self) -> float:
        return self.weights + self.kv_cache + self.activations + self.gradients + self.optimizer + self.overhead

    def to_dict(self) -> dict:
        return fields_dict(self, total=self.total)


@dataclass(frozen=True)
class Setup:
    """What is being run. Units: tokens, sequences, GPUs."""

    mode: str = "inference"
    context: int = 4096              # [tokens] per sequence held in the KV cache (inference) / sequence length (training)
    batch: int = 1                   # [sequences] concurrent (inference) / micro-batch per GPU (training)
    gpus: int = 1
    engine: str = "transformers"     # inference engine, or training framework (transformers | torchtune)
    zero: int = 0
    #: training: what shards the states over the cards at ``zero`` 1-3: deepspeed (ZeRO; its FusedAdam updates in
    #: place) or fsdp (PyTorch FSDP; torch's AdamW steps each shard with a state-sized temporary)
    sharder: str = DEFAULTS.sharder
    offload: str = "none"
    lora_rank: int = 16
    lora_targets: str = "all-linear"
    kv_dtype: str = "fp16"
    parallel: str | None = None      # tensor | layer; None: the engine's default
    tp: int = 1                      # training: tensor-parallel ranks (Megatron-style)
    pp: int = 1                      # training: pipeline stages
    prompt: int | None = None        # [tokens] in the largest forward pass; None: the whole context
    gpu_layers: int | None = None    # llama.cpp -ngl: layers on the GPU (None: all)
    cpu_moe: int = 0                 # llama.cpp --n-cpu-moe: the experts of the first N layers in CPU RAM
    images: int = 0                  # images per sequence (a vision-language model): their tokens join the context
    flash_attention: bool = True
    grad_checkpointing: bool = True
    optimizer: str | None = None     # None: adamw (full, lora) / paged-adamw (qlora)
    optimizer_in_backward: bool | None = None
    image_size: int | None = None    # diffusion [pixels per side]
    #: the date the engine's or framework's behaviour is taken at (training: data/training_profiles.csv; inference:
    #: transformers' KV cache layout, memory_profiles.holds_two_kv_caches); None: the newest
    framework_as_of: str | None = None
    loss_kernel: str | None = None   # training: a fused loss that keeps no logits (LOSS_KERNELS); None: the framework's
    #: training: the caching allocator's reserved ÷ allocated peak (None: data/allocator.csv's)
    reserve_ratio: float | None = None
    #: training: the least reserved ÷ allocated a run keeps when the card is full (None: data/allocator.csv's p10)
    reserve_floor: float | None = None
    #: training: LoRA dropout probability (None: the framework's default, data/training_profiles.csv lora_dropout)
    lora_dropout: float | None = None
    #: training: mixed (16-bit weights and gradients, fp32 master and optimizer states), bf16 (everything bf16: a
    #: model loaded in bf16 and trained so) or fp32 (PRECISIONS); None: the framework's default
    precision: str | None = None
    #: training: K and V repeated to every query head before attention (None: the framework's, gqa_expand in
    #: data/training_profiles.csv; FlashAttention-2 never repeats them)
    gqa_expand: bool | None = None
    #: training: gradient accumulation steps per optimizer step. With 2 or more the gradients stay on the card while
    #: the next micro-batch keeps its activations; with 1 they never coexist (the peak is the backward pass or the
    #: optimizer step). None: not known — taken as 2 or more, the side that does not under-estimate
    grad_accum: int | None = None

    @property
    def is_training(self) -> bool:
        return self.mode != "inference"

    @property
    def model_parallel(self) -> int:
        """GPUs one copy of the model is split over (tensor × pipeline); the rest is data parallel."""
        return self.tp * self.pp if self.is_training else 1


@dataclass(frozen=True)
class Estimate(Record):
    """A memory estimate: per-GPU breakdown [GiB], what lands in CPU RAM and on NVMe for the whole job (all
    GPUs together) [GiB], the weights file."""

    model: str
    quant: str
    setup: Setup
    per_gpu: Breakdown
    cpu_gib: float
    nvme_gib: float
    weights_file_gib: float
    trainable_params: float = 0.0
    notes: tuple[str, ...] = ()
    #: training: the peak's parts by what holds them [GiB], largest first (TRAINING_TERMS names them)
    terms: tuple[tuple[str, float], ...] = ()
    #: training: what the caching allocator reserves above the allocated peak, per GPU [GiB] (in ``per_gpu.overhead``)
    reserve_gib: float = 0.0
    #: training: the part of that reserve the allocator keeps when the card is full [GiB] (Setup.reserve_floor)
    reserve_kept_gib: float = 0.0

    @property
    def dominant_term(self) -> str | None:
        """The part of a training peak that holds the most memory (None for inference)."""
        return self.terms[0][0] if self.terms else None

    @property
    def total_gib(self) -> float:
        return self.per_gpu.total

    @property
    def engine_gib(self) -> float:
        """What the engine itself takes from the card (per GPU), i.e. without the CUDA context: the figure that
        allocator statistics (a training run's torch.cuda.max_memory_reserved) and llama.cpp's logs report."""
        return self.per_gpu.total - CUDA_CONTEXT_GIB

    @property
    def allocated_gib(self) -> float:
        """The allocated peak (per GPU): torch.cuda.max_memory_allocated — the engine's figure less what the caching
        allocator reserves above it (training; the same as :attr:`engine_gib` for inference)."""
        return self.engine_gib - self.reserve_gib

    @property
    def kept_gib(self) -> float:
        """Training: what a run allocates once and keeps (per GPU) — its weights and optimizer states; the allocator's
        reserve grows with the rest, what each step frees and allocates again
        (:func:`gpucost.memory_training.reserve_ratio`). 0 for inference."""
        t = dict(self.terms)
        return t.get("weights", 0.0) + t.get("optimizer", 0.0)

    @property
    def need_gib(self) -> float:
        """What a card must hold for the run to go on (per GPU): the allocated peak, the part of the allocator's
        reserve it keeps when the card is full (:attr:`reserve_kept_gib`) and the CUDA context (training; the total
        for inference)."""
        return self.per_gpu.total - self.reserve_gib + self.reserve_kept_gib

    def reserved_on(self, vram_gib: float) -> float:
        """The engine's reserved peak on a card of ``vram_gib`` GiB (torch.cuda.max_memory_reserved): the estimate
        (:attr:`engine_gib`) where the card has room for it; on a smaller card it stops at the card less the CUDA
        context, never below the need less the context — when cudaMalloc fails, PyTorch's caching allocator frees
        its unused cached segments and retries (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator::malloc:
        release_available_cached_blocks, then release_cached_blocks) instead of failing."""
        return max(self.need_gib - CUDA_CONTEXT_GIB, min(self.engine_gib, vram_gib - CUDA_CONTEXT_GIB))

    def to_dict(self) -> dict:
        s = self.setup
        return jsonable({"model": self.model, "quant": self.quant, "mode": s.mode, "engine": s.engine,
                         "context": s.context, "batch": s.batch, "gpus": s.gpus, "zero": s.zero,
                         "sharder": s.sharder, "offload": s.offload,
                         "per_gpu_gib": self.per_gpu, "cpu_gib": self.cpu_gib, "nvme_gib": self.nvme_gib,
                         "weights_file_gib": self.weights_file_gib, "trainable_params": self.trainable_params,
                         "notes": self.notes, **({"terms_gib": dict(self.terms), "dominant_term": self.dominant_term,
                                                     "allocated_peak_gib": self.allocated_gib,
                                                     "allocator_reserve_gib": self.reserve_gib}
                                                 if self.terms else {})})


@dataclass(frozen=True)
class CardFit(Record):
    """Whether and on how many of one card the setup fits."""

    gpu: str
    name: str
    vram_gib: float
    min_gpus: int | None
    fits_on_one: bool
    reason: str
    usable_gib: float
    per_gpu_gib: float | None
    #: what nvidia-smi will show on each card [GiB]: the need, or a pre-allocating engine's share
    occupied_gib: float | None = None
    #: what each card must hold [GiB]: ``per_gpu_gib`` less the allocator's reserve (training; the same for inference)
    need_gib: float | None = None



# --------------------------------------------------------------------------------------------------
# Model arrays: what the formulas need from a (model, format) pair, as numpy columns
# --------------------------------------------------------------------------------------------------

_ARRAY_FIELDS = ("embed_b", "output_b", "blocks_b", "vectors_b", "total_b", "L", "h", "heads", "kv_heads",
                 "kv_vals", "kv_vals_expanded", "n_full", "n_swa", "window", "vocab", "mlp_tok", "gated",
                 "is_mla", "is_llm", "tied", "params", "params_active", "layer_params", "largest_tensor",
                 "largest_block", "state_vals", "expert_b", "moe_L", "first_dense", "moe_step",
                 "image_tok", "cross_L", "qk_norm")


def _pair_arrays(spec: ModelSpec, fmt: QuantFormat) -> dict[str, float]:
    wb = weight_bytes(spec, fmt)
    if spec.is_llm:
        mlp_tok = (spec.experts_per_token * (spec.moe_intermediate_size or spec.intermediate_size)
                   + spec.num_shared_experts * (spec.moe_intermediate_size or 0)) if spec.is_moe \
            else spec.intermediate_size
        if spec.is_moe and (spec.first_dense_layers or spec.moe_layer_step > 1):
            mlp_tok = max(mlp_tok, spec.intermediate_size)
        n_swa = spec.sliding_window_layers if spec.sliding_window else 0
        n_attn = len(spec.attention_layers)  # a hybrid's Gated DeltaNet layers keep no KV cache
        groups = weight_tensors(spec)
        largest: float = max((g.numel for g in groups if g.kind != "norm"), default=0)
        # the largest matrix a quantizer converts (one Linear; an expert tensor holds E of them)
        block: float = max((g.numel / (spec.num_experts if g.kind.endswith("_exps") else 1) for g in groups
                     if g.layers is not None and g.kind != "ffn_gate_inp"), default=0)
    else:
        mlp_tok, n_swa, n_attn = 0, 0, 0
        largest, block = spec.params_total, spec.params_total
    return {
        "embed_b": wb.embed, "output_b": wb.output, "blocks_b": wb.blocks, "vectors_b": wb.vectors,
        "total_b": wb.total, "L": spec.num_layers, "h": spec.hidden_size, "heads": spec.num_attention_heads,
        "kv_heads": max(spec.num_kv_heads, 1), "kv_vals": spec.kv_values_per_token_per_layer if spec.is_llm else 0,
        "kv_vals_expanded": spec.kv_values_per_token_per_layer_expanded if spec.is_llm else 0,
        # cross-attention layers (mllama) keep the image tokens' KV, not the text's
        "n_full": n_attn - n_swa - (spec.cross_attention_layers if spec.is_llm else 0), "n_swa": n_swa,
        "window": spec.sliding_window or 0,
        "vocab": spec.vocab_size, "mlp_tok": mlp_tok, "gated": 1.0 if spec.gated_mlp else 0.0,
        "qk_norm": 1.0 if spec.family in QK_NORM_FAMILIES else 0.0,
        "is_mla": 1.0 if spec.is_mla else 0.0, "is_llm": 1.0 if spec.is_llm else 0.0,
        "tied": 1.0 if spec.tie_embeddings else 0.0, "params": spec.params_total,
        "params_active": spec.params_active, "layer_params": layer_params(spec), "largest_tensor": largest,
        "largest_block": block,
        "state_vals": len(spec.linear_layers) * spec.linear_state_values if spec.is_llm else 0,
        "expert_b": wb.expert_blocks, "moe_L": spec.moe_layers if spec.is_llm else 0,
        "first_dense": spec.first_dense_layers if spec.is_llm else 0,
        "moe_step": max(spec.moe_layer_step, 1) if spec.is_llm else 1,
        "image_tok": spec.image_tokens if spec.is_llm else 0,
        "cross_L": spec.cross_attention_layers if spec.is_llm else 0,
    }


@lru_cache(maxsize=512)  # every estimate of a page or a bisection asks for the same pair: built once, read-only
def _arrays(pairs: tuple[tuple[ModelSpec, QuantFormat], ...]) -> dict[str, np.ndarray]:
    rows = [_pair_arrays(s, f) for s, f in pairs]   # once per pair (it walks every tensor of the model)
    out = {k: np.array([r[k] for r in rows], dtype=float) for k in _ARRAY_FIELDS}
    for v in out.values():
        v.setflags(write=False)
    return out


# --------------------------------------------------------------------------------------------------
# Inference
# --------------------------------------------------------------------------------------------------

#: bytes per value of a Gated DeltaNet layer's recurrent and conv state: llama.cpp keeps recurrent states in
#: F32 (src/llama-model.cpp create_memory: llama_memory_recurrent with GGML_TYPE_F32 for r and s); vLLM and
#: the others in the model's dtype (vLLM --mamba-ssm-cache-dtype auto)
STATE_BYTES = {"llamacpp": 4.0}
STATE_BYTES_DEFAULT = 2.0


def kv_cache_bytes(a: dict, context, batch, kv_bytes: float, profile: EngineProfile, image_tokens=0.0,
                   cache_passes: float = 1.0):
    """KV cache of all layers [bytes] for ``batch`` sequences of ``context`` tokens (arrays broadcast), with
    a hybrid model's fixed recurrent state per sequence (its linear-attention layers keep no KV cache) and a
    cross-attention model's (mllama) ``image_tokens`` per sequence in its cross-attention layers.
    ``cache_passes``: the KV part counted that many times (a decode step's traffic, ``EngineProfile.kv_passes``);
    the recurrent state, updated in place, once."""
    ctx = np.asarray(context, dtype=float)
    vals = np.where(a["is_mla"] > 0, a["kv_vals"] if profile.kv_mla_compressed else a["kv_vals_expanded"],
                    a["kv_vals"])
    if profile.kv_sliding_window:
        tokens_layers = a["n_full"] * ctx + a["n_swa"] * np.minimum(ctx, a["window"])
    else:
        tokens_layers = (a["n_full"] + a["n_swa"]) * ctx
    tokens_layers = tokens_layers + a["cross_L"] * np.asarray(image_tokens, dtype=float)
    state = a["state_vals"] * STATE_BYTES.get(profile.activation_model, STATE_BYTES_DEFAULT)
    return (vals * tokens_layers * kv_bytes * cache_passes + state) * np.asarray(batch, dtype=float)


def cpu_moe_share(a: dict, n: int) -> np.ndarray:
    """The share of a model's MoE layers among its first ``n`` layers (llama.cpp ``--n-cpu-moe n`` keeps
    their expert tensors in CPU RAM): MoE layers are i in [first_dense, L) with (i + 1) % step == 0, so
    those below n number ⌊min(n, L) / step⌋ − ⌊first_dense / step⌋. Vectorized over models."""
    if not n:
        return np.zeros_like(a["moe_L"])
    step = np.maximum(a["moe_step"], 1)
    count = np.maximum(np.floor(np.minimum(float(n), a["L"]) / step) - np.floor(a["first_dense"] / step), 0)
    return np.where(a["moe_L"] > 0, count / np.maximum(a["moe_L"], 1), 0.0)


def _inference_bytes(a: dict, N, s: Setup, profile: EngineProfile) -> dict[str, np.ndarray]:
    """Per-GPU bytes by component (the most loaded GPU) and CPU bytes, for GPU counts ``N`` (broadcast)."""
    N = np.asarray(N, dtype=float)
    ctx: Any = float(s.context)
    batch = float(s.batch)
    prompt: Any = float(s.prompt if s.prompt is not None else s.context)
    image_kv: Any = 0.0
    if s.images:  # each image is image_tokens tokens of the prompt and of the KV cache, on top of the text —
        # or, for a cross-attention model (mllama), of its cross-attention layers' KV cache only
        img = s.images * a["image_tok"]
        own = np.where(a["cross_L"] > 0, 0.0, img)
        ctx, prompt, image_kv = ctx + own, prompt + own, img - own
    kv_bytes = KV_DTYPE_BYTES[s.kv_dtype]
    parallel = s.parallel or profile.parallel
    tensor = parallel == "tensor"
    embed_gpu = a["embed_b"] if profile.embed_on_gpu else np.where(a["tied"] > 0, a["embed_b"], 0.0)
    cpu = np.zeros(np.broadcast(a["total_b"], N).shape)
    if not profile.embed_on_gpu:
        cpu = cpu + a["embed_b"]  # llama.cpp keeps the input embedding in host memory (a copy when tied)
    L = np.maximum(a["L"], 1)
    gpu_frac = 1.0
    if s.gpu_layers is not None:
        gpu_frac = np.minimum(float(s.gpu_layers), L) / L
    head_out = np.where(gpu_frac >= 1.0, a["output_b"], 0.0)
    moved = a["expert_b"] * cpu_moe_share(a, s.cpu_moe)   # --n-cpu-moe: these experts stay in CPU RAM
    blocks_gpu = a["blocks_b"] * gpu_frac - moved
    if tensor:
        weights = (blocks_gpu + embed_gpu + head_out) / N + a["vectors_b"]
    else:
        ends = np.where(N > 1, np.maximum(embed_gpu, head_out), embed_gpu + head_out)
        weights = blocks_gpu / N + ends + a["vectors_b"]
    cpu = cpu + a["blocks_b"] * (1 - gpu_frac) + moved + np.where(gpu_frac >= 1.0, 0.0, a["output_b"])
    kv_all = kv_cache_bytes(a, ctx, batch, kv_bytes, profile, image_kv)
    kv_gpu_all = kv_all * gpu_frac
    cpu = cpu + kv_all * (1 - gpu_frac)
    if tensor:
        shard = np.where(a["is_mla"] > 0, 1.0, np.maximum(a["kv_heads"] / N, 1.0) / a["kv_heads"])
        kv = kv_gpu_all * shard
    else:
        kv = kv_gpu_all / N
    if holds_two_kv_caches(s.engine, s.framework_as_of):
        kv = 2 * kv
    act = _inference_activation_bytes(a, N if tensor else 1.0, ctx, batch, prompt, s.flash_attention, profile)
    overhead = np.full(np.broadcast(weights, kv).shape, CUDA_CONTEXT_GIB * GIB)
    llm = a["is_llm"] > 0
    if not np.all(llm):  # diffusion: weights + VAE allowance, no KV cache
        size = float(s.image_size or DIFFUSION_DEFAULT_SIZE_OTHER)
        vae = VAE_LIVE_TENSORS * size * size * VAE_CHANNELS * ACT_BYTES * batch
        weights = np.where(llm, weights, a["total_b"])
        kv = np.where(llm, kv, 0.0)
        act = np.where(llm, act, vae)
        cpu = np.where(llm, cpu, 0.0)
    shape = np.broadcast(weights, kv, act, overhead).shape
    return {"weights": np.broadcast_to(weights, shape), "kv_cache": np.broadcast_to(kv, shape),
            "activations": np.broadcast_to(act, shape), "gradients": np.zeros(shape),
            "optimizer": np.zeros(shape), "overhead": np.broadcast_to(overhead, shape),
            "cpu": np.broadcast_to(cpu, shape), "nvme": np.zeros(shape)}


def _inference_activation_bytes(a, N_tp, ctx, batch, prompt, flash, profile: EngineProfile):
    """Transient activation peak of one forward pass [bytes] (see the constants above)."""
    h, heads, vocab = a["h"], a["heads"], a["vocab"]
    mlp_live = np.where(a["gated"] > 0, HF_MLP_LIVE["gated"], HF_MLP_LIVE["ungated"]) * a["mlp_tok"]
    tokens = prompt * batch
    if profile.prefill_chunk is not None and profile.activation_model == "vllm":
        tokens = np.minimum(tokens, profile.prefill_chunk)
    if profile.activation_model == "llamacpp":
        ub = min(float(profile.prefill_chunk or 512), tokens)
        n_ctx = ctx * batch
        attn = ub * n_ctx * (F32_BYTES * heads if not flash else ACT_BYTES)
        ffn = np.where(a["gated"] > 0, LLAMACPP_MLP_LIVE["gated"], LLAMACPP_MLP_LIVE["ungated"]) \
            * a["mlp_tok"] * ub * F32_BYTES
        out = ub * vocab * F32_BYTES
        return np.maximum(np.maximum(attn, ffn), out) + LLAMACPP_HIDDEN_LIVE * ub * h * F32_BYTES
    mlp = tokens * (mlp_live / N_tp + HF_HIDDEN_LIVE * h) * ACT_BYTES
    attn = 0.0 if flash else 2 * (heads / N_tp) * prompt * prompt * batch * ACT_BYTES
    logits = batch * vocab * F32_BYTES
    return mlp + attn + logits


# --------------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------------

# --------------------------------------------------------------------------------------------------
# Checks and the scalar estimate
# --------------------------------------------------------------------------------------------------

def applicable_inputs(spec: ModelSpec, mode: str, engine: str) -> tuple[bool, bool]:
    """(images apply, experts in host RAM apply) for a model, mode and engine — the inputs :func:`check_setup`
    accepts only there: images for a vision-language model, ``--cpu-moe`` for a MoE model under llama.cpp,
    both for inference."""
    inference = mode == "inference"
    return inference and bool(spec.image_tokens), inference and spec.is_moe and engine == "llama.cpp"


def check_setup(spec: ModelSpec, fmt: QuantFormat, s: Setup) -> Setup:
    """Validate a setup; raise GpucostError with one line. Returns the setup with defaults resolved.
    A context beyond the model's trained one is allowed (RoPE scaling) and reported as a note."""
    if s.mode not in MODES:
        raise UnknownNameError("mode", s.mode, MODES)
    for name, val, lo in (("context", s.context, 1), ("batch", s.batch, 1), ("GPU count", s.gpus, 1)):
        if not isinstance(val, (int, np.integer)) or val < lo:
            raise GpucostError(f"{name} must be a whole number >= {lo}, not {val}")
    if s.zero not in (0, 1, 2, 3):
        raise GpucostError(f"ZeRO stage must be 0, 1, 2 or 3, not {s.zero}")
    if s.offload not in OFFLOADS:
        raise UnknownNameError("offload target", s.offload, OFFLOADS)
    if s.sharder not in SHARDERS:
        raise UnknownNameError("sharder", s.sharder, SHARDERS)
    if s.is_training:
        return _check_training(spec, fmt, s)
    _check_inference(spec, s)
    return s


def _training_format_error(mode: str, fmt: QuantFormat) -> str | None:
    """Why a training mode cannot train through ``fmt`` (None when it can)."""
    if mode == "full" and not fmt.is_float:
        return (f"full fine-tuning trains the weights in a float format (fp32, fp16, bf16), not {fmt.id}; "
                "use --mode qlora for a quantized base")
    if mode == "lora" and not fmt.is_float:
        return f"LoRA keeps the base model in a float format; with {fmt.id} use --mode qlora"
    if mode == "qlora" and (fmt.is_float or fmt.is_gguf or fmt.id.startswith("fp8")):
        return ("QLoRA needs a quantized base PyTorch can train through (bnb-nf4-dq, bnb-nf4, bnb-fp4, "
                f"bnb-int8, gptq, awq), not {fmt.id}")
    return None


def _check_parallel_split(spec: ModelSpec, s: Setup) -> None:
    if s.tp < 1 or s.pp < 1 or s.gpus % (s.tp * s.pp):
        raise GpucostError(f"{s.gpus} GPUs do not split into tensor x pipeline parallel {s.tp} x {s.pp}")
    if s.tp > 1 and spec.num_attention_heads % s.tp:
        raise GpucostError(f"tensor parallel over {s.tp} GPUs needs the {spec.num_attention_heads} attention "
                           "heads to divide evenly")
    if s.pp > spec.num_layers:
        raise GpucostError(f"{s.pp} pipeline stages are more than the model's {spec.num_layers} layers")


def _check_training(spec: ModelSpec, fmt: QuantFormat, s: Setup) -> Setup:
    if s.engine not in TRAINING_FRAMEWORKS:
        s = replace(s, engine="transformers")
    if not spec.is_llm:
        raise GpucostError(f"{spec.id}: training estimates cover language models only")
    if s.offload != "none" and s.zero == 0:
        raise GpucostError("offloading needs ZeRO stage 1, 2 or 3 (DeepSpeed offload_optimizer; "
                           "offload of parameters needs stage 3)")
    why = _training_format_error(s.mode, fmt)
    if why:
        raise GpucostError(why)
    opt = s.optimizer or ("paged-adamw" if s.mode == "qlora" else "adamw")
    if opt not in OPTIMIZERS:
        raise UnknownNameError("optimizer", opt, OPTIMIZERS)
    if s.loss_kernel is not None and s.loss_kernel not in LOSS_KERNELS:
        raise UnknownNameError("loss kernel", s.loss_kernel, LOSS_KERNELS)
    if s.mode in ("lora", "qlora") and s.lora_rank < 1:
        raise GpucostError(f"LoRA rank must be >= 1, not {s.lora_rank}")
    _check_parallel_split(spec, s)
    if s.precision is None and s.mode == "full" and fmt.id == "fp32":
        # full fine-tuning of fp32 weights keeps weights and gradients in fp32 and no second (master) copy,
        # whether or not autocast computes in 16 bits: what a paged optimizer or an offload moves off the card is
        # then the optimizer states only (bitsandbytes PR #1908's fp32 Qwen3-0.6B: PagedAdamW peaks at 5.8 GiB
        # allocated, above the weights and gradients' 4.5 GiB)
        s = replace(s, precision="fp32")
    return s


def _check_inference(spec: ModelSpec, s: Setup) -> None:
    if s.engine not in ENGINE_PROFILES:
        raise UnknownNameError("engine", s.engine, ENGINE_PROFILES)
    prof = ENGINE_PROFILES[s.engine]
    if s.kv_dtype not in KV_DTYPE_BYTES:
        raise UnknownNameError("KV-cache dtype", s.kv_dtype, KV_DTYPE_BYTES)
    if s.kv_dtype not in prof.kv_dtypes:
        raise GpucostError(f"{s.engine} has no {s.kv_dtype} KV cache (it offers {', '.join(prof.kv_dtypes)})")
    if s.parallel not in (None, "tensor", "layer"):
        raise UnknownNameError("parallel mode", str(s.parallel), ("tensor", "layer"))
    if s.gpu_layers is not None and s.engine != "llama.cpp":
        raise GpucostError("partial offload (GPU layers) is a llama.cpp option")
    if s.gpu_layers is not None and s.gpu_layers < 0:
        raise GpucostError(f"GPU layers must be >= 0, not {s.gpu_layers}")
    if s.cpu_moe:
        if s.engine != "llama.cpp" or s.gpu_layers is not None or s.cpu_moe < 0:
            raise GpucostError("keeping experts in CPU RAM (--cpu-moe) is a llama.cpp option, with every layer "
                               "on the GPU (not with --gpu-layers)")
        if not spec.is_moe:
            raise GpucostError(f"{spec.id} has no experts to keep in CPU RAM (--cpu-moe is for MoE models)")
    if s.images and not spec.image_tokens:
        raise GpucostError(f"{spec.id} takes no images, or the catalog does not know how many tokens one "
                           "image becomes in it (--images is for vision-language models with image_tokens)")
    if (s.parallel or prof.parallel) == "tensor" and s.gpus > 1 and spec.is_llm \
            and spec.num_attention_heads % s.gpus:
        raise GpucostError(f"tensor parallel over {s.gpus} GPUs needs the {spec.num_attention_heads} "
                           "attention heads to divide evenly")
    if s.prompt is not None and not (1 <= s.prompt <= s.context):
        raise GpucostError(f"prompt length must be between 1 and the context ({s.context}), not {s.prompt}")


#: training at this many tokens or more carries a caution: judged blind, ms-swift's published LoRA runs at 4,096 and
#: 8,192 tokens on data of varying lengths reserved 20–60 % more than the estimate (five models; at 512–2,048 tokens,
#: where its samples were all cut to one length, they were within −21 to +24 %) — README, "Rows the catalog could not
#: read before"; the allocator's reserve ratio is fitted on fixed-length runs
VARIABLE_LENGTH_NOTE_TOKENS = 4096


def estimate(spec: ModelSpec, fmt: QuantFormat, setup: Setup | None = None, **kw) -> Estimate:
    """Memory per GPU (and in CPU RAM / on NVMe) for ``spec`` in ``fmt`` under ``setup``."""
    s = check_setup(spec, fmt, replace(setup or Setup(), **kw))
    a = _arrays(((spec, fmt),))
    notes: list[Message] = []
    trainable = 0.0
    if s.is_training:
        trainable = spec.params_total if s.mode == "full" else lora_trainable_params(spec, s.lora_rank, s.lora_targets)
        b = training_bytes(a, s.gpus // s.model_parallel, s, trainable, fmt.is_quantized)
        opt = s.optimizer or ("paged-adamw" if s.mode == "qlora" else "adamw")
        if OPTIMIZERS[opt].paged:
            notes.append(Message("mn_paged"))
        if s.offload == "nvme":
            notes.append(Message("mn_nvme_buffers"))
        if s.zero >= 3 and s.offload != "none":   # tests/test_validation.py holds its figures to the corpus
            notes.append(Message("mn_zero3_offload"))
        if s.mode == "full" and steps_fp32_copies(s):
            notes.append(Message("mn_deepspeed_fp32"))
        if s.context >= VARIABLE_LENGTH_NOTE_TOKENS:
            notes.append(Message("mn_variable_lengths", tokens=f"{s.context:,}"))
        terms = training_terms(b)
        notes.append(Message("mn_dominant", term=Message(f"term_{terms[0][0]}"), gib=f"{terms[0][1]:.1f}",
                             share=f"{100 * terms[0][1] / max(sum(v for _, v in terms), 1e-12):.0f}"))
    else:
        prof = ENGINE_PROFILES[s.engine]
        b = _inference_bytes(a, s.gpus, s, prof)
        if spec.is_llm and spec.max_context and s.context > spec.max_context:
            notes.append(Message("mn_context_over", context=s.context, max=spec.max_context))
        if s.images:
            notes.append(Message("mn_images", n=s.images, tokens=spec.image_tokens))
        if holds_two_kv_caches(s.engine, s.framework_as_of):
            notes.append(Message("mn_tuple_cache"))
        if prof.preallocate == "total":
            notes.append(Message("mn_prealloc", engine=s.engine, param=PREALLOC_PARAM.get(s.engine, "fraction"),
                                 fraction=f"{preallocate_fraction(s.engine, s.gpus):g}"))
        if prof.preallocate == "free":
            notes.append(Message("mn_trtllm", fraction=f"{prof.preallocate_fraction:g}"))
        if not spec.is_llm:
            notes.append(Message("mn_diffusion"))
        if s.engine == "llama.cpp" and fmt.id == "mxfp4" and spec.is_moe:
            notes.append(Message("mn_mxfp4_gguf"))
    bd = Breakdown(**{k: float(b[k].reshape(-1)[0]) / GIB for k in
                      ("weights", "kv_cache", "activations", "gradients", "optimizer", "overhead")})
    return Estimate(model=spec.id, quant=fmt.id, setup=s, per_gpu=bd, cpu_gib=float(b["cpu"].reshape(-1)[0]) / GIB,
                    nvme_gib=float(b["nvme"].reshape(-1)[0]) / GIB, weights_file_gib=weights_file_gib(spec, fmt),
                    trainable_params=float(trainable), notes=tuple(notes), terms=terms if s.is_training else (),
                    reserve_gib=float(b["reserve"].reshape(-1)[0]) / GIB if s.is_training else 0.0,
                    reserve_kept_gib=float(b["kept"].reshape(-1)[0]) / GIB if s.is_training else 0.0)


def _per_gpu_totals(spec: ModelSpec, fmt: QuantFormat, s: Setup, counts, need: bool = False) -> np.ndarray:
    """Per-GPU total bytes for each GPU count in ``counts`` (inf where the count is not valid); ``need``: a training
    run's without the allocator reserve it gives back when the card is full (:attr:`Estimate.need_gib`)."""
    a = _arrays(((spec, fmt),))
    N = np.asarray(counts, dtype=float)
    if s.is_training:
        trainable = spec.params_total if s.mode == "full" else lora_trainable_params(spec, s.lora_rank, s.lora_targets)
        b = training_bytes(a, N / s.model_parallel, s, trainable, fmt.is_quantized)
    else:
        b = _inference_bytes(a, N, s, ENGINE_PROFILES[s.engine])
    tot = sum(b[k] for k in ("weights", "kv_cache", "activations", "gradients", "optimizer", "overhead"))
    if need and s.is_training:
        tot = tot - b["reserve"] + b["kept"]
    tot = np.asarray(tot, dtype=float).reshape(-1)
    if not s.is_training and (s.parallel or ENGINE_PROFILES[s.engine].parallel) == "tensor" and spec.is_llm:
        tot = np.where(spec.num_attention_heads % N == 0, tot, np.inf)
    return tot


# --------------------------------------------------------------------------------------------------
# Cards: usable memory, fits, inverse questions
# --------------------------------------------------------------------------------------------------

#: the setting that sets a pre-allocating engine's share of the card
PREALLOC_PARAM = {"vllm": "gpu_memory_utilization", "sglang": "mem_fraction_static",
                  "tensorrt-llm": "free_gpu_memory_fraction"}


def preallocate_fraction(engine: str, gpus: int = 1) -> float:
    """The share of each card a pre-allocating engine takes by default (SGLang's depends on TP)."""
    if engine == "sglang":
        return next(f for tp, f in SGLANG_FRACTION_BY_TP if gpus >= tp)
    prof = ENGINE_PROFILES.get(engine)
    return float(prof.preallocate_fraction) if prof is not None and prof.preallocate_fraction else 1.0


def usable_gib(vram_gib, engine: str, mode: str = "inference", gpus: int = 1):
    """Memory an engine may use on a card [GiB]: vLLM and SGLang cap themselves at their share of the card."""
    prof = ENGINE_PROFILES.get(engine)
    if mode == "inference" and prof is not None and prof.preallocate == "total":
        return np.asarray(vram_gib, dtype=float) * preallocate_fraction(engine, gpus)
    return np.asarray(vram_gib, dtype=float)


def kv_pool_gib(est: Estimate, vram_gib: float, fraction: float | None = None) -> float:
    """The KV-cache pool a pre-allocating engine makes on one card [GiB]: vLLM and SGLang fill their share
    of the card (``fraction``, default theirs) after weights, activations and the CUDA context;
    TensorRT-LLM takes ``fraction`` of the memory left after them. Other engines: the KV cache needed."""
    s, b = est.setup, est.per_gpu
    prof = ENGINE_PROFILES.get(s.engine)
    fixed = b.total - b.kv_cache
    f = fraction if fraction is not None else preallocate_fraction(s.engine, s.gpus)
    if prof is None or prof.preallocate is None or s.is_training:
        return b.kv_cache
    if prof.preallocate == "total":
        return max(vram_gib * f - fixed, 0.0)
    return max(vram_gib - fixed, 0.0) * f


def occupied_gib(est: Estimate, vram_gib: float, fraction: float | None = None) -> float:
    """What ``nvidia-smi`` shows the process holding on one card [GiB] — what users compare against —
    next to what it needs (:attr:`Estimate.total_gib`). vLLM and SGLang take their share of the card
    whatever the model needs; TensorRT-LLM fills ``free_gpu_memory_fraction`` of the memory left after
    weights and activations with its KV pool; the others hold what they need (with the CUDA context)."""
    s, b = est.setup, est.per_gpu
    prof = ENGINE_PROFILES.get(s.engine)
    if s.is_training or prof is None or prof.preallocate is None:
        return b.total
    return max(b.total, b.total - b.kv_cache + kv_pool_gib(est, vram_gib, fraction))


def _bisect_min(total_at, usable, top: int):
    """The fewest N in [1, top] with ``total_at(N) <= usable`` for a per-GPU total that does not grow with
    N (arrays broadcast, bisection on every element at once); 0 where even ``top`` does not fit."""
    usable = np.asarray(usable, dtype=float)
    t1, tt = np.asarray(total_at(1.0)), np.asarray(total_at(float(top)))
    shape = np.broadcast(t1, tt, usable).shape
    ok1, okt = np.broadcast_to(t1 <= usable, shape), np.broadcast_to(tt <= usable, shape)
    lo, hi = np.ones(shape), np.full(shape, float(top))
    while np.any(hi - lo > 1):
        mid = np.floor((lo + hi) / 2)
        ok = np.asarray(total_at(mid)) <= usable
        hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
    return np.where(ok1, 1, np.where(okt, hi, 0)).astype(int)


def _training_total(a: dict, s: Setup, trainable, quantized, need: bool = False) -> Callable:
    """N (data-parallel ranks, array) → per-GPU total bytes of a training setup (``need``: without the allocator's
    reserve — what a card must hold, :attr:`Estimate.need_gib`)."""
    def total(N):
        b = training_bytes(a, N, s, trainable, quantized)
        tot = sum(b[k] for k in ("weights", "kv_cache", "activations", "gradients", "optimizer", "overhead"))
        return tot - b["reserve"] + b["kept"] if need else tot
    return total


def _training_top(s: Setup, max_gpus: int) -> int:
    """The most data-parallel ranks tried: 1 without ZeRO (every rank holds everything)."""
    return 1 if s.zero == 0 else max(max_gpus // s.model_parallel, 1)


def min_gpus(spec: ModelSpec, fmt: QuantFormat, setup: Setup, vram_gib: float, *,
             max_gpus: int = DEFAULTS.max_gpus, reserve_gib: float = 0.0) -> tuple[int | None, float]:
    """The fewest cards of ``vram_gib`` that hold ``setup`` and the per-GPU memory there [GiB].

    Training: a multiple of tensor × pipeline parallel, exact up to ``max_gpus`` (ZeRO shards the model
    states over the data-parallel ranks; without ZeRO every rank holds everything), on which the need
    (:attr:`Estimate.need_gib`) fits; the per-GPU figure is the total with the allocator's reserve. Inference: the
    counts of :data:`INFERENCE_GPU_COUNTS` the engine can split over. None when no count fits; the
    per-GPU figure is then the one on the most cards tried."""
    s = check_setup(spec, fmt, setup)
    usable = float(usable_gib(vram_gib, s.engine, s.mode)) - reserve_gib
    if not s.is_training:
        counts = INFERENCE_GPU_COUNTS
        tot = _per_gpu_totals(spec, fmt, s, counts) / GIB
        ok = tot <= usable
        i = int(np.argmax(ok)) if ok.any() else len(counts) - 1
        return (int(counts[i]) if ok.any() else None), float(tot[i])
    a = _arrays(((spec, fmt),))
    trainable = spec.params_total if s.mode == "full" else lora_trainable_params(spec, s.lora_rank, s.lora_targets)
    total = _training_total(a, s, trainable, fmt.is_quantized)
    top = _training_top(s, max_gpus)
    # a card must hold the need; the allocator gives back its cache above it when the card is full
    k = int(_bisect_min(_training_total(a, s, trainable, fmt.is_quantized, need=True), usable * GIB, top).reshape(-1)[0])
    at = k if k else top
    return (k * s.model_parallel if k else None), float(np.asarray(total(float(at))).reshape(-1)[0] / GIB)


def card_fits(spec: ModelSpec, fmt: QuantFormat, setup: Setup, cards: pd.DataFrame) -> list[CardFit]:
    """For each card: the fewest cards that hold the setup (:func:`min_gpus`' rule), and why not."""
    s = check_setup(spec, fmt, setup)
    one = float(_per_gpu_totals(spec, fmt, replace(s, gpus=s.model_parallel), (s.model_parallel,))[0] / GIB)
    need_one = float(_per_gpu_totals(spec, fmt, replace(s, gpus=s.model_parallel), (s.model_parallel,),
                                     need=True)[0] / GIB)
    # training: a card holds the run when it holds the need; the figures named are the total with the allocator's
    # cache, and the need where the two differ
    needs = f"{one:.1f} GiB" + (f" ({need_one:.1f} without the allocator's cache it gives back when the card is full)" if need_one < one - 0.05 else "")
    out = []
    for r in cards.to_dict(orient="records"):
        vram = float(r["vram_gib"])
        usable = float(usable_gib(vram, s.engine, s.mode))
        cc = r.get("compute_capability")
        caveat = check_format_for_gpu(fmt, None if cc is None or cc != cc else float(cc), str(r["vendor"]))
        n, per = min_gpus(spec, fmt, s, vram)
        need = None if n is None else (
            float(_per_gpu_totals(spec, fmt, s, (n,), need=True)[0] / GIB) if s.is_training else per)
        if n is None and s.is_training and s.zero == 0:
            reason = (f"needs {needs}, more than {usable:.1f} GiB; ZeRO stage 0 keeps a full copy on every "
                      "GPU (use --zero 1-3 to spread it)")
        elif n is None:
            top = DEFAULTS.max_gpus if s.is_training else INFERENCE_GPU_COUNTS[-1]
            reason = f"needs {needs} on one card; no count up to {top} brings it under {usable:.1f} GiB"
        elif n > 1:
            reason = f"needs {needs} on one card, {per:.1f} GiB each on {n}"
        else:
            reason = f"{one:.1f} of {usable:.1f} GiB"
        if need is not None and per > usable:
            reason += (f"; the allocator's cache does not fit in full: {need:.1f} GiB without the part it gives back, "
                       "which the card holds (PyTorch frees cached blocks and retries when the card is full)")
        if caveat:
            reason += f"; {caveat}: the engine runs it weight-only or not at all"
        occupied = None if n is None else _occupied_on(spec, fmt, s, n, per, vram)
        if occupied is not None and need is not None and s.is_training:
            occupied = max(need, min(occupied, vram))  # the reserved peak stops at the card (Estimate.reserved_on)
        out.append(CardFit(gpu=str(r["id"]), name=str(r["name"]), vram_gib=vram, min_gpus=n, fits_on_one=n == 1,
                           reason=reason, usable_gib=usable, per_gpu_gib=per if n is not None else None,
                           occupied_gib=occupied, need_gib=need))
    return out


def _occupied_on(spec: ModelSpec, fmt: QuantFormat, s: Setup, n: int, per: float, vram: float) -> float:
    """:func:`occupied_gib` on ``n`` cards of ``vram`` GiB, given the need per card ``per``."""
    prof = ENGINE_PROFILES.get(s.engine)
    if s.is_training or prof is None or prof.preallocate is None:
        return per
    if prof.preallocate == "total":  # vLLM, SGLang: their share of the card, whatever the model needs
        return max(per, vram * preallocate_fraction(s.engine, n))
    return occupied_gib(estimate(spec, fmt, s, gpus=n), vram)


def max_context(spec: ModelSpec, fmt: QuantFormat, setup: Setup, vram_gib: float) -> int | None:
    """The longest context [tokens] that fits on ``setup.gpus`` cards of ``vram_gib`` (None: not even 1)."""
    s = check_setup(spec, fmt, setup)
    limit = float(usable_gib(vram_gib, s.engine, s.mode)) * GIB
    upper = max(spec.max_context, 1) if spec.is_llm else 1

    def fits(c: int) -> bool:
        ss = replace(s, context=c, prompt=min(s.prompt, c) if s.prompt else None)
        return bool(_per_gpu_totals(spec, fmt, ss, (s.gpus,), need=True)[0] <= limit)

    return _largest(fits, upper)


def max_batch(spec: ModelSpec, fmt: QuantFormat, setup: Setup, vram_gib: float, upper: int = 4096) -> int | None:
    """The largest batch [sequences] that fits on ``setup.gpus`` cards of ``vram_gib`` (None: not even 1)."""
    s = check_setup(spec, fmt, setup)
    limit = float(usable_gib(vram_gib, s.engine, s.mode)) * GIB

    def fits(b: int) -> bool:
        return bool(_per_gpu_totals(spec, fmt, replace(s, batch=b), (s.gpus,), need=True)[0] <= limit)

    return _largest(fits, upper)


def _largest(fits, upper: int) -> int | None:
    """The largest n in [1, upper] with fits(n), for a monotone predicate (bisection)."""
    if not fits(1):
        return None
    if fits(upper):
        return upper
    lo, hi = 1, upper
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


@dataclass(frozen=True)
class CheapestCard(Record):
    basis: str            # new | used | cloud
    gpu: str | None
    name: str | None
    count: int | None
    cost: float | None    # count × price (new/used) or count × hourly (cloud) in ``currency``
    currency: str
    unit: str             # "" or "per hour"



def cheapest_cards(fits: list[CardFit], table: pd.DataFrame, currency: str = "USD") -> list[CheapestCard]:
    """Cheapest way to get enough cards, on each price basis (``table`` from cards.card_table)."""
    t = table.set_index("id")
    out = []
    for basis, col, unit in (("new", "price_new", ""), ("used", "price_used", ""), ("cloud", "cloud_hourly", "per hour")):
        best = None
        for f in fits:
            if f.min_gpus is None or f.gpu not in t.index:
                continue
            price = number(t.at[f.gpu, col])
            if price is None:
                continue
            cost = f.min_gpus * float(price)
            if best is None or cost < best[0]:
                best = (cost, f)
        if best is None:
            out.append(CheapestCard(basis, None, None, None, None, currency, unit))
        else:
            out.append(CheapestCard(basis, best[1].gpu, best[1].name, best[1].min_gpus, best[0], currency, unit))
    return out
