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
  else prompt + generated tokens; the prompt (the largest forward pass) is ``prompt_tokens`` when given.
* Training memory: the framework's row of data/training_profiles.csv in force on the row's date; from its notes,
  the LoRA targets ("query+value only", "on q_proj k_proj v_proj o_proj"), the LoRA dropout ("dropout 0.1"),
  Cut Cross-Entropy, FlashAttention-2 (K and V kept at their own heads), the gradient accumulation steps, pure bf16
  full fine-tuning (an HF Trainer run of a model loaded in bf16), one process split over its cards by device_map
  (pipeline stages) and a figure that is the total over the GPUs; an optimizer gpucost does not model is skipped.
* Decode speed: batch-1 rows per sequence; a batch row is the aggregate over the batch when its notes say
  so, else per sequence; the KV length is prompt + generated / 2. Prefill: a prompt of ``prompt_tokens``
  (else ``context``) tokens; time to first token is that prompt's prefill time.
"""

from __future__ import annotations

import math
import re

from gpucost.catalog import Catalog
from gpucost.errors import GpucostError
from gpucost.kernel_paths import Software, software_of
from gpucost.memory import Setup, estimate, kv_pool_gib, occupied_gib
from gpucost.memory_profiles import ENGINE_PROFILES, OPTIMIZERS
from gpucost.models import catalog_spec, model_id
from gpucost.quant import GIB, get_format, weights_file_gib
from gpucost.records import Gpu, gpu_records
from gpucost.serialize import number
from gpucost.serving import closed_loop_latency, saturated
from gpucost.speed import EngineEfficiency, efficiency_table, engine_efficiency, key_backend, speed

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


def comparison_value(row: dict) -> tuple[float, str]:
    """A row's measured value in its category's comparison unit (see the module docstring)."""
    cat, unit, value = str(row["category"]), str(row["unit"]), float(row["measured"])
    want = COMPARE_UNIT.get(cat)
    if want == "GiB" and unit in UNIT_TO_GIB:
        return value * UNIT_TO_GIB[unit], "GiB"
    if want == "tokens/s" and unit == "tokens/s":
        return value, "tokens/s"
    if cat == "serving_throughput" and unit == "tokens/s/gpu":
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
              flash_attention=FLASH_BY_ENGINE.get(engine, True))
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
_ATTENTION_ONLY = re.compile(r"\bq,\s*k,\s*v,\s*o only|attention (?:projections|layers) only"
                             # a list of the four attention projections and no MLP one ("on q_proj k_proj v_proj o_proj")
                             r"|\bq_proj\W+k_proj\W+v_proj\W+o_proj\b(?!\W+(?:\w+\W+)?(?:gate|up|down)_proj)",
                             re.IGNORECASE)
#: a LoRA dropout probability the notes state ("dropout 0.1", "lora_dropout=0.05", "dropout 0")
_LORA_DROPOUT = re.compile(r"\b(?:lora[_ ])?dropout\s*[=:]?\s*(\d*\.?\d+)(?![\d.])", re.IGNORECASE)
#: a full fine-tuning run of the HF Trainer (or FSDP without a mixed-precision policy) on a model loaded in bf16: its
#: parameters, gradients and AdamW states are bf16 (torch's AdamW keeps its states in the parameters' dtype)
_PURE_BF16 = re.compile(r"torch_dtype\s*[=:]?\s*(?:torch\.)?bfloat16|pure bf16|loaded in bf16", re.IGNORECASE)
_MIXED = re.compile(r"mixed[_ ]precision\s*(?:policy|bf16|fp16)|bf16-mixed|master weights|fp32 master",
                    re.IGNORECASE)
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


def lora_targets_of(row: dict) -> str:
    """The LoRA target set a row's notes state (q and v only, the attention projections only), else every Linear."""
    notes = str(row.get("notes") or "")
    if _QV_ONLY.search(notes):
        return "qv"
    return "attention" if _ATTENTION_ONLY.search(notes) else "all-linear"


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
    """"bf16" for a full fine-tuning row of the HF Trainer whose notes say the model was loaded in bf16 (and name no
    mixed-precision policy or fp32 master weights): pure bf16 training; else None (the framework's default)."""
    notes = str(row.get("notes") or "")
    if (str(row.get("mode") or "") == "full" and str(row.get("engine") or "").lower() in _HF_TRAINER
            and _PURE_BF16.search(notes) and not _MIXED.search(notes)):
        return "bf16"
    return None


