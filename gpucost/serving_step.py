"""The serving step model: one step of a continuous-batching engine (decode tokens of the running sequences and
prompt chunks in one forward pass), priced from the same terms as :func:`gpucost.speed.speed`'s decode step —
:class:`StepCost` works them out once so that a replayed benchmark (:mod:`gpucost.replay`) or a serving plan
(:mod:`gpucost.serving`) can price thousands of steps (``tests/test_serving_step.py`` holds the two equal)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpucost.catalog import Catalog
from gpucost.errors import GpucostError
from gpucost.kernel_paths import extra_weight_bytes
from gpucost.memory import STATE_BYTES, STATE_BYTES_DEFAULT, _arrays
from gpucost.memory_profiles import ENGINE_PROFILES
from gpucost.models import ModelSpec
from gpucost.quant import KV_DTYPE_BYTES, QuantFormat, weight_bytes
from gpucost.records import Gpu
from gpucost.specs import DEFAULTS
from gpucost.speed import (
    RING_FACTOR,
    EngineEfficiency,
    _check_speed_inputs,
    _expert_flops_per_token,
    _linear_flops_per_token,
    _weights_read,
    attention_tflops,
    card_efficiency,
    overhead_layers,
    peak_tflops,
    roofline_seconds,
    time_flops,
)


@dataclass(frozen=True)
class StepCost:
    """The terms of one continuous-batching step (:func:`step_seconds`) for one model, format, card set and
    engine, worked out once so that a replayed benchmark (:mod:`gpucost.replay`) can price thousands of steps:
    the same quantities as :func:`~gpucost.speed.speed`'s tensor-parallel decode step (``tests/test_serving_step.py`` holds
    them equal), as plain numbers."""

    dense_bytes: float        # weights every step reads (all but the embedding table and the routed experts)
    expert_bytes: float       # the routed experts' weights (MoE), read as far as the step's tokens touch them
    route_share: float        # k / E: the share of the experts one token is routed to (0: dense)
    kv_full: float            # KV bytes per token of context in full-attention layers, per sequence
    kv_window: float          # … in sliding-window layers, up to ``window`` tokens
    window: float             # the KV cache's window (inf: none, or the engine caches every token)
    kv_state: float           # a hybrid model's fixed recurrent state per sequence [bytes]
    flops_linear: float       # 2 × active parameters (without the embedding table) [FLOP per token]
    flops_experts: float      # … of which the routed experts' (MoE), computed at ``moe_share`` of the dense rate
    attn_full: float          # attention FLOP per token per attended token, full-attention layers
    attn_window: float        # … sliding-window layers, up to ``attn_span`` attended tokens
    attn_span: float          # the attention window (inf: none)
    shard: float              # a card's share of the weights and FLOP (1 / tensor-parallel cards)
    kv_shard: float           # a card's share of the KV cache
    bytes_per_s: float        # achievable memory bandwidth of a card [bytes/s]
    flops_per_s: float        # achievable dense throughput of a card [FLOP/s] (inf: no figure)
    attn_flops_per_s: float   # … attention's (:func:`~gpucost.speed.attention_tflops`)
    fixed_s: float            # per-layer GPU time of a step
    host_s: float             # per-layer host time of a step (a floor)
    comm_fixed_s: float       # all-reduce latencies of a step (2 per layer, tensor parallel)
    comm_per_token_s: float   # all-reduce transfer per token of the step
    #: pipeline stages: the fields above are one stage's (its share of the layers); a step of the whole batch is
    #: ``stages`` stage times, each stage working on a micro-batch of 1 / stages of the sequences
    stages: int = 1
    hop_s: float = 0.0        # sending a micro-batch's activations to the next stage: latency
    hop_per_token_s: float = 0.0   # … and transfer per token
    time_factor: float = 1.0  # the whole step × this (:attr:`EngineEfficiency.time_factor`)
    moe_share: float = 1.0    # :attr:`EngineEfficiency.moe_compute_share`

    @property
    def flops_dense(self) -> float:
        """The products over the weights per token as FLOP at the dense rate (:func:`~gpucost.speed.time_flops`)."""
        return time_flops(self.flops_linear, self.flops_experts, self.moe_share)

    def kv_bytes(self, context):
        """One sequence's KV cache at ``context`` tokens [bytes], whole model."""
        return self.kv_full * context + self.kv_window * np.minimum(context, self.window) + self.kv_state

    def attention_flops(self, context):
        """Attention FLOP of one token that attends to ``context`` tokens (:func:`~gpucost.speed._attention_flops_per_token`)."""
        return self.attn_full * context + self.attn_window * np.minimum(context, self.attn_span)

    def seconds(self, decode, context, prefill=0, prefill_context=0.0):
        """See :func:`step_seconds`; arrays of steps give an array of their times (:mod:`gpucost.replay`)."""
        if self.stages > 1:   # micro-batches through the stages, one after another on each stage
            mb_dec, mb_pre = np.divide(decode, self.stages), np.divide(prefill, self.stages)
            hop = self.hop_s + self.hop_per_token_s * (mb_dec + mb_pre)
            t = self.time_factor * self.stages * (self._stage(mb_dec, context, mb_pre, prefill_context) + hop)
        else:
            t = self.time_factor * self._stage(decode, context, prefill, prefill_context)
        return float(t) if np.ndim(t) == 0 else t

    def _stage(self, decode, context, prefill, prefill_context):
        decode, prefill = np.asarray(decode, dtype=float), np.asarray(prefill, dtype=float)
        tokens = decode + prefill
        weights = self.dense_bytes + self.expert_bytes * (1.0 - (1.0 - self.route_share) ** tokens)
        kv = np.where(decode > 0, decode * self.kv_bytes(context), 0.0)
        attn = decode * self.attention_flops(context) + prefill * self.attention_flops(prefill_context)
        t_bw, t_c = roofline_seconds(weights * self.shard, kv * self.kv_shard, tokens * self.flops_dense * self.shard,
                                     attn * self.shard, self.bytes_per_s, self.flops_per_s, self.attn_flops_per_s)
        comm = self.comm_fixed_s + self.comm_per_token_s * tokens if self.shard < 1 else 0.0
        return np.maximum(t_bw + t_c + self.fixed_s + comm, self.host_s)


