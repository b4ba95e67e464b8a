"""The validation corpus (data/benchmarks.csv) row by row: what was measured, in one comparison unit, and
gpucost's estimate of the same thing.

A row is a number someone measured on real hardware, from one source document (``source_id``, the unit
of cross-validation). Rules that turn a row into the estimator's question, from its columns (a few facts
without a column are read from its notes):

* Units: sizes in GiB (GB = 10^9 bytes as written; a source whose notes say its "GB" is 2^30 was
  transcribed as GiB); speeds in tokens/s (a decode figure given as ms per token is turned into tokens/s
  per sequence); time to first token and time per output token in ms; MFU as a fraction.
* Engines: Ollama runs llama.cpp; the fine-tuning libraries built on transformers (PEFT, TRL,
  LLaMA-Factory, axolotl, Unsloth, DeepSpeed) train with transformers' memory profile; torchtune has its
  own. Engines gpucost has no profile for (MLC, TGI, AutoAWQ's fused kernels, ExLlama v1, LitGPT, …) are
  skipped with that reason.
* What was measured (``measure_kind``): ``nvidia_smi`` is compared with what the process occupies on the
  card (:func:`gpucost.memory.occupied_gib`: vLLM and SGLang take their share whatever the model needs);
  ``model_weights`` with the weights, ``kv_cache`` with the KV cache; every other kind (allocator peak,
  reserved, an engine's log, unknown) with what the engine allocates (without the CUDA context) — for training,
  ``reserved`` with the caching allocator's reserved peak, ``nvidia_smi`` with it and the CUDA context, every
  other kind with the allocated peak (:mod:`gpucost.validation.allocator`).
* Inference memory: ``context`` is the KV length allocated (llama.cpp ``-c``, vLLM ``max_model_len``),
  else prompt + generated tokens; the prompt (the largest forward pass) is ``prompt_tokens`` when given; the
  row's ``as_of`` dates the engine (transformers before 4.36 held two KV caches at a decode step).
* Training memory: the framework's row of data/training_profiles.csv in force on the row's date; from its notes,
  the LoRA targets ("query+value only", "on q_proj k_proj v_proj o_proj"), the LoRA dropout ("dropout 0.1"),
  Cut Cross-Entropy, FlashAttention-2 (K and V kept at their own heads), the gradient accumulation steps, pure bf16
  full fine-tuning (an HF Trainer run of a model loaded in bf16), one process split over its cards by device_map
  (pipeline stages) and a figure that is the total over the GPUs; an optimizer gpucost does not model is skipped.
* Serving: a run whose launch command turns on speculative decoding (``--speculative-*``) or disaggregates prefill
  and decode is skipped with that reason (gpucost's step model emits one token per sequence a step, on one pool).
* A row whose notes say ``NOT JUDGED:`` (the source document itself calls its run unrepresentative — a host it
  says was misconfigured, a run it superseded) stays in the corpus for the record, with the source's words, but
  is neither fitted on nor judged.
* Decode speed: batch-1 rows per sequence; a batch row is the aggregate over the batch when its notes say
  so ("aggregate", "summed over the batch"), else per sequence; the KV length is prompt + generated / 2. A row whose notes carry
  ``[gpucost: the time includes the prefill]`` timed a whole generate() of a fixed batch (its source says so): its
  estimate is the batch's prompts prefilled in one forward pass, then a decode step for each further token; such a
  row is judged, never fitted on. A figure per GPU (``tokens/s/gpu``) is the whole run's divided by its cards. Prefill: a prompt of ``prompt_tokens``
  (else ``context``) tokens; time to first token is that prompt's prefill time; a batch's prompts are
  one forward pass over all their tokens (the weights read once).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from gpucost.catalog import Catalog
from gpucost.errors import GpucostError
from gpucost.kernel_paths import Software, software_of
from gpucost.memory import Setup, estimate, kv_pool_gib, occupied_gib
from gpucost.memory_profiles import (
    CUDA_CONTEXT_GIB,
    ENGINE_PROFILES,
    FSDP_ONLY_FRAMEWORKS,
    OFFLOADS,
    OPTIMIZERS,
)
from gpucost.models import catalog_spec, model_id
from gpucost.quant import GIB, KV_DTYPE_BYTES, get_format, weights_file_gib
from gpucost.records import Gpu, gpu_records
from gpucost.replay import Replay, Request, bench_serving_requests, schedule
from gpucost.scheduling import (
    Scheduler,
    scheduler,
    trtllm_bench_kv_requests,
    trtllm_bench_settings,
    with_settings,
)
from gpucost.serialize import number
from gpucost.serving import kv_capacity
from gpucost.serving_step import step_cost
from gpucost.speed import (
    EngineEfficiency,
    efficiency_table,
    engine_efficiency,
    kernel_family,
    key_backend,
    speed,
)

#: explicit unit conversions to the comparison unit (GiB = 2^30 bytes; GB = 10^9 bytes; MiB = 2^20 bytes)
UNIT_TO_GIB = {"GiB": 1.0, "GB": 1e9 / GIB, "MiB": 2**20 / GIB, "MB": 1e6 / GIB, "bytes": 1 / GIB}
UNIT_TO_MS = {"ms": 1.0, "s": 1000.0}
CATEGORIES = ("file_size", "inference_memory", "training_memory", "decode_speed", "prefill_speed", "ttft", "tpot",
              "mfu", "serving_throughput", "serving_ttft", "serving_tpot")
#: the unit each category is compared in
COMPARE_UNIT = {"file_size": "GiB", "inference_memory": "GiB", "training_memory": "GiB", "decode_speed": "tokens/s",
                "prefill_speed": "tokens/s", "ttft": "ms", "tpot": "ms", "mfu": "fraction",
                "serving_throughput": "tokens/s", "serving_ttft": "ms", "serving_tpot": "ms"}
SPEED_CATEGORIES = ("decode_speed", "prefill_speed", "ttft", "tpot")
#: a load served with several requests in flight (gpucost.serving): output tokens per second of the
#: whole system, and the mean TTFT / TPOT its clients saw — never fitted on, only judged
SERVING_CATEGORIES = ("serving_throughput", "serving_ttft", "serving_tpot")
#: the corpus's engine names → gpucost's inference engine (None: not modelled)
INFERENCE_ENGINES = {"transformers": "transformers", "transformers+peft": "transformers", "vllm": "vllm",
                     "llama.cpp": "llama.cpp", "ollama": "llama.cpp", "tensorrt-llm": "tensorrt-llm",
                     "sglang": "sglang", "exllamav2": "exllamav2"}
#: … and training framework (the libraries built on transformers train with its memory profile)
TRAINING_ENGINES = {"transformers": "transformers", "transformers+peft": "transformers", "peft": "transformers",
                    "trl": "trl", "llama-factory": "llama-factory", "axolotl": "axolotl", "ms-swift": "ms-swift",
                    "unsloth": "unsloth", "deepspeed": "deepspeed", "torchtune": "torchtune", "litgpt": "litgpt"}
#: FlashAttention in the measurements' era: transformers rows name Flash Attention 2 or SDPA, vLLM, SGLang,
#: TensorRT-LLM and ExLlamaV2 always use a fused kernel; llama.cpp needed ``-fa`` (off by default then)
FLASH_BY_ENGINE = {"llama.cpp": False}


#: the notes' marker of a run its own source calls unrepresentative, with the reason after it
NOT_JUDGED = re.compile(r"NOT JUDGED: ([^;\"]+)")


def comparison_value(row: dict) -> tuple[float, str]:
    """A row's measured value in its category's comparison unit (see the module docstring); a row marked
    ``NOT JUDGED`` has none (GpucostError with the source's reason)."""
    m = NOT_JUDGED.search(str(row.get("notes") or ""))
    if m:
        raise GpucostError(f"not judged: {m.group(1).strip()}")
    cat, unit, value = str(row["category"]), str(row["unit"]), float(row["measured"])
    want = COMPARE_UNIT.get(cat)
    if want == "GiB" and unit in UNIT_TO_GIB:
        return value * UNIT_TO_GIB[unit], "GiB"
    if want == "tokens/s" and unit == "tokens/s":
        return value, "tokens/s"
    if cat in ("serving_throughput", "decode_speed") and unit == "tokens/s/gpu":
        return value * _int(row.get("num_gpus"), 1), "tokens/s"
    if cat == "serving_throughput" and unit == "requests/s":  # requests of a stated mean output length
        gen = number(row.get("gen_tokens"))
        if not gen:
            raise GpucostError("a request rate without the output length per request")
        return value * gen, "tokens/s"
    if cat == "decode_speed" and unit in UNIT_TO_MS:  # a latency per generated token
        return 1000.0 / (value * UNIT_TO_MS[unit]), "tokens/s"
    if want == "ms" and unit in UNIT_TO_MS:
        return value * UNIT_TO_MS[unit], "ms"
    if want == "fraction" and unit in ("fraction", "%"):
        return (value / 100 if unit == "%" else value), "fraction"
    raise GpucostError(f"a {cat} row in '{unit}' has no comparison unit")


def convert(value: float, unit: str) -> tuple[float, str]:
    """A size or speed in the comparison unit (kept for callers that convert one value)."""
    if unit in UNIT_TO_GIB:
        return value * UNIT_TO_GIB[unit], "GiB"
    if unit in ("tokens/s", "fraction"):
        return value, unit
    if unit in UNIT_TO_MS:
        return value * UNIT_TO_MS[unit], "ms"
    raise GpucostError(f"unknown unit '{unit}' in benchmarks.csv")


def _int(v, default: int) -> int:
    x = number(v)
    return int(x) if x is not None else default


def engine_of(row: dict) -> str:
    """gpucost's engine (or training framework) for a row; GpucostError when it has none."""
    name = str(row.get("engine") or "").lower()
    table = TRAINING_ENGINES if row["category"] == "training_memory" else INFERENCE_ENGINES
    if name not in table:
        raise GpucostError(f"engine '{row.get('engine') or '?'}' is not modelled")
    return table[name]


def backend_of(row: dict) -> str:
    return str(row.get("backend") or "cuda").lower() or "cuda"


def _gpu(row: dict, catalog: Catalog) -> Gpu:
    gid = str(row.get("gpu_id") or "")
    if not gid:
        raise GpucostError("no GPU named")
    recs = gpu_records(catalog)
    if gid not in recs:  # a card named as the source names it: its exact alias in gpus.csv, else skipped
        try:
            gid = catalog.gpu_id(gid)
        except GpucostError:
            raise GpucostError(f"GPU '{gid}' is not in gpus.csv") from None
    return recs[gid]


def _tokens(row: dict) -> tuple[int, int, int]:
    """(context allocated, prompt processed, tokens generated) of a row."""
    ctx, prompt, gen = (_int(row.get(k), 0) for k in ("context", "prompt_tokens", "gen_tokens"))
    return ctx, prompt, gen


def _inference_memory(row: dict, spec, fmt, catalog: Catalog) -> float:
    engine = engine_of(row)
    ctx, prompt, gen = _tokens(row)
    batch, gpus = _int(row.get("batch"), 1), _int(row.get("num_gpus"), 1)
    context = ctx if ctx > 0 else max(prompt + gen, 1)
    prompt = min(prompt if prompt > 0 else (ctx if engine != "llama.cpp" else min(max(ctx, 1), 512)), context)
    s = Setup(mode="inference", context=max(context, 1), prompt=max(prompt, 1), batch=batch, gpus=gpus, engine=engine,
              flash_attention=FLASH_BY_ENGINE.get(engine, True), framework_as_of=str(row.get("as_of") or "") or None)
    est = estimate(spec, fmt, s)
    kind = str(row.get("measure_kind") or "unknown")
    prof = ENGINE_PROFILES[engine]
    per_gpu: float | None
    if kind == "kv_cache" and prof.preallocate is not None:
        # a pre-allocating engine's KV pool fills the memory it takes, whatever the context needs
        per_gpu = kv_pool_gib(est, _gpu(row, catalog).vram_gib, _stated_fraction(row, prof.preallocate))
    else:
        per_gpu = {"model_weights": est.per_gpu.weights, "kv_cache": est.per_gpu.kv_cache}.get(kind)
    if per_gpu is None and kind == "nvidia_smi":
        per_gpu = occupied_gib(est, _gpu(row, catalog).vram_gib, _stated_fraction(row, prof.preallocate))
    if per_gpu is None:
        per_gpu = est.engine_gib
    return per_gpu * _cards_summed(row)


_FRACTION = re.compile(r"(?:gpu_memory_utilization|mem[_-]fraction[_-]static|free_gpu_mem(?:ory)?_fraction)"
                       r"\s*(?:=|:|of|is|set to)?\s*(0?\.\d+|1\.0)")


def _cards_summed(row: dict) -> int:
    """How many cards a memory figure adds up: all of them where the row's notes say it is the total over the
    GPUs, else one (a per-GPU figure)."""
    return _int(row.get("num_gpus"), 1) if "total over" in str(row.get("notes") or "").lower() else 1


def _stated_fraction(row: dict, preallocate: str | None) -> float | None:
    """The share of the card a row's notes say the engine was given (gpu_memory_utilization=0.95, …)."""
    if preallocate is None:
        return None
    m = _FRACTION.search(str(row.get("notes") or ""))
    return float(m.group(1)) if m else None


_QV_ONLY = re.compile(r"query\s*(?:\+|and|,)\s*value only|\bq(?:_proj)?\s*(?:\+|and|,)\s*v(?:_proj)? only"
                      r"|target_modules\W+q_proj\W+v_proj\W*(?:\]|$)"
                      # a list of exactly q_proj and v_proj ("on q_proj,v_proj", "targets q_proj/v_proj")
                      r"|\bq_proj\s*(?:,|/|\+|and|\s)\s*v_proj\b(?!\s*(?:,|/|\+|and)?\s*(?:k|o|gate|up|down)_proj)",
                      re.IGNORECASE)
#: q, k and v only: a fused QKV projection (Qwen 1's c_attn, Baichuan's W_pack, ChatGLM's query_key_value, Phi's
#: Wqkv) named alone as the target ("c_attn only", "on c_attn;", "target DEFAULT (c_attn)", "lora_target_modules
#: W_pack, gradient_checkpointing …", "['query_key_value'] only" — not "c_attn, c_proj, w1, w2"), or "q_proj, k_proj,
#: v_proj only"
_FUSED_QKV = r"(?:c_attn|W_pack|query_key_value|Wqkv)"
_OTHER_MODULES = r"(?:c_proj|w1|w2|dense|[qkvo]_proj|gate_proj|up_proj|down_proj|mlp)"
_QKV_ONLY = re.compile(rf"\b{_FUSED_QKV}'?\]?\s+only\b"
                       rf"|(?:\bon\s|lora_target_modules\s|target DEFAULT \(|target_modules\s)\s*\[?'?{_FUSED_QKV}'?\]?"
                       rf"\s*(?:\)|;|\.|$|,(?!\s*{_OTHER_MODULES}\b))"
                       r"|\bq_proj\W+k_proj\W+v_proj\s+only\b", re.IGNORECASE)
_ATTENTION_ONLY = re.compile(r"\bq,\s*k,\s*v,\s*o only|attention (?:projections|layers) only"
                             # a list of the four attention projections and no MLP one ("on q_proj k_proj v_proj o_proj")
                             r"|\bq_proj\W+k_proj\W+v_proj\W+o_proj\b(?!\W+(?:\w+\W+)?(?:gate|up|down)_proj)",
                             re.IGNORECASE)
#: a LoRA dropout probability the notes state ("dropout 0.1", "lora_dropout=0.05", "dropout 0")
_LORA_DROPOUT = re.compile(r"\b(?:lora[_ ])?dropout\s*[=:]?\s*(\d*\.?\d+)(?![\d.])", re.IGNORECASE)
#: a full fine-tuning run of the HF Trainer (or FSDP without a mixed-precision policy) on a model loaded in bf16 or fp16:
#: its parameters, gradients and AdamW states are 16-bit (torch's AdamW keeps its states in the parameters' dtype)
_PURE_16BIT = re.compile(r"torch_dtype\s*[=:]?\s*(?:torch\.)?(?:bfloat16|float16)|pure bf16|loaded in bf16|bfloat16 \(no AMP",
                        re.IGNORECASE)
_MIXED = re.compile(r"mixed[_ ]precision\s*(?:policy|bf16|fp16)|bf16-mixed|master weights|fp32 master",
                    re.IGNORECASE)
#: the HF Trainer's AMP flag on (its bf16 / fp16 mixed precision), and accelerate's mixed precision stated off
_AMP_ON = re.compile(r"--(?:bf|fp)16\b|\b(?:bf|fp)16\s*[=:]?\s*True\b", re.IGNORECASE)
_AMP_OFF = re.compile(r"mixed_precision\s*[=:]?\s*'?no\b", re.IGNORECASE)
#: accelerate 0.30 (PR #2674, commit 9557598c of 2024-04-29): under FSDP with mixed precision on, a model loaded in 16
#: bits has its flat parameters upcast to fp32 ("Upcasted low precision parameters ... because mixed precision turned
#: on in FSDP"; docs/source/concept_guides/fsdp_and_deepspeed.md: the optimizer then steps in fp32) — fp32 master
#: weights and AdamW states, not pure 16-bit
FSDP_UPCAST_SINCE = "2024-04-29"
#: a run with FlashAttention-2 (use_flash_attn true, attn_impl flash_attn, "HF+FA2"): its kernel reads grouped K and V
#: as they are, so they are never repeated to every query head whatever the framework's SDPA path did
_FA2 = re.compile(r"use_flash_attn\s*[=:]?\s*true|flash[_ ]attention[_ ]?2\b|flash attention 2|"
                  r"attn_impl(?:ementation)?\W+flash_attn|\bFA2\b|\(use flash_attn\)", re.IGNORECASE)
#: gradient accumulation steps a row's notes state ("gradient_accumulation_steps 16", "GA 8", "without gradient
#: accumulation")
_GRAD_ACCUM = re.compile(r"(?:gradient_accumulation_steps|gradient accumulation(?: steps)?|\bGA)\s*[=:]?\s*(\d+)",
                         re.IGNORECASE)
_NO_GRAD_ACCUM = re.compile(r"without gradient accumulation|no gradient accumulation", re.IGNORECASE)
#: the training engines whose full fine-tuning takes the loaded model's dtype (HF Trainer, PEFT's scripts)
_HF_TRAINER = ("transformers", "transformers+peft", "peft", "trl")


#: a run with Cut Cross-Entropy (axolotl's plugin): its notes name it, not as absent ("no …") or conditional
_CCE = re.compile(r"(?<!no )cut[ _]cross[ _-]?entropy(?!(?:\s+plugin)?\W+(?:false|off|not|where))", re.IGNORECASE)
_NAIVE_SPLIT = re.compile(r"naive model parallel|split (?:over|across) the (?:two |\d+ )?GPUs by device_map", re.IGNORECASE)
#: data parallel over replicas that each spread one model copy over N cards by device_map (ms-swift's "mp_ddp")
_REPLICA_SPLIT = re.compile(r"model copy over (\d+) GPUs with device_map", re.IGNORECASE)


#: a multi-GPU run sharded by PyTorch FSDP (FSDP, FSDP2, Lightning's FSDPStrategy), not by DeepSpeed
_FSDP = re.compile(r"\bFSDP", re.IGNORECASE)
_DEEPSPEED = re.compile(r"deepspeed|\bds_config|zero[ _-]?[123]\b(?! equivalent)", re.IGNORECASE)


def sharder_of(row: dict) -> str:
    """What sharded a row's states over its cards: "fsdp" where the framework only shards with FSDP or the notes name
    FSDP and not DeepSpeed, else "deepspeed" (the ZeRO stage column's own meaning)."""
    notes = str(row.get("notes") or "")
    if str(row.get("engine") or "").lower() in FSDP_ONLY_FRAMEWORKS:
        return "fsdp"
    return "fsdp" if _FSDP.search(notes) and not _DEEPSPEED.search(notes) else "deepspeed"


def lora_targets_of(row: dict) -> str:
    """The LoRA target set a row's notes state (q and v only, q, k and v only — a fused QKV projection named alone —,
    the attention projections only), else every Linear."""
    notes = str(row.get("notes") or "")
    if _QV_ONLY.search(notes):
        return "qv"
    if _QKV_ONLY.search(notes):
        return "qkv"
    return "attention" if _ATTENTION_ONLY.search(notes) else "all-linear"


#: a training row whose run computed its loss with Liger Kernel's fused linear cross-entropy (the notes say so in
#: gpucost's words: a document that names Liger often names the kernel only to say a run did not use it)
LIGER_FLCE = "[gpucost: the loss is Liger's fused linear cross-entropy]"


def loss_kernel_of(row: dict) -> str | None:
    """The fused loss a training row's run used (:data:`gpucost.memory_profiles.LOSS_KERNELS`), else None."""
    notes = str(row.get("notes") or "")
    if LIGER_FLCE in notes:
        return "liger"
    return "cce" if _CCE.search(notes) else None


def lora_dropout_of(row: dict) -> float | None:
    """The LoRA dropout a row's notes state, else None (the framework's default)."""
    m = _LORA_DROPOUT.search(str(row.get("notes") or ""))
    return float(m.group(1)) if m and float(m.group(1)) < 1 else None


def grad_accum_of(row: dict) -> int | None:
    """The gradient accumulation steps a row's notes state, else None (not known)."""
    notes = str(row.get("notes") or "")
    if _NO_GRAD_ACCUM.search(notes):
        return 1
    m = _GRAD_ACCUM.search(notes)
    return max(int(m.group(1)), 1) if m else None


def precision_of(row: dict) -> str | None:
    """"bf16" for a full fine-tuning row of the HF Trainer whose notes say the model was loaded in bf16 or fp16 (and
    name no mixed-precision policy or fp32 master weights): pure 16-bit training — weights, gradients and AdamW's
    states at 2 bytes, fp16 the same bytes as bf16 (the HF Trainer's fp16 AMP refuses fp16 parameters: "Attempting to
    unscale FP16 gradients"); else None (the framework's default) — also where FSDP runs with the Trainer's AMP flag
    on since accelerate 0.30 (:data:`FSDP_UPCAST_SINCE`), which upcasts the 16-bit parameters to fp32."""
    notes = str(row.get("notes") or "")
    if (str(row.get("mode") or "") == "full" and str(row.get("engine") or "").lower() in _HF_TRAINER
            and _PURE_16BIT.search(notes) and not _MIXED.search(notes)):
        upcast = (_int(row.get("num_gpus"), 1) > 1 and sharder_of(row) == "fsdp" and _AMP_ON.search(notes)
                  and not _AMP_OFF.search(notes) and str(row.get("as_of") or "") >= FSDP_UPCAST_SINCE)
        return None if upcast else "bf16"
    return None


def grad_checkpointing_of(row: dict, fmt) -> bool:
    """Whether a training row checkpointed activations: as stated, else the framework's default — on, but for a run
    of the HF Trainer (transformers, PEFT's and TRL's scripts) off (``TrainingArguments.gradient_checkpointing``
    defaults to False) unless its base is quantized: PEFT's ``prepare_model_for_kbit_training`` turns it on
    (``use_gradient_checkpointing=True`` by default)."""
    stated = str(row.get("grad_checkpointing") or "").strip().lower()
    if stated and stated != "nan":
        return stated not in ("false", "0", "no")
    if str(row.get("engine") or "").lower() in _HF_TRAINER:
        return fmt.family == "bitsandbytes"
    return True


def _training_memory(row: dict, spec, fmt, reserve_ratio: float | None = None, vram_gib: float | None = None,
                     reserve_floor: float | None = None) -> float:
    est = _training_estimate(row, spec, fmt, reserve_ratio, reserve_floor)
    kind = str(row.get("measure_kind") or "unknown")
    # nvidia-smi: the reserved peak and the CUDA context; the allocator's reserved peak; every other kind (the
    # allocated peak, an unnamed figure) the allocated peak. A reserved peak stops at the row's card where the card
    # is too small for the whole cache (Estimate.reserved_on)
    reserved = est.engine_gib
    if kind in ("nvidia_smi", "reserved") and vram_gib is not None:
        reserved = est.reserved_on(vram_gib)
    value = {"nvidia_smi": reserved + CUDA_CONTEXT_GIB, "reserved": reserved}.get(kind, est.allocated_gib)
    return value * _cards_summed(row)


def training_kept_gib(row: dict, catalog: Catalog) -> float:
    """What a training row's run allocates once and keeps — its estimated weights and optimizer states
    (:attr:`gpucost.memory.Estimate.kept_gib`) — in the row's unit of GiB (summed over its cards where the row
    sums them); GpucostError where the row cannot be estimated."""
    est = _training_estimate(row, row_model(row, catalog), row_format(row, catalog))
    return est.kept_gib * _cards_summed(row)


def _training_estimate(row: dict, spec, fmt, reserve_ratio: float | None = None, reserve_floor: float | None = None):
    """The memory estimate of a training row's run (:func:`gpucost.memory.estimate`) from its stated settings."""
    framework = engine_of(row)
    ctx, _, _ = _tokens(row)
    if ctx < 1:
        raise GpucostError("the sequence length is not stated")
    opt = str(row.get("optimizer") or "")
    if opt and opt not in OPTIMIZERS:
        raise GpucostError(f"optimizer '{opt}' is not modelled")
    ckpt = grad_checkpointing_of(row, fmt)
    offload = str(row.get("offload") or "").strip().lower()
    if offload not in OFFLOADS:
        # a column that names what moved ('params+optimizer', 'cpu (optimizer and parameters)') is ZeRO's offload to
        # the host, as `cpu` is (the stage says what moves); else the notes' words
        if "nvme" in offload:
            offload = "nvme"
        elif any(w in offload for w in ("cpu", "param", "optimizer")):
            offload = "cpu"
        else:
            offload = "cpu" if "cpu offload" in str(row.get("notes") or "").lower() else "none"
    zero = _int(row.get("zero_stage"), 0)
    if str(row.get("mode") or "full") == "full" and number(row.get("num_gpus")) is None:
        # a full fine-tune's states are what a multi-GPU launch shares over its cards: without the count there is
        # no per-GPU figure to compare (a LoRA run with no count stated is one card's)
        raise GpucostError("a full fine-tune's GPU count is not stated")
    gpus = _int(row.get("num_gpus"), 1)
    # one process that splits the layers over its cards (device_map, naive model parallel): pipeline stages; data
    # parallel replicas that each split one copy over N of the cards: N stages per replica
    notes = str(row.get("notes") or "")
    replica = _REPLICA_SPLIT.search(notes)
    pp = int(replica.group(1)) if replica else (gpus if _NAIVE_SPLIT.search(notes) else 1)
    if gpus % pp:
        raise GpucostError(f"{gpus} cards do not split into replicas of {pp} pipeline stages")
    s = Setup(mode=str(row.get("mode") or "full"), context=max(ctx, 1), batch=_int(row.get("batch"), 1),
              gpus=gpus, pp=pp, engine=framework, zero=zero, offload=offload if zero else "none",
              sharder=sharder_of(row),
              lora_rank=_int(row.get("lora_rank"), Setup.lora_rank), optimizer=opt or None,
              lora_targets=lora_targets_of(row), grad_checkpointing=ckpt, flash_attention=True,
              framework_as_of=str(row.get("as_of") or "") or None,
              loss_kernel=loss_kernel_of(row), reserve_ratio=reserve_ratio,
              reserve_floor=reserve_floor, lora_dropout=lora_dropout_of(row), precision=precision_of(row),
              gqa_expand=False if _FA2.search(notes) else None, grad_accum=grad_accum_of(row))
    return estimate(spec, fmt, s)


#: a decode row whose figure is a whole generate() of its batch, prompt included (the notes' own words, made explicit)
INCLUDES_PREFILL = "[gpucost: the time includes the prefill]"


def includes_prefill(row: dict) -> bool:
    """Whether a decode row's time includes its batch's prefill (:data:`INCLUDES_PREFILL`)."""
    return INCLUDES_PREFILL in str(row.get("notes") or "")


#: how a row's notes say its batch figure is the batch's total, not one sequence's
_AGGREGATE = re.compile(r"aggregate|summed over the batch|sum over the batch")


def _aggregate(row: dict) -> bool:
    return _int(row.get("batch"), 1) > 1 and _AGGREGATE.search(str(row.get("notes") or "").lower()) is not None


_CPU_MOE = re.compile(r"^cpu-moe:(\d+|all)$")
_HOST_BW = re.compile(r"host_bw_gbps\s*=\s*(\d+(?:\.\d+)?)")


def cpu_moe_of(row: dict) -> tuple[int, float | None]:
    """(layers whose experts are in host RAM, the host's memory bandwidth [GB/s]) of a row whose offload is
    ``cpu-moe:N`` (``all``: every layer) — llama.cpp's ``--n-cpu-moe``; the bandwidth is what its notes state as
    ``host_bw_gbps=…`` (channels × 8 bytes × transfer rate, from the RAM the source names). (0, None) else."""
    m = _CPU_MOE.match(str(row.get("offload") or "").strip().lower())
    if not m:
        return 0, None
    bw = _HOST_BW.search(str(row.get("notes") or ""))
    return (10**6 if m.group(1) == "all" else int(m.group(1))), (float(bw.group(1)) if bw else None)


def software_of_row(row: dict) -> Software:
    """The library versions a speed row ran (:func:`gpucost.kernel_paths.software_of`): those its engine column
    names, else the releases out on its ``as_of`` date; the LLM.int8() threshold its notes state."""
    return software_of(str(row.get("engine_version") or ""), str(row.get("notes") or ""),
                       str(row.get("as_of") or "") or None)


def _speed(row: dict, spec, fmt, catalog: Catalog, table: dict[str, EngineEfficiency]) -> float:
    cat = row["category"]
    engine = engine_of(row)
    if engine not in ENGINE_PROFILES:
        raise GpucostError(f"engine '{engine}' has no speed model")
    gpu = _gpu(row, catalog)
    eff = engine_efficiency(engine, catalog, fmt, key_backend(engine, backend_of(row), gpu), table=table)
    ctx, prompt, gen = _tokens(row)
    batch, gpus = _int(row.get("batch"), 1), _int(row.get("num_gpus"), 1)
    cpu_moe, host_bw = cpu_moe_of(row)
    if cpu_moe and host_bw is None:
        raise GpucostError("experts in host RAM, but the host's memory bandwidth is not stated")
    if cpu_moe:
        cpu_moe = min(cpu_moe, spec.num_layers or cpu_moe)

    def prefill_tokens_per_s(tokens: int) -> float:
        """tokens/s of one forward over the batch's prompts of ``tokens`` each"""
        pre = speed(spec, fmt, gpu, gpus=gpus, batch=1, context=tokens, engine=engine, catalog=catalog, eff=eff,
                    cpu_moe=cpu_moe, host_bw_gbps=host_bw, software=software_of_row(row), backend=backend_of(row),
                    prefill_batch=batch)
        if pre.prefill_tokens_per_s is None:
            raise GpucostError(f"{gpu.id} has no dense throughput figure")
        return pre.prefill_tokens_per_s

    if cat in ("decode_speed", "tpot"):
        kv = max(1, int(round((prompt or ctx) + gen / 2)))
        sp = speed(spec, fmt, gpu, gpus=gpus, batch=batch, context=kv, engine=engine, catalog=catalog, eff=eff,
                   cpu_moe=cpu_moe, host_bw_gbps=host_bw, software=software_of_row(row), backend=backend_of(row))
        tps = sp.decode_tokens_per_s if _aggregate(row) else sp.decode_tokens_per_s_per_seq
        if cat == "decode_speed" and includes_prefill(row) and prompt > 0:
            # one generate(): the batch's prompts in one forward pass (the first token), then gen − 1 decode steps
            seconds = prompt * batch / prefill_tokens_per_s(prompt) + max(gen - 1, 0) * sp.step_ms / 1e3
            return max(gen, 1) * (batch if _aggregate(row) else 1) / seconds
        return tps if cat == "decode_speed" else 1000.0 / sp.decode_tokens_per_s_per_seq
    p = max(prompt or ctx, 1)
    # the prompts of a batch are one prefill: one forward over all their tokens
    tps = prefill_tokens_per_s(p)
    if cat == "prefill_speed":
        return tps / (1 if _aggregate(row) else batch)
    return 1000.0 * p * batch / tps


_PARALLEL = re.compile(r"\bTP\s*=?\s*(\d+)(?:\s*,\s*PP\s*=?\s*(\d+))?")


def _replica_gpus(row: dict) -> tuple[int, int]:
    """(cards per replica, replicas) of a serving row: ``TPn`` (and ``PPm``) in its notes, else one replica on
    every card (:func:`_pipeline_stages`: how many of the cards are pipeline stages)."""
    gpus = _int(row.get("num_gpus"), 1)
    m = _PARALLEL.search(str(row.get("notes") or ""))
    per = int(m.group(1)) * int(m.group(2) or 1) if m else gpus
    if per < 1 or gpus % per:
        raise GpucostError(f"{gpus} cards do not split into replicas of TP×PP = {per}")
    return per, gpus // per


#: a benchmark's request count: ``--num-prompts N`` / ``num_prompts N``, "N requests", "completed N of N prompts"
_NUM_PROMPTS = re.compile(r"(?:--num-prompts|num_prompts)[ =]+(\d+)|\b(\d+) requests\b|\bof (\d+) prompts\b")
_RANDOM_LEN = re.compile(r"--random-(input|output)-len[ =](\d+)")
_RANGE_RATIO = re.compile(r"random[-_]range[-_]ratio[ =]([\d.]+)")
#: settings a launch command states: (regex, the Scheduler field they set)
_SETTINGS = ((re.compile(r"--max[-_]num[-_]seqs?[ =](\d+)|--max[-_]batch[-_]size[ =](\d+)"
                         r"|--max[-_]running[-_]requests[ =](\d+)"), "max_running"),
             (re.compile(r"--max[-_]num[-_]batched[-_]tokens[ =](\d+)|--max[-_]num[-_]tokens[ =](\d+)"
                         r"|--chunked[-_]prefill[-_]size[ =](\d+)"), "token_budget"))
#: serving runs whose notes name a way of serving gpucost's step model (one token per sequence a step, on one pool)
#: does not have: skipped with the reason — prefill and decode on separate pools, or a launch command that turns on
#: speculative decoding (SGLang's and vLLM's --speculative-* flags: EAGLE, NEXTN/MTP, several tokens a step)
_NOT_MODELLED_SERVING = ((re.compile(r"disaggregat", re.IGNORECASE), "prefill-decode disaggregation is not modelled"),
                         (re.compile(r"--speculative[-_](?:algo|algorithm|config|model|num)"),
                          "speculative decoding is not modelled"))
#: a run whose own log shows its prompts hitting the prefix cache (repeated random prompts): its TTFT is of prompts
#: prefilled in part, which the replay (every prompt token computed) does not price; its throughput and TPOT, bound by
#: the decode steps, are judged
_PREFIX_HITS = re.compile(r"prefix[- ]cache hit rates? of", re.IGNORECASE)
_MAX_MODEL_LEN = re.compile(r"--max[-_]model[-_]len[ =](\d+)")
#: a client that sends requests at a stated finite rate (``--request-rate 10``, ``request rate 2 req/s``)
_REQUEST_RATE = re.compile(r"request[- _]rate[ =:]+(\d+(?:\.\d+)?)(?![\d.])", re.IGNORECASE)

#: a client that sends every request at once (bench_serving with no request rate, whose default is inf, and no
#: --max-concurrency): what the replay does with no concurrency, so its latencies are estimated, not only its throughput
_ALL_AT_ONCE = re.compile(r"request[- _]rate (?:default )?inf\b|all (?:\d+ )?requests (?:sent |released )?at once",
                          re.IGNORECASE)

_KV_FP8 = re.compile(r"kv[-_]cache[-_]dtype[ =]fp8", re.IGNORECASE)
#: vLLM's benchmark_throughput.py and bench_serving send 1,000 prompts unless told otherwise (--num-prompts default)
DEFAULT_PROMPTS = 1000


def offered_rate(row: dict) -> float | None:
    """The requests per second a serving row's client offered (its notes' first finite ``request rate``), None for
    an unbounded rate (``inf``) or none stated."""
    m = _REQUEST_RATE.search(str(row.get("notes") or ""))
    return float(m.group(1)) if m and float(m.group(1)) > 0 else None


def sent_at_once(row: dict) -> bool:
    """Whether a serving row's client sent every request at once: no concurrency, no finite rate, and notes that
    say so (``request rate default inf``, ``all 1000 requests sent at once``)."""
    return (not _int(row.get("concurrency"), 0) and offered_rate(row) is None
            and _ALL_AT_ONCE.search(str(row.get("notes") or "")) is not None)


def _first_int(m: re.Match | None) -> int | None:
    return next((int(g) for g in m.groups() if g), None) if m else None


def bench_requests(row: dict, clients: int | None) -> list[Request]:
    """The requests a serving row's benchmark sent, from what its notes state: ``bench_serving --dataset-name
    random`` with a range ratio below 1 draws lengths up to ``--random-input-len`` / ``--random-output-len``
    (:func:`gpucost.replay.bench_serving_requests`, seed 1 as the script's default), moved by the difference
    between the printed mean and the drawn one (the tokenizer's added tokens); fixed lengths otherwise
    (``random_range_ratio=1``, trtllm-bench's ``stdev 0``, vLLM's ``--input-len``). The count: the notes',
    else 1,000 (the scripts' default)."""
    notes = str(row.get("notes") or "")
    prompt, gen = number(row.get("prompt_tokens")) or 1.0, number(row.get("gen_tokens")) or 1.0
    count = _first_int(_NUM_PROMPTS.search(notes)) or DEFAULT_PROMPTS
    if clients is not None:
        count = max(count, clients)
    lens = dict((k, int(v)) for k, v in _RANDOM_LEN.findall(notes))
    ratio_m = _RANGE_RATIO.search(notes)
    ratio = float(ratio_m.group(1)) if ratio_m else (0.0 if "range-ratio not set" in notes else 1.0)
    if len(lens) == 2 and ratio < 1:
        drawn = bench_serving_requests(count, lens["input"], lens["output"], ratio)
        d_in = round(prompt - sum(r.prompt for r in drawn) / count)
        d_out = round(gen - sum(r.output for r in drawn) / count)
        return [Request(max(r.prompt + d_in, 1), max(r.output + d_out, 1)) for r in drawn]
    return [Request(max(int(round(prompt)), 1), max(int(round(gen)), 1))] * count


def _bench_scheduler(row: dict, engine: str, gpu: Gpu, spec, fmt, per: int, clients: int | None,
                     requests: list[Request], kv_dtype: str) -> Scheduler:
    """The engine's step scheduling in a row's run: its defaults for the version the row names
    (:func:`gpucost.scheduling.scheduler`; an offline vLLM run uses the ``LLM`` class), the settings its launch
    command states, and trtllm-bench's own sizing of a throughput run."""
    notes = str(row.get("notes") or "")
    mml = _first_int(_MAX_MODEL_LEN.search(notes)) or spec.max_context
    sched = scheduler(engine, gpu, version=str(row.get("engine_version") or ""),
                      usage="offline" if clients is None else "server", max_model_len=mml, spec=spec)
    if sched is None:
        raise GpucostError(f"{engine} has no continuous-batching scheduler in gpucost")
    stated: dict[str, Any] = {field: _first_int(rx.search(notes)) for rx, field in _SETTINGS}
    if "trtllm-bench" in notes and engine == "tensorrt-llm":
        isl, osl = requests[0].prompt, requests[0].output
        pp = _pipeline_stages(row)
        fam = kernel_family(fmt)
        kv_req = trtllm_bench_kv_requests(spec.params_total, len(spec.attention_layers), spec.num_kv_heads,
                                          spec.head_dim, 0.5 if fmt.id.startswith("nvfp4") else 1.0 if fam == "fp8"
                                          else 2.0, KV_DTYPE_BYTES[kv_dtype], gpu.vram_gib, per // pp, pp, isl, osl)
        bs, tokens = trtllm_bench_settings(kv_req, isl, osl, pp)
        # both are a micro-batch's: pp of them are in flight
        stated = {"max_running": (stated["max_running"] or bs) * pp,
                  "token_budget": (stated["token_budget"] or tokens) * pp, "chunked": True}
    return with_settings(sched, **stated) if any(stated.values()) else sched


def _kv_dtype_of(row: dict) -> str:
    """FP8 where a row's launch command says so, or its weights are NVIDIA ModelOpt checkpoints: those carry an FP8
    KV cache (ModelOpt's hf_ptq.py exports with --kv_cache_qformat fp8 by default, and TensorRT-LLM takes the
    checkpoint's kv_cache_quant_algo — NVIDIA/TensorRT-LLM issue #4329 names nvidia/Llama-3.1-8B-Instruct-FP8 as
    one); else 16-bit."""
    notes = str(row.get("notes") or "")
    return "fp8" if _KV_FP8.search(notes) or "ModelOpt checkpoints" in notes else "fp16"


def _replay_row(row: dict, spec, fmt, catalog: Catalog, table: dict[str, EngineEfficiency]) -> tuple[Replay, int]:
    """(the replay of a serving row's benchmark on one replica, replicas): :func:`gpucost.replay.replay` with the
    row's requests, clients (spread over the replicas), engine scheduling, KV cache and step model."""
    sched, replicas, cost = _scheduled_row(row, spec, fmt, catalog, table)
    return sched.price(cost.seconds), replicas


_ROW_SCHEDULES: dict = {}   # a row's schedule (or why it has none), by the row, its model, format and card
_SCHEDULES: dict = {}       # one schedule, shared by the rows of one run (its throughput, TTFT and TPOT)


def _scheduled_row(row: dict, spec, fmt, catalog: Catalog, table: dict[str, EngineEfficiency]):
    """(a serving row's :class:`~gpucost.replay.Schedule` on one replica, replicas, the replica's
    :class:`~gpucost.serving_step.StepCost` with ``table``'s factors)."""
    engine = engine_of(row)
    for rx, reason in _NOT_MODELLED_SERVING:
        if rx.search(str(row.get("notes") or "")):
            raise GpucostError(reason)
    gpu = _gpu(row, catalog)
    # the steps depend on token counts and the KV cache, not on the speed factors: scheduled once, priced per table
    rkey = (tuple(sorted(row.items())), spec, fmt, gpu)
    if rkey not in _ROW_SCHEDULES:
        if len(_ROW_SCHEDULES) > 4096:
            _ROW_SCHEDULES.clear()
        try:
            _ROW_SCHEDULES[rkey] = _row_schedule(row, spec, fmt, gpu)
        except GpucostError as exc:
            _ROW_SCHEDULES[rkey] = exc
    hit = _ROW_SCHEDULES[rkey]
    if isinstance(hit, GpucostError):
        raise GpucostError(str(hit))
    sched, replicas, per, pp, kv_dtype = hit
    eff = engine_efficiency(engine, catalog, fmt, key_backend(engine, backend_of(row), gpu), table=table)
    return sched, replicas, step_cost(spec, fmt, gpu, gpus=per, engine=engine, kv_dtype=kv_dtype, catalog=catalog,
                                      eff=eff, pp=pp)


def _row_schedule(row: dict, spec, fmt, gpu: Gpu):
    """(the :class:`~gpucost.replay.Schedule` of a serving row's benchmark on one replica, replicas, cards per
    replica, pipeline stages, KV dtype)."""
    engine = engine_of(row)
    prompt, gen = number(row.get("prompt_tokens")), number(row.get("gen_tokens"))
    if not prompt or not gen:
        raise GpucostError("the prompt and output lengths are not both stated")
    conc = _int(row.get("concurrency"), 0) or None
    if conc is None and engine == "llama.cpp":
        raise GpucostError("llama.cpp serves a fixed number of slots: the concurrency is not stated")
    if row["category"] != "serving_throughput" and conc is None and not sent_at_once(row):
        raise GpucostError("a latency under an open-loop request rate (no concurrency stated) is not estimated")
    per, replicas = _replica_gpus(row)
    clients = None if conc is None else max(1, conc // replicas)
    requests = bench_requests(row, clients)
    if replicas > 1:   # each replica serves its share of the requests (and of the clients)
        requests = requests[: max(1, len(requests) // replicas, clients or 1)]
    kv_dtype = _kv_dtype_of(row)
    sched = _bench_scheduler(row, engine, gpu, spec, fmt, per, clients, requests, kv_dtype)
    longest = max(r.prompt + r.output for r in requests)
    key = (spec.id, fmt.id, gpu.id, per, engine, kv_dtype, sched, tuple(requests), clients,
           _stated_fraction(row, ENGINE_PROFILES[engine].preallocate))
    if key not in _SCHEDULES:
        per_seq, pool = kv_capacity(spec, fmt, gpu, context=longest, prompt=max(r.prompt for r in requests),
                                    gpus=per, engine=engine, kv_dtype=kv_dtype, fraction=key[-1])
        if per_seq <= 0 or pool < per_seq:
            raise GpucostError(f"one sequence of {longest} tokens does not fit {per} × {gpu.id}")
        if len(_SCHEDULES) > 4096:
            _SCHEDULES.clear()
        _SCHEDULES[key] = schedule(requests, sched, clients=clients, kv_tokens=pool / per_seq * longest)
    return _SCHEDULES[key], replicas, per, _pipeline_stages(row), kv_dtype


def serving_throughput_at_shares(row: dict, catalog: Catalog, table: dict[str, EngineEfficiency],
                                 shares: Sequence[float] | np.ndarray) -> np.ndarray:
    """A serving-throughput row's estimate (output tokens/s) with a MoE model's routed experts at each of ``shares``
    of the dense compute rate (:func:`gpucost.validation.fit.fit_moe_share`); the row scheduled once."""
    sched, replicas, cost = _scheduled_row(row, row_model(row, catalog), row_format(row, catalog), catalog, table)
    return np.array([sched.output_tokens_per_s(replace(cost, moe_share=float(m)).seconds) * replicas for m in shares])


def _pipeline_stages(row: dict) -> int:
    """The pipeline stages of a serving row's replica: ``PPm`` after ``TPn`` in its notes, else 1."""
    m = _PARALLEL.search(str(row.get("notes") or ""))
    return int(m.group(2)) if m and m.group(2) else 1


def _serving(row: dict, spec, fmt, catalog: Catalog, table: dict[str, EngineEfficiency]) -> float:
    """A served load, as the row's benchmark measured it: its requests replayed through the engine's scheduler on
    gpucost's step model (:func:`_replay_row`) — output tokens/s of all replicas, or the mean TTFT / TPOT."""
    cat = row["category"]
    if cat == "serving_ttft" and _PREFIX_HITS.search(str(row.get("notes") or "")):
        raise GpucostError("the run's log shows its prompts hitting the prefix cache: a TTFT of prompts prefilled in "
                           "part is not estimated (the replay computes every prompt token)")
    rep, replicas = _replay_row(row, spec, fmt, catalog, table)
    if cat == "serving_throughput":
        # a client sending at a finite rate offers rate × output tokens per second: replicas that could serve more
        # serve what is offered (the replay sends every request at once)
        rate, gen = offered_rate(row), number(row.get("gen_tokens"))
        served = rep.output_tokens_per_s * replicas
        return served if rate is None or not gen else min(served, rate * gen)
    if cat == "serving_tpot":
        return rep.mean_tpot_ms
    # every request's TTFT also holds the server's own latency (EngineEfficiency.request_latency_ms)
    engine = engine_of(row)
    eff = engine_efficiency(engine, catalog, fmt, key_backend(engine, backend_of(row), _gpu(row, catalog)), table=table)
    return rep.mean_ttft_ms + eff.request_latency_ms


def row_model(row: dict, catalog: Catalog):
    """A corpus row's model (its :class:`~gpucost.models.ModelSpec` from models.csv); GpucostError if it has none."""
    mid = model_id(str(row["model_id"]), catalog)
    if mid is None:
        raise GpucostError(f"model '{row['model_id']}' is not in models.csv")
    return catalog_spec(mid, catalog)


def row_format(row: dict, catalog: Catalog):
    """A corpus row's weights format (``quant``, bf16 where empty); GpucostError if quant_formats.csv lacks it."""
    try:
        return get_format(str(row.get("quant") or "bf16"), catalog)
    except GpucostError:
        raise GpucostError(f"format '{row.get('quant')}' is not in quant_formats.csv") from None


def row_estimate(row: dict, catalog: Catalog, table: dict[str, EngineEfficiency] | None = None,
                 reserve_ratio: float | None = None, reserve_floor: float | None = None) -> float:
    """The estimator's value for one corpus row, in the row's comparison unit (``reserve_ratio``: the caching
    allocator's reserved ÷ allocated peak of a training run, ``reserve_floor`` the least of it a run keeps on a full
    card; None: data/allocator.csv's). Raises GpucostError
    (with the reason) when the row cannot be estimated."""
    table = table if table is not None else efficiency_table(catalog)
    cat = row["category"]
    if cat not in CATEGORIES:
        raise GpucostError(f"category '{cat}' is not estimated here")
    if cat == "mfu":
        # the training-time estimate's default MFU is one figure for every model and card (the user can set it): a
        # published MFU judges it whether or not the catalog lists the model (GPT-3 175B, a 530B GPT) or names the card
        return table["training"].mfu
    spec = row_model(row, catalog)   # every other category is judged on a catalog model
    fmt = row_format(row, catalog)
    if cat == "file_size":
        return weights_file_gib(spec, fmt)
    if cat == "inference_memory":
        return _inference_memory(row, spec, fmt, catalog)
    if cat == "training_memory":
        try:
            vram = float(_gpu(row, catalog).vram_gib)
        except GpucostError:  # no card or one gpus.csv lacks: the reserved estimate is not capped
            vram = None
        return _training_memory(row, spec, fmt, reserve_ratio, vram, reserve_floor)
    if cat in SERVING_CATEGORIES:
        return _serving(row, spec, fmt, catalog, table)
    return _speed(row, spec, fmt, catalog, table)


_SLUG = re.compile(r"[^a-z0-9.]+")


def source_of(row: dict) -> str:
    """A row's source document (its ``source_id``; else one made from its URL)."""
    sid = str(row.get("source_id") or "")
    return sid or _SLUG.sub("-", re.sub(r"#.*", "", str(row.get("source") or "")).lower()).strip("-")


def is_finite(x) -> bool:
    return x is not None and isinstance(x, float) and math.isfinite(x)