def _training_memory(row: dict, spec, fmt, reserve_ratio: float | None = None) -> float:
    framework = engine_of(row)
    ctx, _, _ = _tokens(row)
    if ctx < 1:
        raise GpucostError("the sequence length is not stated")
    opt = str(row.get("optimizer") or "")
    if opt and opt not in OPTIMIZERS:
        raise GpucostError(f"optimizer '{opt}' is not modelled")
    ckpt = str(row.get("grad_checkpointing") or "true").lower() not in ("false", "0", "no")
    offload = str(row.get("offload") or "").lower()
    if offload not in ("none", "cpu", "nvme"):
        offload = "cpu" if "cpu offload" in str(row.get("notes") or "").lower() else "none"
    zero = _int(row.get("zero_stage"), 0)
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
              lora_rank=_int(row.get("lora_rank"), Setup.lora_rank), optimizer=opt or None,
              lora_targets=lora_targets_of(row), grad_checkpointing=ckpt, flash_attention=True,
              framework_as_of=str(row.get("as_of") or "") or None,
              loss_kernel="cce" if _CCE.search(str(row.get("notes") or "")) else None, reserve_ratio=reserve_ratio,
              lora_dropout=lora_dropout_of(row), precision=precision_of(row),
              gqa_expand=False if _FA2.search(notes) else None, grad_accum=grad_accum_of(row))
    est = estimate(spec, fmt, s)
    kind = str(row.get("measure_kind") or "unknown")
    # nvidia-smi: the reserved peak and the CUDA context; the allocator's reserved peak; every other kind (the
    # allocated peak, an unnamed figure) the allocated peak
    value = {"nvidia_smi": est.per_gpu.total, "reserved": est.engine_gib}.get(kind, est.allocated_gib)
    return value * _cards_summed(row)


def _aggregate(row: dict) -> bool:
    return _int(row.get("batch"), 1) > 1 and "aggregate" in str(row.get("notes") or "").lower()


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
    if cat in ("decode_speed", "tpot"):
        kv = max(1, int(round((prompt or ctx) + gen / 2)))
        sp = speed(spec, fmt, gpu, gpus=gpus, batch=batch, context=kv, engine=engine, catalog=catalog, eff=eff,
                   cpu_moe=cpu_moe, host_bw_gbps=host_bw, software=software_of_row(row))
        tps = sp.decode_tokens_per_s if _aggregate(row) else sp.decode_tokens_per_s_per_seq
        return tps if cat == "decode_speed" else 1000.0 / sp.decode_tokens_per_s_per_seq
    p = max(prompt or ctx, 1)
    sp = speed(spec, fmt, gpu, gpus=gpus, batch=1, context=p, engine=engine, catalog=catalog, eff=eff,
               cpu_moe=cpu_moe, host_bw_gbps=host_bw, software=software_of_row(row))
    if sp.prefill_tokens_per_s is None:
        raise GpucostError(f"{gpu.id} has no dense throughput figure")
    if cat == "prefill_speed":
        return sp.prefill_tokens_per_s * (batch if _aggregate(row) else 1)
    return 1000.0 * p * batch / sp.prefill_tokens_per_s  # the prompts of a batch are one prefill


_PARALLEL = re.compile(r"\bTP\s*=?\s*(\d+)(?:\s*,\s*PP\s*=?\s*(\d+))?")


