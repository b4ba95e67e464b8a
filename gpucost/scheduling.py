"""How a serving engine schedules one forward step of continuous batching: whether prompt tokens (prefill) share a
step with the decode tokens of the running sequences, how many tokens one step may process, and how many sequences
may be in flight — each engine's defaults, from its code, for the version in force.

Three behaviours, from the engines' schedulers:

* **mixed steps** (vLLM's V1 engine, TensorRT-LLM's in-flight batching): a step decodes one token for every
  running sequence and fills the rest of its token budget with prompt tokens, so a prefill rides along with the
  decodes; its time is that of all its tokens together (:func:`gpucost.serving_step.step_seconds`).
* **prefill first** (SGLang, vLLM's V0 engine): a step is either a prefill of waiting prompts (up to the budget;
  SGLang splits a long prompt into chunks) or a decode of every running sequence; new prompts go first, and the
  running sequences wait for them.
* the **budget** and the **cap on running sequences** per engine, card and version below; the KV cache bounds the
  sequences in flight as well (:func:`gpucost.serving.kv_capacity`).

Where a benchmark states its own settings (``--max-num-seqs``, ``--max_batch_size``, ``--chunked-prefill-size``…)
the caller passes them instead (:func:`with_settings`). Pure functions; every constant names its source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpucost.kernel_paths import parse_version
from gpucost.models import ModelSpec
from gpucost.records import Gpu
from gpucost.serialize import Record

#: vLLM's V1 engine is the default from v0.8.0 (release notes of v0.8.0, 2025-03-18: "V1 engine is now enabled
#: by default"); before it the V0 engine
VLLM_V1_SINCE = (0, 8, 0)
#: vLLM V1: every step is a chunked-prefill step ("V1 always uses chunked prefills", vllm/engine/arg_utils.py
#: _set_default_args_v1). Token budget (max_num_batched_tokens) and max_num_seqs by card and usage context
#: (vllm/engine/arg_utils.py EngineArgs.get_batch_defaults): cards with >= 70 GiB that are not A100 ("For GPUs
#: like H100 and MI300x, use larger default values"; the A100 exception from vLLM PR #17885) 8192 tokens for the
#: OpenAI server, 16384 for the offline LLM class, 1024 sequences; other cards 2048 / 8192 tokens, 256 sequences.
#: (v0.8.0-0.8.4 gave the larger values to H100/H200 by name only, PR #12369 and #16158; PR #17073 made it by
#: memory.)
VLLM_V1_LARGE_CARD_GIB = 70
VLLM_V1_BUDGET = {("large", "server"): 8192, ("large", "offline"): 16384, ("small", "server"): 2048,
                  ("small", "offline"): 8192}
VLLM_V1_MAX_SEQS = {"large": 1024, "small": 256}
#: vLLM V0: chunked prefill off unless max_model_len > 32768 on a CUDA card, for a model without sliding windows
#: and not MLA ("Chunked prefill not supported for Multimodal or MLA in V0"; arg_utils.py _set_default_args_v0,
#: use_long_context); without it a prefill step takes whole prompts up to max_num_batched_tokens =
#: max(max_model_len, 2048) (vllm/config.py SchedulerConfig: _DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048) and
#: max_num_seqs = 256; with it the V0 budget was 512 tokens, 2048 from vLLM PR #10544 (2024-11-21)
VLLM_V0_MAX_SEQS = 256
VLLM_V0_MIN_BUDGET = 2048
VLLM_V0_LONG_CONTEXT = 32 * 1024
VLLM_V0_CHUNKED_BUDGET = 2048
#: SGLang: a step is a prefill batch or a decode batch — mixing them is off by default (server_args.py
#: enable_mixed_chunk = False); a prefill batch takes up to chunked_prefill_size prompt tokens, a longer prompt
#: continuing in the next: 2048 on cards under 35 GiB, 8192 under 160 GiB, 16384 above (B200, MI300X)
#: (python/sglang/srt/server_args.py _handle_gpu_memory_settings; memory-tiered since SGLang PR #2044). The
#: running requests are bounded by the KV pool (max_running_requests defaults to the token pool's size).
SGLANG_CHUNK_BY_GIB = ((35, 2048), (160, 8192), (math.inf, 16384))
#: TensorRT-LLM: in-flight batching schedules context (prefill) and generation requests into one step up to
#: max_num_tokens = 8192, with max_batch_size = 2048 requests (BuildConfig defaults, tensorrt_llm/builder.py;
#: trtllm-serve and the LLM API take them); a context is not split unless enable_chunked_prefill is set (off by
#: default, tensorrt_llm/llmapi/llm_args.py)
TRTLLM_MAX_NUM_TOKENS = 8192
TRTLLM_MAX_BATCH_SIZE = 2048


@dataclass(frozen=True)
class Scheduler(Record):
    """One engine's step scheduling (see the module docstring)."""

    engine: str
    mixed: bool                 # decode tokens and prefill tokens share a step
    token_budget: int           # tokens one step may process (decode + prefill when mixed; prefill otherwise)
    chunked: bool               # a prompt longer than what is left of the budget is split over steps
    max_running: int | None     # sequences in flight at most (None: the KV cache alone bounds them)
    label: str                  # the defaults in force, in words
    source: str


