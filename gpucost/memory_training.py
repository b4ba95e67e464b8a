"""Training memory: what a fine-tuning run keeps on each card — the ZeRO paper's model states (Rajbhandari et al.
2020, arXiv 1910.02054, section 3.1: 16-bit weights and gradients plus K bytes of optimizer state per parameter,
divided by the ZeRO stage), the activations kept for backward and the loss's logits, as each training framework's
code lays them out (data/training_profiles.csv, :class:`~gpucost.memory_profiles.TrainingProfile`), and what
PyTorch's caching allocator reserves above that allocated peak (data/allocator.csv) — the card must hold the
reserved figure, not the allocated one. The scalar estimate and the whole fit matrix (:mod:`gpucost.memory`,
:mod:`gpucost.fit_matrix`) both call :func:`training_bytes`."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from gpucost.errors import GpucostError, UnknownNameError
from gpucost.memory_profiles import (
    ACT_BYTES,
    CUDA_CONTEXT_GIB,
    FSDP_ONLY_FRAMEWORKS,
    LOSS_KERNELS,
    OPTIMIZERS,
    PRECISIONS,
    TRAINING_FRAMEWORKS,
    ZERO3_LIVE_LAYERS,
    ZERO_REDUCE_BUCKET,
    TrainingProfile,
)
from gpucost.quant import GIB

if TYPE_CHECKING:
    from gpucost.memory import Setup


#: the fields of a training profile row (data/training_profiles.csv) and how each is read; a row with ``based_on``
#: may leave any of them empty: the based_on framework's value on the run's date
_FIELDS = {"precision": ("precision", str), "kbit_param_bytes": ("kbit_param_bytes", float),
           "loss_bytes_per_logit": ("logit_bytes", float), "norm_saves_fp32": ("norm_saves_fp32", bool),
           "gqa_expand": ("gqa_expand", bool), "quant_saves_inputs": ("quant_saves_inputs", bool),
           "lora_dropout": ("lora_dropout", bool), "optimizer_in_backward": ("optimizer_in_backward", bool),
           "offload_checkpoints": ("offload_checkpoints", bool), "adapter_copy": ("adapter_copy", str),
           "kbit_act_bytes": ("kbit_act_bytes", float)}
#: a field a row without based_on leaves empty (a user's table written before the column existed): the value that
#: keeps such a table's meaning
_FIELD_DEFAULTS = {"adapter_copy": "none", "kbit_act_bytes": 2.0}


def _given(v) -> bool:
    return v is not None and not (isinstance(v, float) and np.isnan(v)) and str(v) != ""


@lru_cache(maxsize=64)
def _profile_rows(key: tuple) -> tuple[tuple[str, dict], ...]:
    from gpucost.catalog import load_table

    t = load_table("training_profiles").sort_values("since", kind="stable")
    return tuple((str(r["since"]), dict(r)) for _, r in t.iterrows())


def training_profile(framework: str, as_of: str | None = None) -> TrainingProfile:
    """The row of data/training_profiles.csv for ``framework``: the newest one, or the newest in force on the date
    ``as_of`` (a measurement's date, when its framework version is not stated). A row ``based_on`` another framework
    takes the fields it leaves empty from that framework's row in force on the same date, so a change in the library
    it runs on (a newer transformers row) reaches it."""
    from gpucost.catalog import table_path

    p = table_path("training_profiles")
    rows = _profile_rows((str(p), p.stat().st_mtime_ns))
    return _resolve(rows, framework, as_of, ())


def _resolve(rows, framework: str, as_of: str | None, seen: tuple[str, ...]) -> TrainingProfile:
    own = [(since, r) for since, r in rows if r["framework"] == framework]
    if not own:
        raise UnknownNameError("training framework", framework, TRAINING_FRAMEWORKS)
    dated = [r for since, r in own if as_of is None or since <= as_of]
    row = dated[-1] if dated else own[0][1]
    values = {k: row.get(k) for k in _FIELDS}
    base_name = str(row.get("based_on") or "")
    if _given(base_name) and any(not _given(v) for v in values.values()):
        if base_name in seen or base_name == framework:
            raise GpucostError(f"training_profiles.csv: '{framework}' is based on itself through {base_name}")
        base = _resolve(rows, base_name, as_of, (*seen, framework))
        values = {k: v if _given(v) else getattr(base, _FIELDS[k][0]) for k, v in values.items()}
    for k, v in values.items():
        if not _given(v):
            if k not in _FIELD_DEFAULTS:
                raise GpucostError(f"training_profiles.csv: '{framework}' (since {row['since']}) gives no {k} and is "
                                   "based on no framework that does")
            values[k] = _FIELD_DEFAULTS[k]
    return TrainingProfile(framework=framework, version=str(row.get("version") or ""), source=str(row["source"]),
                           **{_FIELDS[k][0]: _FIELDS[k][1](v) for k, v in values.items()})


@lru_cache(maxsize=8)
def _reserve_rows(key: tuple, column: str = "churn_reserved_over_allocated") -> dict[str, float]:
    from gpucost.catalog import load_table

    t = load_table("allocator")
    return {str(r["regime"]): float(r[column]) for _, r in t.iterrows()}


def reserve_ratio(regime: str = "training") -> float:
    """PyTorch's caching allocator: what it reserves ÷ what is allocated, of the memory a training step frees and
    allocates again — gradients, the optimizer step's temporaries, activations and logits; the weights and optimizer
    states, allocated once and kept, take no reserve (data/allocator.csv: the median over documents of one run's two
    figures, torch.cuda.max_memory_reserved or nvidia-smi beside max_memory_allocated, each less the run's
    estimated weights and optimizer states). Blocks a step frees stay cached and are split for smaller requests
    (c10/cuda/CUDACachingAllocator.cpp), so the card holds more than is ever allocated at once."""
    return _allocator_value(regime, "churn_reserved_over_allocated")


def reserve_floor(regime: str = "training") -> float:
    """The least of the allocator's reserve a run keeps when the card is full: reserved ÷ allocated of the memory a
    step frees and allocates again (:func:`reserve_ratio`) at the p10 of the corpus's pairs (data/allocator.csv). Above it the reserve is cached blocks PyTorch gives back when cudaMalloc
    fails; the p10 stands for what it cannot give back (blocks split among live tensors)."""
    return _allocator_value(regime, "p10")


def _allocator_value(regime: str, column: str) -> float:
    from gpucost.catalog import table_path

    p = table_path("allocator")
    rows = _reserve_rows((str(p), p.stat().st_mtime_ns), column)
    if regime not in rows:
        raise UnknownNameError("allocator regime", regime, tuple(rows))
    return rows[regime]


#: the Linear layers of a decoder block a LoRA target set adapts, by their input: (attention input (q, k, v),
#: attention output (o), MLP input (gate, up), MLP product (down)) — how many Linears of each are adapted
_LORA_INPUTS = {"all-linear": (3, 1, 2, 1), "attention": (3, 1, 0, 0), "qkv": (3, 0, 0, 0), "qv": (2, 0, 0, 0)}


def training_activation_bytes(spec_arrays: dict, seq: float, micro_batch: float, flash: bool, checkpointing: bool,
                              prof: TrainingProfile, mode: str = "full", quantized=False,
                              lora_targets: str = "all-linear", loss_kernel: str | None = None,
                              lora_dropout: bool | None = None, gqa_expand: bool | None = None
                              ) -> dict[str, np.ndarray]:
    """What one micro-batch keeps for backward [bytes]: ``saved`` (the layers' tensors) and ``logits`` (the loss's).

    Per token per layer (16-bit values unless said), the tensors autograd keeps, counted the way Korthikanti et
    al. 2022 (arXiv 2205.05198, section 4.1) count them, for a gated MLP, grouped-query attention, RMSNorm and no
    dropout — and split by who keeps them, since a frozen Linear keeps nothing (tools/saved_tensors.py lists them
    from the real code on the CPU):

    * always: the two norms' inputs 4h (8h where the framework's RMSNorm keeps an fp32 copy), and a per-head q/k
      norm's 2·(q + kv) (4·(q + kv) in fp32); attention Q 2·q,
      K and V 4·kv (4·q where they are expanded to every query head), its output 2·q; the MLP's gate, up and
      activation outputs 6·I (an ungated MLP's first output 2·I) — in QLoRA at ``prof.kbit_act_bytes`` per value
      (fp32 where the norms' weights were left fp32); without FlashAttention (Dao et al. 2022, arXiv 2205.14135)
      the softmax output 2·heads·seq;
    * the inputs of the Linears that need them for backward — every Linear in full fine-tuning (4h + 2·I, shared);
      in QLoRA where the quantized Linear's autograd function keeps its input (bitsandbytes' MatMul4Bit before
      0.43.2), each Linear's own 16-bit cast where the activations are fp32, else the shared inputs; in LoRA the
      adapted Linears' inputs: shared with the frozen Linear's, or a 16-bit copy of each adapter's own where
      ``prof.adapter_copy`` says so, plus a 1-byte dropout mask per input value with LoRA dropout (an own dropout
      output and mask, 3 bytes, where the inputs are otherwise shared).

    With full activation checkpointing only each layer's input is kept (2h, or the width of a residual stream
    an fp32 cast made 4 bytes), plus one layer's full set while it is recomputed (``offload_checkpoints``: the
    layer inputs wait in CPU RAM instead). The loss keeps ``prof.logit_bytes`` per token per vocabulary entry
    (a fused ``loss_kernel``'s instead: :data:`LOSS_KERNELS`). ``lora_dropout``: whether the run's LoRA dropout is
    above 0 (None: the framework's default); ``gqa_expand``: whether K and V are repeated to every query head (None:
    the framework's).
    """
    a = spec_arrays
    h, ffn = a["h"], a["mlp_tok"]
    q = a["heads"] * (a["kv_vals_expanded"] / np.maximum(2 * a["kv_heads"], 1))  # heads × head_dim (approx. for MLA)
    kv = a["kv_vals"] / 2
    gated = a["gated"] > 0
    quantized = np.asarray(quantized, dtype=bool)
    qlora = quantized & (mode == "qlora")
    norms = (8 if prof.norm_saves_fp32 else 4) * h
    # per-head q/k norms (Qwen3, Gemma 3: models.QK_NORM_FAMILIES) keep their inputs too, fp32 where RMSNorm upcasts
    norms = norms + a["qk_norm"] * (4 if prof.norm_saves_fp32 else 2) * (q + kv)
    expand = prof.gqa_expand if gqa_expand is None else gqa_expand
    attn = 2 * q + 4 * (q if expand else kv) + 2 * q
    mlp = np.where(gated, 6, 2) * ffn * np.where(qlora, prof.kbit_act_bytes / ACT_BYTES, 1.0)
    linear_inputs = 4 * h + 2 * ffn
    if mode == "full":
        inputs = linear_inputs
    else:
        n_attn, n_out, n_mlp, n_down = _LORA_INPUTS.get(lora_targets, _LORA_INPUTS["all-linear"])
        dropout = prof.lora_dropout if lora_dropout is None else lora_dropout
        values = n_attn * h + n_out * q + n_mlp * h + n_down * ffn  # one input per adapted Linear
        own = np.asarray(prof.adapter_copy == "always", dtype=bool) | (quantized & (prof.adapter_copy == "quantized"))
        keeps = quantized & prof.quant_saves_inputs
        # each quantized Linear casts an fp32 input to its compute dtype itself: q, k, v, gate and up 5h, o q, down I
        per_linear = 2 * (5 * h + q + ffn)
        base = np.where(keeps, np.where(qlora & (prof.kbit_act_bytes > ACT_BYTES), per_linear, linear_inputs), 0.0)
        shared = 2 * ((n_attn > 0) * h + (n_mlp > 0) * h + (n_down > 0) * ffn)  # read from the frozen Linears' inputs
        adapted = np.where(own, (2 + (1 if dropout else 0)) * values,
                           3 * values if dropout else np.where(keeps, 0.0, shared))
        inputs = base + adapted
    per_layer_tok = norms + attn + mlp + inputs
    if not flash:
        per_layer_tok = per_layer_tok + 2 * a["heads"] * seq
    tokens = seq * micro_batch
    L = a["L"]
    if checkpointing:
        width = np.where(quantized, prof.kbit_param_bytes, ACT_BYTES) if mode == "qlora" else ACT_BYTES
        stored = tokens * ((0 if prof.offload_checkpoints else L * width * h) + per_layer_tok)
    else:
        stored = tokens * L * per_layer_tok
    logit_bytes = prof.logit_bytes if loss_kernel is None else LOSS_KERNELS[loss_kernel]
    return {"saved": stored, "logits": tokens * a["vocab"] * logit_bytes}


def training_bytes(a: dict, N, s: Setup, trainable, fmt_quantized: bool) -> dict[str, np.ndarray]:
    """Per-GPU and CPU/NVMe bytes of a training setup for data-parallel rank counts ``N`` (broadcast).

    Tensor × pipeline parallel (``s.tp``, ``s.pp``) split the model states over ``tp × pp`` GPUs (each
    holds that share of the layers' weights, gradients and optimizer states) and the activations over
    ``tp`` (Megatron-style tensor parallel splits them; the first pipeline stage keeps ``pp``
    micro-batches in flight, which offsets its 1/pp share of the layers); CPU/NVMe likewise per GPU."""
    N = np.asarray(N, dtype=float)
    mp, tp = float(s.tp * s.pp), float(s.tp)
    prof = training_profile(s.engine, s.framework_as_of)
    prec = PRECISIONS["mixed" if _fp32_copies(s, prof) else (s.precision or prof.precision)]
    opt_name = s.optimizer or ("paged-adamw" if s.mode == "qlora" else "adamw")
    opt = OPTIMIZERS[opt_name]
    state_b = opt.state_bytes if opt.state_bytes is not None else prec["state"]
    k_bytes = prec["master"] + opt.states * state_b  # the K of the ZeRO paper
    zero, off = s.zero, s.offload
    trainable = np.asarray(trainable, dtype=float)
    full = s.mode == "full"
    # weights: full FT holds its trainable copy at the precision's width; LoRA holds the frozen base in its
    # format plus the adapters (trainable) at the weight width
    quantized = np.asarray(fmt_quantized, dtype=bool)
    if full:
        base_w = trainable * prec["weight"]
    else:
        # a quantized base keeps its embeddings, output head and norms unquantized, at the width the framework's
        # preparation leaves them (PEFT's prepare_model_for_kbit_training: fp32)
        cast = np.where(quantized, prof.kbit_param_bytes / ACT_BYTES - 1.0, 0.0)
        base_w = a["total_b"] + (a["embed_b"] + (1 - a["tied"]) * a["output_b"] + a["vectors_b"]) * cast \
            + trainable * prec["weight"]
    ws = ZERO3_LIVE_LAYERS * a["layer_params"] * (prec["weight"] if full else a["total_b"] / np.maximum(a["params"], 1))
    if zero >= 3:
        shard = base_w / N + ws
        weights = np.minimum(base_w, shard) if off == "none" else np.minimum(base_w, ws)
    else:
        weights = base_w * np.ones_like(N)
    grads_full = trainable * prec["grad"]
    in_bwd = s.optimizer_in_backward if s.optimizer_in_backward is not None else \
        (prof.optimizer_in_backward and full and s.gpus == 1)
    if zero >= 2:
        grads = grads_full / N
        if off != "none":
            grads = np.minimum(grads, ZERO_REDUCE_BUCKET * prec["grad"])
    else:
        grads = grads_full * np.ones_like(N)
    if in_bwd:  # each gradient is freed as soon as its parameter is updated: the largest one is alive
        grads = np.minimum(grads, a["largest_tensor"] * prec["grad"])
    opt_gpu, cpu, nvme = _optimizer_states(trainable * k_bytes, N, zero, off, opt.paged,
                                           grads_full if zero >= 2 else 0.0, base_w if zero >= 3 else 0.0)
    kept = training_activation_bytes(a, float(s.context), float(s.batch), s.flash_attention, s.grad_checkpointing,
                                     prof, s.mode, quantized, s.lora_targets, s.loss_kernel,
                                     None if s.lora_dropout is None else s.lora_dropout > 0, s.gqa_expand)
    # QLoRA dequantizes one weight matrix at a time to the compute dtype
    dequant = np.where(quantized, a["largest_block"] * ACT_BYTES, 0.0)
    logits = kept["logits"]
    act = kept["saved"] + logits + dequant
    step = _step_temporaries(a, N, s, prof, opt, state_b, trainable, in_bwd)
    # the first gradient backward produces is the output head's (a full fine-tune's; LoRA's are all small)
    head_grad = np.minimum(grads, a["vocab"] * a["h"] * prec["grad"] / (N if zero >= 2 else 1.0)) if full else grads
    if mp > 1:
        weights, grads, opt_gpu, cpu, nvme, step, head_grad = (
            x / mp for x in (weights, grads, opt_gpu, cpu, nvme, step, head_grad))
        act, logits, dequant = act / tp, logits / tp, dequant / tp
    grads, step_extra, act, logits, dequant = _at_peak(grads, head_grad, step, act, logits, dequant, s.grad_accum)
    optimizer = opt_gpu + step_extra
    # the caching allocator reserves more than the allocated peak: the card holds the reserved figure. What a step
    # frees and allocates again (gradients, the step's temporaries, activations and logits) leaves cached and split
    # blocks behind; the weights and the optimizer states are allocated once and kept (reserve_ratio)
    ratio = s.reserve_ratio if s.reserve_ratio is not None else reserve_ratio("training")
    churn = grads + step_extra + act
    reserve = (ratio - 1.0) * churn
    # what of it the allocator cannot give back when the card is full (the need, memory.Estimate.need_gib)
    floor = min(s.reserve_floor if s.reserve_floor is not None else reserve_floor("training"), ratio)
    kept = (floor - 1.0) * churn
    overhead = CUDA_CONTEXT_GIB * GIB + reserve
    shape = np.broadcast(weights, grads, optimizer, act, N).shape
    return {"weights": np.broadcast_to(weights, shape), "kv_cache": np.zeros(shape),
            "activations": np.broadcast_to(act, shape), "gradients": np.broadcast_to(grads, shape),
            "optimizer": np.broadcast_to(optimizer, shape), "overhead": np.broadcast_to(overhead, shape),
            "reserve": np.broadcast_to(reserve, shape), "kept": np.broadcast_to(kept, shape), "step": np.broadcast_to(step_extra, shape),
            "cpu": np.broadcast_to(cpu, shape), "nvme": np.broadcast_to(nvme, shape),
            "logits": np.broadcast_to(logits, shape), "dequant": np.broadcast_to(dequant, shape)}


def steps_fp32_copies(s: Setup) -> bool:
    """Whether a run asked to train in pure bf16 keeps fp32 master weights and fp32 Adam states all the same: DeepSpeed
    steps it, and DeepSpeed's optimizers step fp32 copies of the 16-bit parameters whatever dtype the model was loaded
    in (runtime/zero/stage_1_and_2.py single_partition_of_fp32_groups, stage3.py fp32_partitioned_groups_flat,
    runtime/bf16_optimizer.py fp32_groups_flat_partition)."""
    return _fp32_copies(s, training_profile(s.engine, s.framework_as_of))


def _fp32_copies(s: Setup, prof: TrainingProfile) -> bool:
    return (s.precision or prof.precision) == "bf16" and _deepspeed(s, prof)


def _deepspeed(s: Setup, prof: TrainingProfile) -> bool:
    """Whether DeepSpeed's optimizer steps the run: ZeRO (``s.zero``) sharded by DeepSpeed — never for a framework that
    shards with FSDP only (:data:`FSDP_ONLY_FRAMEWORKS`) — or the deepspeed framework."""
    return ((s.zero >= 1 and s.sharder == "deepspeed" and prof.framework not in FSDP_ONLY_FRAMEWORKS)
            or prof.framework == "deepspeed")


def _step_temporaries(a: dict, N, s: Setup, prof: TrainingProfile, opt, state_b: float, trainable,
                      in_bwd: bool) -> np.ndarray:
    """The optimizer step's state-sized temporaries per GPU [bytes] (Optimizer.step_temps): none where the states are
    paged or the step runs on the CPU (offload), one parameter's where it runs in backward, none under DeepSpeed ZeRO
    (``s.zero`` with ``s.sharder`` deepspeed, or the deepspeed framework) whose Adam is its own FusedAdam
    (deepspeed/ops/adam/fused_adam.py: multi_tensor_applier updates in place); PyTorch FSDP steps torch's AdamW on
    each rank's shard of the flat parameters (torch/optim/adamw.py _multi_tensor_adamw: torch._foreach_sqrt of the
    exp_avg_sqs, a shard-sized copy)."""
    temps = 0.0 if (opt.paged or s.offload != "none" or _deepspeed(s, prof)) else opt.step_temps * state_b
    if in_bwd:
        return a["largest_tensor"] * temps * np.ones_like(N)
    return trainable * temps / (N if s.zero >= 1 else 1.0) * np.ones_like(N)


def _optimizer_states(opt_total, N, zero: int, off: str, paged: bool, grads_moved, weights_moved):
    """Optimizer states per GPU, and what CPU RAM and NVMe hold per GPU [bytes]: ZeRO stage 1+ shards the states over
    the ``N`` ranks; a paged optimizer's states are evicted to CPU RAM when the GPU is full (not required on it);
    ZeRO offload moves the states (and, from stage 2, the gradients and from stage 3 the weights) to ``off``."""
    opt_gpu = opt_total / N if zero >= 1 else opt_total * np.ones_like(N)
    cpu = np.zeros(np.broadcast(N, opt_total).shape)
    nvme = np.zeros_like(cpu)
    if paged:
        cpu = cpu + opt_total
        opt_gpu = opt_gpu * 0.0
    if off != "none":
        moved = opt_total + grads_moved + weights_moved
        if off == "cpu":
            cpu = cpu + moved
        else:
            nvme = nvme + moved
        opt_gpu = opt_gpu * 0.0
    return opt_gpu, cpu, nvme


def _at_peak(grads, head_grad, step, act, logits, dequant, grad_accum: int | None):
    """What of the gradients, the optimizer step's temporaries and the activations (with the loss's logits and the
    dequantized weight in them) is on the card at a training step's peak: (gradients, step temporaries above the
    rest, activations, logits, dequant).

    With gradient accumulation (or not known: ``grad_accum`` None) the gradients stay while the next micro-batch keeps
    its activations, and the step's temporaries replace the freed activations: every gradient and the larger of the
    two. With one micro-batch per step the peak is the backward pass (its activations and the first gradient,
    ``head_grad``) or the optimizer step (every gradient and the temporaries), whichever holds more."""
    if grad_accum is None or grad_accum > 1:
        return grads, np.maximum(step - act, 0.0), act, logits, dequant
    at_step = grads + step > act + head_grad
    return (np.where(at_step, grads, head_grad), np.where(at_step, step, 0.0),
            *(np.where(at_step, 0.0, x) for x in (act, logits, dequant)))


#: the parts of a training peak, as :func:`training_terms` names them (locale keys ``term_<name>``)
TRAINING_TERMS = ("weights", "gradients", "optimizer", "optimizer_step", "activations", "logits", "dequant", "allocator",
                  "context")


def training_terms(b: dict) -> tuple[tuple[str, float], ...]:
    """A training peak's parts [GiB], largest first: the weights, gradients and optimizer states on the card, the
    optimizer step's temporaries where the step is the peak, the activations kept for backward, the loss's logits, the dequantized weight of a quantized base, what the caching
    allocator reserves above the allocated peak and the CUDA context (they add up to the per-GPU total)."""
    first = {k: float(np.asarray(v).reshape(-1)[0]) / GIB for k, v in b.items()}
    parts = {"weights": first["weights"], "gradients": first["gradients"],
             "optimizer": first["optimizer"] - first["step"], "optimizer_step": first["step"],
             "activations": first["activations"] - first["logits"] - first["dequant"], "logits": first["logits"],
             "dequant": first["dequant"], "allocator": first["reserve"], "context": first["overhead"] - first["reserve"]}
    return tuple(sorted(((k, parts[k]) for k in TRAINING_TERMS), key=lambda kv: -kv[1]))