def _replica_gpus(row: dict) -> tuple[int, int]:
    """(cards per replica, replicas) of a serving row: ``TPn`` (and ``PPm``) in its notes, else one replica on
    every card. Pipeline stages are modelled as tensor-parallel ranks: in a saturated run both split the
    weights and the work evenly."""
    gpus = _int(row.get("num_gpus"), 1)
    m = _PARALLEL.search(str(row.get("notes") or ""))
    per = int(m.group(1)) * int(m.group(2) or 1) if m else gpus
    if per < 1 or gpus % per:
        raise GpucostError(f"{gpus} cards do not split into replicas of TP×PP = {per}")
    return per, gpus // per


def _serving(row: dict, spec, fmt, catalog: Catalog, table: dict[str, EngineEfficiency]) -> float:
    """A load served with several requests in flight: :func:`gpucost.serving.saturated` at the row's
    concurrency (clients that send a new request when one finishes), else with as many sequences as fit
    (an offline run: every request queued at once)."""
    cat = row["category"]
    engine = engine_of(row)
    if "disaggregat" in str(row.get("notes") or "").lower():
        raise GpucostError("prefill-decode disaggregation is not modelled")
    gpu = _gpu(row, catalog)
    prompt, gen = number(row.get("prompt_tokens")), number(row.get("gen_tokens"))
    if not prompt or not gen:
        raise GpucostError("the prompt and output lengths are not both stated")
    conc = _int(row.get("concurrency"), 0) or None
    if conc is None and engine == "llama.cpp":
        raise GpucostError("llama.cpp serves a fixed number of slots: the concurrency is not stated")
    if cat != "serving_throughput" and conc is None:
        raise GpucostError("a latency under an open-loop request rate (no concurrency stated) is not estimated")
    per, replicas = _replica_gpus(row)
    eff = engine_efficiency(engine, catalog, fmt, key_backend(engine, backend_of(row), gpu), table=table)
    n_in, n_out = max(int(round(prompt)), 1), max(int(round(gen)), 1)
    if conc is not None:   # the clients are spread over the replicas
        conc = max(1, conc // replicas)
    pt = saturated(spec, fmt, gpu, n_in, n_out, concurrency=conc, gpus=per, engine=engine, catalog=catalog, eff=eff)
    if cat == "serving_throughput":
        return pt.requests_per_s * n_out * replicas
    ttft, tpot = closed_loop_latency(pt, n_out)
    return ttft if cat == "serving_ttft" else tpot


def row_estimate(row: dict, catalog: Catalog, table: dict[str, EngineEfficiency] | None = None,
                 reserve_ratio: float | None = None) -> float:
    """The estimator's value for one corpus row, in the row's comparison unit (``reserve_ratio``: the caching
    allocator's reserved ÷ allocated peak of a training run; None: data/allocator.csv's). Raises GpucostError
    (with the reason) when the row cannot be estimated."""
    table = table if table is not None else efficiency_table(catalog)
    cat = row["category"]
    if cat not in CATEGORIES:
        raise GpucostError(f"category '{cat}' is not estimated here")
    mid = model_id(str(row["model_id"]), catalog)
    if mid is None:  # every category, MFU included: each row is judged on a catalog model
        raise GpucostError(f"model '{row['model_id']}' is not in models.csv")
    if cat == "mfu":
        return table["training"].mfu
    spec = catalog_spec(mid, catalog)
    try:
        fmt = get_format(str(row.get("quant") or "bf16"), catalog)
    except GpucostError:
        raise GpucostError(f"format '{row.get('quant')}' is not in quant_formats.csv") from None
    if cat == "file_size":
        return weights_file_gib(spec, fmt)
    if cat == "inference_memory":
        return _inference_memory(row, spec, fmt, catalog)
    if cat == "training_memory":
        return _training_memory(row, spec, fmt, reserve_ratio)
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