def _large_vllm_card(gpu: Gpu) -> bool:
    name = f"{gpu.id} {gpu.name}".lower()
    return gpu.vram_gib >= VLLM_V1_LARGE_CARD_GIB and "a100" not in name


def scheduler(engine: str, gpu: Gpu, *, version: str | None = None, usage: str = "server",
              max_model_len: int | None = None, spec: ModelSpec | None = None) -> Scheduler | None:
    """The step scheduling of ``engine`` on ``gpu`` with its defaults (``version``: the engine's version text,
    None for the current one; ``usage``: ``server`` — the OpenAI-compatible server — or ``offline`` — vLLM's
    ``LLM`` class; ``max_model_len`` and ``spec``: what vLLM V0's defaults depend on). None for an engine gpucost
    has no scheduler for (llama.cpp, transformers, ExLlamaV2: served one request or one fixed batch at a time)."""
    ver = parse_version(version)
    if engine == "vllm":
        if ver is not None and ver < VLLM_V1_SINCE:
            long_ctx = ((max_model_len or 0) > VLLM_V0_LONG_CONTEXT and gpu.vendor == "NVIDIA"
                        and not (spec is not None and (spec.is_mla or spec.sliding_window)))
            budget = VLLM_V0_CHUNKED_BUDGET if long_ctx else max(max_model_len or 0, VLLM_V0_MIN_BUDGET)
            return Scheduler("vllm", long_ctx, budget, long_ctx, VLLM_V0_MAX_SEQS,
                             "vLLM V0: " + ("chunked prefill" if long_ctx else "prefill steps first, whole prompts"),
                             "vllm/engine/arg_utils.py _set_default_args_v0; vllm/config.py SchedulerConfig")
        size = "large" if _large_vllm_card(gpu) else "small"
        return Scheduler("vllm", True, VLLM_V1_BUDGET[(size, "offline" if usage == "offline" else "server")], True,
                         VLLM_V1_MAX_SEQS[size], "vLLM V1: chunked prefill in every step",
                         "vllm/engine/arg_utils.py EngineArgs.get_batch_defaults")
    if engine == "sglang":
        chunk = next(c for gib, c in SGLANG_CHUNK_BY_GIB if gpu.vram_gib < gib)
        return Scheduler("sglang", False, chunk, True, None, "SGLang: prefill batches first, chunked",
                         "python/sglang/srt/server_args.py (chunked_prefill_size, enable_mixed_chunk)")
    if engine == "tensorrt-llm":
        return Scheduler("tensorrt-llm", True, TRTLLM_MAX_NUM_TOKENS, False, TRTLLM_MAX_BATCH_SIZE,
                         "TensorRT-LLM: in-flight batching of contexts and generation",
                         "tensorrt_llm/builder.py BuildConfig; tensorrt_llm/llmapi/llm_args.py")
    return None