def step_cost(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, *, gpus: int = 1, engine: str = DEFAULTS.engine,
              kv_dtype: str = "fp16", link: str = "auto", catalog: Catalog | None = None,
              eff: EngineEfficiency | None = None, pp: int = 1) -> StepCost:
    """:class:`StepCost` of ``spec`` in ``fmt`` on ``gpus`` × ``gpu`` with ``engine``'s factors: tensor parallel
    over ``gpus / pp`` cards in each of ``pp`` pipeline stages. A stage holds 1 / pp of the layers (their weights,
    KV cache, FLOP and per-layer time) and its all-reduces stay within its cards; in flight are ``pp`` micro-batches,
    one per stage (TensorRT-LLM's and vLLM's pipeline parallelism), and a micro-batch's hidden vectors go to the
    next stage over the cards' link (one send per stage: the all-reduce latency and the transfer)."""
    if pp < 1 or gpus % pp:
        raise GpucostError(f"{gpus} cards do not split into {pp} pipeline stages")
    tp = gpus // pp
    _check_speed_inputs(spec, gpu, tp, 1, 1, engine, "tensor")
    eff = eff or card_efficiency(engine, gpu, fmt, catalog)
    wb = weight_bytes(spec, fmt)
    expert = wb.expert_blocks if spec.is_moe else 0.0
    # the kernel path's own bytes and per-layer time as speed() takes them for one token a sequence (only a
    # transformers run's differ from one read of the weights and one time per layer: gpucost.kernel_paths)
    dense = (_weights_read(spec, fmt, 0) if spec.is_moe else _weights_read(spec, fmt, 1)) \
        + extra_weight_bytes(spec, fmt, engine, 1)
    a = {k: float(np.asarray(v).ravel()[0]) for k, v in _arrays(((spec, fmt),)).items()}
    prof = ENGINE_PROFILES[engine]
    vals = (a["kv_vals"] if prof.kv_mla_compressed else a["kv_vals_expanded"]) if a["is_mla"] > 0 else a["kv_vals"]
    kvb = KV_DTYPE_BYTES[kv_dtype]
    window = a["window"] if prof.kv_sliding_window and a["n_swa"] > 0 else 0.0
    n_swa = a["n_swa"] if window else 0.0
    state = a["state_vals"] * STATE_BYTES.get(prof.activation_model, STATE_BYTES_DEFAULT)
    f_swa = spec.sliding_window_layers if spec.sliding_window else 0
    qk = spec.num_attention_heads * (spec.qk_nope_head_dim + spec.qk_rope_head_dim if spec.is_mla else spec.head_dim)
    L = overhead_layers(spec, engine, fmt)
    peak, attn_peak = peak_tflops(gpu, fmt, engine), attention_tflops(gpu, fmt, kv_dtype, engine)
    link_bw = gpu.link(link)[1] if gpus > 1 else float("inf")
    f = 1.0 / pp   # a stage's share of the layers
    L *= f
    return StepCost(
        dense_bytes=dense * f, expert_bytes=expert * f,
        route_share=spec.experts_per_token / spec.num_experts if spec.is_moe else 0.0,
        kv_full=vals * (a["n_full"] + a["n_swa"] - n_swa) * kvb * f * prof.kv_passes,
        kv_window=vals * n_swa * kvb * f * prof.kv_passes,
        window=window if window else math.inf, kv_state=state * f,
        flops_linear=_linear_flops_per_token(spec) * f, flops_experts=_expert_flops_per_token(spec) * f,
        moe_share=eff.moe_compute_share,
        attn_full=4 * qk * (len(spec.attention_layers) - f_swa) * f,
        attn_window=4 * qk * f_swa * f, attn_span=float(spec.sliding_window) if spec.sliding_window else math.inf,
        shard=1.0 / tp,
        kv_shard=1.0 if spec.is_mla else max(spec.num_kv_heads / tp, 1.0) / spec.num_kv_heads,
        bytes_per_s=gpu.mem_bandwidth_gbps * 1e9 * eff.bw_efficiency,
        flops_per_s=peak * 1e12 * eff.compute_efficiency if peak is not None else math.inf,
        attn_flops_per_s=attn_peak * 1e12 * eff.compute_efficiency if attn_peak is not None else math.inf,
        fixed_s=L * eff.layer_overhead_ms / 1e3, host_s=L * eff.host_layer_ms / 1e3,
        comm_fixed_s=2 * L * eff.allreduce_latency_ms / 1e3,
        comm_per_token_s=2 * L * RING_FACTOR * (tp - 1) / tp * spec.hidden_size * 2.0 / (link_bw * 1e9),
        stages=pp, hop_s=eff.allreduce_latency_ms / 1e3 if pp > 1 else 0.0,
        hop_per_token_s=spec.hidden_size * 2.0 / (link_bw * 1e9) if pp > 1 else 0.0, time_factor=eff.time_factor)