def with_settings(sched: Scheduler, *, token_budget: int | None = None, max_running: int | None = None,
                  mixed: bool | None = None, chunked: bool | None = None) -> Scheduler:
    """``sched`` with settings a launch command states (``--max-num-batched-tokens``, ``--max_num_tokens``,
    ``--chunked-prefill-size``; ``--max-num-seqs``, ``--max_batch_size``, ``--max-running-requests``;
    ``--enable-mixed-chunk``; ``--enable_chunked_context``)."""
    return replace(sched, token_budget=token_budget or sched.token_budget,
                   max_running=max_running if max_running is not None else sched.max_running,
                   mixed=sched.mixed if mixed is None else mixed,
                   chunked=sched.chunked if chunked is None else chunked,
                   label=sched.label + " (stated settings)")


#: trtllm-bench's own sizing of a throughput run (tensorrt_llm/bench/build/tuning.py calc_engine_setting and
#: finetune_setting): the requests whose KV cache fits at ISL + OSL, capped at 4096 per pipeline stage, rounded
#: up ("slightly optimistic": to 32 under 256, 128 under 1024, else 256; at least 64); max_num_tokens =
#: that × (1 + ISL / OSL) capped at 32768, rounded up (256 under 4096, 512 under 8192, else 1024; at least 2048
#: "to ensure Ctx/Gen overlap efficiency"); the KV pool is kv_cache_free_gpu_mem_fraction = 0.95 of what the
#: weights leave. Its throughput command chunks contexts (--enable_chunked_context/--disable_chunked_context,
#: default enabled) and schedules with guaranteed_no_evict (tensorrt_llm/bench/benchmark/throughput.py)
TRTLLM_BENCH_MAX_REQUESTS = 4096
TRTLLM_BENCH_MAX_TOKENS = 32768
TRTLLM_BENCH_KV_FRACTION = 0.95


def trtllm_bench_kv_requests(params: float, attention_layers: int, kv_heads: int, head_dim: int,
                             weight_bytes_per_param: float, kv_bytes_per_value: float, vram_gib: float, tp: int,
                             pp: int, input_tokens: int, output_tokens: int) -> float:
    """trtllm-bench's own count of the requests whose KV cache fits (calc_engine_setting): the cards' total
    memory less the parameters at their quantized width (1 byte for FP8, 0.5 for NVFP4, else 2), times
    :data:`TRTLLM_BENCH_KV_FRACTION`, over 2 × attention layers × max(tp, KV heads) × head size × KV bytes per
    token of ISL + OSL (in GiB, as it computes)."""
    per_token = 2 * attention_layers * max(tp, kv_heads) * head_dim * kv_bytes_per_value / 1024**3
    cache = (vram_gib * tp * pp - params * weight_bytes_per_param / 1024**3) * TRTLLM_BENCH_KV_FRACTION
    return cache / (per_token * (input_tokens + output_tokens))


def trtllm_bench_settings(kv_requests: float, input_tokens: int, output_tokens: int,
                          pp: int = 1) -> tuple[int, int]:
    """(max_batch_size, max_num_tokens) trtllm-bench sets for a run of ``input_tokens`` / ``output_tokens``
    requests when ``kv_requests`` of them fit the KV cache (see :data:`TRTLLM_BENCH_MAX_REQUESTS`)."""
    raw_bs = min(kv_requests, TRTLLM_BENCH_MAX_REQUESTS) / pp
    raw_token = min(raw_bs * (1 + input_tokens / output_tokens), TRTLLM_BENCH_MAX_TOKENS)
    return (_round_up_tiers(raw_bs, ((256, 32), (1024, 128), (math.inf, 256)), floor=64),
            _round_up_tiers(raw_token, ((4096, 256), (8192, 512), (math.inf, 1024)), floor=2048))


def _round_up_tiers(x: float, tiers: tuple[tuple[float, int], ...], floor: int) -> int:
    """``x`` rounded up to the step of the first tier whose bound it is below; at least ``floor`` in the first."""
    for i, (bound, step) in enumerate(tiers):
        if x < bound:
            v = step * math.ceil(x / step)
            return max(floor, v) if i == 0 else v
    raise ValueError("the last tier must be unbounded")


__all__ = ["Scheduler", "parse_version", "scheduler", "trtllm_bench_kv_requests", "trtllm_bench_settings",
           "with_settings"]