def step_seconds(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, *, decode: int, context: float, prefill: int = 0,
                 prefill_context: float = 0.0, gpus: int = 1, engine: str = DEFAULTS.engine, kv_dtype: str = "fp16",
                 link: str = "auto", catalog: Catalog | None = None, eff: EngineEfficiency | None = None) -> float:
    """One step of a continuous-batching engine [s], tensor parallel over ``gpus`` cards: one token for each of
    ``decode`` running sequences (KV length ``context`` on average) and ``prefill`` prompt tokens (chunks that
    attend to ``prefill_context`` earlier tokens on average) in one forward pass. The weights its tokens touch
    (MoE: the experts hit by all ``decode + prefill`` tokens, 1 − (1 − k/E)^tokens of them) and the running
    sequences' KV cache are read once and every token's matrix products computed: the step takes the larger of
    the memory and the compute time (:func:`~gpucost.speed.decode_step`), plus the per-layer time and two all-reduces per layer
    of every token's hidden vector. A prefill chunk thus rides along a memory-bound decode step for the compute
    the step had to spare (vLLM V1's chunked prefill, TensorRT-LLM's in-flight batching; :mod:`gpucost.scheduling`).
    With ``prefill = 0`` it is :func:`~gpucost.speed.speed`'s decode step. (A chunk's reads of its own prompt's earlier KV are
    left out: one read per chunk, not per token.)"""
    if decode < 0 or prefill < 0 or decode + prefill < 1:
        raise GpucostError("a step processes at least one token")
    cost = step_cost(spec, fmt, gpu, gpus=gpus, engine=engine, kv_dtype=kv_dtype, link=link, catalog=catalog, eff=eff)
    return cost.seconds(decode, context, prefill, prefill_context)
