"""Multi-GPU training: plain data parallel, ZeRO 1/2/3, CPU or NVMe offload, tensor/pipeline parallel —
the fewest GPUs that hold a run, its throughput, time and cost, and a DeepSpeed config.

Memory is :mod:`gpucost.memory`'s one training model (:func:`gpucost.memory.min_gpus`), speed is
:func:`gpucost.speed.training_time`, the price of a GPU-hour is :mod:`gpucost.economics`'. No other
model of either: page 02, this planner and the rules-of-thumb page give the same GPU count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpucost import memory
from gpucost.catalog import Catalog
from gpucost.economics import card_hourly_cost, job_cost
from gpucost.errors import GpucostError, UnknownNameError
from gpucost.i18n import Message
from gpucost.models import ModelSpec, resolve_model
from gpucost.quant import QuantFormat, get_format
from gpucost.records import Gpu
from gpucost.records import gpu as gpu_record
from gpucost.serialize import Record, jsonable
from gpucost.specs import DEFAULTS
from gpucost.speed import training_time
from gpucost.units import SECONDS_PER_HOUR

TRAIN_MODES = ("full", "lora", "qlora")
OFFLOADS = ("none", "cpu", "nvme")
DEFAULT_NVME_PATH = "/local_nvme"  # the path in DeepSpeed's config-json examples
DEEPSPEED_DOC = "https://www.deepspeed.ai/docs/config-json/"
#: tensor-parallel widths and pipeline depths tried for the Megatron-style layout (tp within a node)
TP_WIDTHS = (2, 4, 8)
PP_DEPTHS = (1, 2, 4, 8, 16, 32)


@dataclass(frozen=True)
class Strategy:
    name: str
    zero_stage: int
    offload: str = "none"  # optimizer (and, stage 3, parameter) offload: none | cpu | nvme
    tp: int = 1
    pp: int = 1

    @property
    def model_parallel(self) -> int:
        return self.tp * self.pp


STRATEGIES = (
    Strategy("dp", 0), Strategy("zero1", 1), Strategy("zero2", 2), Strategy("zero3", 3),
    Strategy("zero2+cpu", 2, "cpu"), Strategy("zero3+cpu", 3, "cpu"), Strategy("zero3+nvme", 3, "nvme"),
)


@dataclass(frozen=True)
class TrainOption(Record):
    strategy: str
    zero_stage: int
    offload: str
    tp: int
    pp: int
    min_gpus: int | None
    per_gpu_gib: float | None
    memory: dict | None
    tokens_per_s: float | None
    time_to_train_hours: float | None
    cost: float | None
    reason: str = ""


@dataclass(frozen=True)
class TrainPlan(Record):
    model: str
    gpu: str
    gpu_name: str
    mode: str
    quant: str
    tokens: float
    currency: str
    price_per_gpu_hour: float | None
    price_source: str
    options: tuple[TrainOption, ...]
    chosen: TrainOption | None
    deepspeed_config: dict | None
    engines: tuple[str, ...]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        c = self.chosen
        chosen = {k: getattr(c, k) if c else None for k in ("min_gpus", "zero_stage", "offload", "tp", "pp",
                                                              "strategy", "tokens_per_s", "time_to_train_hours",
                                                              "cost", "per_gpu_gib")}
        return jsonable({**chosen, "currency": self.currency, "model": self.model, "gpu": self.gpu,
                         "gpu_name": self.gpu_name, "mode": self.mode, "quant": self.quant, "tokens": self.tokens,
                         "price_per_gpu_hour": self.price_per_gpu_hour, "price_source": self.price_source,
                         "options": self.options, "deepspeed_config": self.deepspeed_config,
                         "engines": self.engines, "notes": self.notes})


@dataclass(frozen=True)
class _Run:
    """What is trained, on what: the inputs every strategy shares."""

    spec: ModelSpec
    fmt: QuantFormat
    gpu: Gpu
    base: memory.Setup
    max_gpus: int
    reserve_gib: float

    def setup(self, st: Strategy, gpus: int | None = None) -> memory.Setup:
        return replace(self.base, zero=st.zero_stage, offload=st.offload, tp=st.tp, pp=st.pp,
                       gpus=gpus or st.model_parallel)


def deepspeed_config(strategy: Strategy, n_gpus: int, *, micro_batch: int = 1, grad_accum: int = 1,
                     precision: str = "bf16", nvme_path: str = DEFAULT_NVME_PATH) -> dict:
    """A DeepSpeed config (DEEPSPEED_DOC) for ``strategy`` on ``n_gpus``.

    ``train_batch_size`` = micro batch x gradient accumulation x data-parallel ranks (DeepSpeed asserts
    exactly this in ``DeepSpeedConfig._batch_assertion``).
    """
    dp = n_gpus // strategy.model_parallel
    zero: dict = {"stage": strategy.zero_stage}
    if strategy.zero_stage >= 1:
        zero.update({"overlap_comm": True, "contiguous_gradients": True})
    if strategy.offload != "none":
        off = {"device": strategy.offload, "pin_memory": True}
        if strategy.offload == "nvme":
            off["nvme_path"] = nvme_path
        zero["offload_optimizer"] = dict(off)
        if strategy.zero_stage == 3:
            zero["offload_param"] = dict(off)
    cfg = {"train_batch_size": micro_batch * grad_accum * dp, "train_micro_batch_size_per_gpu": micro_batch,
           "gradient_accumulation_steps": grad_accum,
           "bf16": {"enabled": precision == "bf16"}, "fp16": {"enabled": precision == "fp16"},
           "zero_optimization": zero}
    if strategy.tp > 1:
        cfg["tensor_parallel"] = {"autotp_size": strategy.tp}
    return cfg


def _fit(run: _Run, st: Strategy) -> tuple[int | None, memory.Estimate | None, str]:
    """The fewest GPUs of the run's card that hold ``st`` (memory.min_gpus), its estimate there, why not."""
    try:
        n, per = memory.min_gpus(run.spec, run.fmt, run.setup(st), run.gpu.vram_gib, max_gpus=run.max_gpus,
                                 reserve_gib=run.reserve_gib)
    except GpucostError as exc:
        return None, None, str(exc)
    if n is None:
        return None, None, (f"does not fit on up to {run.max_gpus} GPUs ({per:.1f} GiB per GPU > "
                            f"{run.gpu.vram_gib:g} GiB)")
    return n, memory.estimate(run.spec, run.fmt, run.setup(st, n)), ""


def tp_pp_strategy(run: _Run) -> tuple[Strategy, int] | None:
    """The smallest tensor x pipeline parallel layout (tp <= 8 dividing the heads) with ZeRO-1 over the rest."""
    best = None
    for tp in TP_WIDTHS:
        if run.spec.num_attention_heads % tp:
            continue
        for pp in PP_DEPTHS:
            if pp > run.spec.num_layers:
                break
            st = Strategy(f"tp{tp}" + (f"+pp{pp}" if pp > 1 else "") + "+zero1", 1, "none", tp, pp)
            n, _est, _why = _fit(run, st)
            if n is not None and (best is None or n < best[1]):
                best = (st, n)
    return best


def fit_strategies(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, setup: memory.Setup, *,
                   max_gpus: int = DEFAULTS.max_gpus, reserve_gib: float = 0.0
                   ) -> dict[str, tuple[Strategy, int | None, memory.Estimate | None]]:
    """Every strategy of :data:`STRATEGIES` and the best tensor x pipeline layout (key ``"tp_pp"``): the
    strategy, the fewest GPUs of ``gpu`` that hold ``setup`` with it, and the estimate there."""
    run = _Run(spec, fmt, gpu, setup, int(max_gpus), float(reserve_gib))
    out: dict[str, tuple[Strategy, int | None, memory.Estimate | None]] = {}
    for st in STRATEGIES:
        n, est, _why = _fit(run, st)
        out[st.name] = (st, n, est)
    best = tp_pp_strategy(run)
    if best is not None:
        n, est, _why = _fit(run, best[0])
        out["tp_pp"] = (best[0], n, est)
    return out


def _memory_dict(e: memory.Estimate) -> dict:
    b = e.per_gpu
    return {"weights": b.weights, "gradients": b.gradients, "optimizer": b.optimizer,
            "activations": b.activations + b.kv_cache, "overhead": b.overhead, "cpu_gib": e.cpu_gib,
            "nvme_gib": e.nvme_gib, "total": b.total}


def _option(run: _Run, st: Strategy, tokens: float, price: float | None, catalog: Catalog) -> TrainOption:
    n, est, why = _fit(run, st)
    if n is None or est is None:
        return TrainOption(st.name, st.zero_stage, st.offload, st.tp, st.pp, None, None, None, None, None,
                           None, why)
    te = training_time(run.spec, run.gpu, mode=run.base.mode, tokens=tokens, gpus=n, seq=run.base.context,
                       micro_batch=run.base.batch, zero=st.zero_stage, lora_rank=run.base.lora_rank,
                       catalog=catalog)
    hours = tokens / te.tokens_per_s / SECONDS_PER_HOUR
    cost = float(job_cost(hours * n, price)) if price is not None else None
    return TrainOption(st.name, st.zero_stage, st.offload, st.tp, st.pp, n, est.per_gpu.total, _memory_dict(est),
                       te.tokens_per_s, hours, cost)


def _choose(options: list[TrainOption], strategy: str | None) -> TrainOption | None:
    """``strategy`` when given, else the fewest GPUs without offload (offload is slower: optimizer steps
    run on the CPU and states cross PCIe), else the fewest with offload."""
    if strategy:
        match = [o for o in options if o.strategy == strategy]
        if not match:
            raise UnknownNameError("strategy", strategy, [o.strategy for o in options])
        if match[0].min_gpus is None:
            raise GpucostError(f"strategy {strategy} does not fit: {match[0].reason}")
        return match[0]
    fits = [o for o in options if o.min_gpus is not None]
    pool = [o for o in fits if o.offload == "none"] or fits
    return min(pool, key=lambda o: (o.min_gpus, o.tp * o.pp, o.zero_stage)) if pool else None


def _offload_skipped(options: list[TrainOption], chosen: TrainOption | None) -> Message | None:
    """Why an offload option that needs fewer GPUs than the chosen one is not the answer: its CPU RAM (or
    NVMe) and its time (at least the GPU-hours over fewer GPUs, before offload's own slowdown)."""
    if chosen is None or chosen.min_gpus is None or chosen.offload != "none":
        return None
    fewer = [o for o in options if o.offload != "none" and o.min_gpus is not None and o.min_gpus < chosen.min_gpus]
    if not fewer:
        return None
    o = min(fewer, key=lambda x: (x.min_gpus, x.offload != "cpu"))
    mem = o.memory or {}
    return Message("tn_offload_skipped", strategy=o.strategy, n=o.min_gpus, chosen=chosen.strategy,
                   m=chosen.min_gpus, ram=f"{max(float(mem.get('cpu_gib') or 0), float(mem.get('nvme_gib') or 0)):,.0f}",
                   hours=f"{o.time_to_train_hours:,.0f}" if o.time_to_train_hours else "—",
                   chosen_hours=f"{chosen.time_to_train_hours:,.0f}" if chosen.time_to_train_hours else "—")


def _check(mode: str, tokens: float, max_gpus) -> None:
    if mode not in TRAIN_MODES:
        raise UnknownNameError("training mode", mode, TRAIN_MODES)
    if not (tokens > 0) or math.isinf(tokens):
        raise GpucostError(f"tokens must be a number > 0, not {tokens}")
    if not (isinstance(max_gpus, int) and max_gpus >= 1):
        raise GpucostError(f"max GPUs must be a whole number >= 1, not {max_gpus}")


def plan_train(model: str, gpu: str, catalog: Catalog | None = None, *, mode: str = "full",
               quant: str | None = None, tokens: float = DEFAULTS.train_tokens, seq_len: int = DEFAULTS.context,
               micro_batch: int = 1, grad_accum: int = 1, lora_rank: int = DEFAULTS.lora_rank,
               max_gpus: int = DEFAULTS.max_gpus, currency: str = DEFAULTS.currency, strategy: str | None = None,
               reserve_gib: float = 0.0, nvme_path: str = DEFAULT_NVME_PATH,
               price_per_gpu_hour: float | None = None) -> TrainPlan:
    """For each strategy, the fewest GPUs of ``gpu`` that hold the run; throughput, time and cost."""
    catalog = catalog or Catalog()
    _check(mode, tokens, max_gpus)
    spec = resolve_model(model, catalog=catalog, fetch=False)
    if not spec.is_llm:
        raise GpucostError(f"model '{spec.id}' lacks the transformer shape (layers, hidden size) training needs")
    g = gpu_record(catalog, gpu)
    g.require_training_tflops()
    fmt = get_format(quant or ("bnb-nf4-dq" if mode == "qlora" else g.training_precision), catalog)
    for name, v in (("seq_len", seq_len), ("micro_batch", micro_batch), ("lora_rank", lora_rank)):
        if not (isinstance(v, int) and v >= 1):
            raise GpucostError(f"{name} must be a whole number >= 1, not {v}")
    base = memory.Setup(mode=mode, context=seq_len, batch=micro_batch, lora_rank=lora_rank)
    memory.check_setup(spec, fmt, base)
    run = _Run(spec, fmt, g, base, int(max_gpus), float(reserve_gib))
    if price_per_gpu_hour is None:
        hc = card_hourly_cost(catalog, g.id, currency, "cloud")
        price, psrc = hc.per_hour, (f"{hc.source} ({hc.as_of})" if hc.per_hour else "no cloud offer in the catalog")
    else:
        price, psrc = float(price_per_gpu_hour), "given"
    strategies = list(STRATEGIES)
    tp_best = tp_pp_strategy(run)
    if tp_best:
        strategies.append(tp_best[0])
    options = [_option(run, st, float(tokens), price, catalog) for st in strategies]
    chosen = _choose(options, strategy)
    notes = [Message("tn_offload_speed")]
    skipped = _offload_skipped(options, chosen) if strategy is None else None
    if skipped is not None:
        notes.insert(0, skipped)
    if not g.has_nvlink:
        notes.append(Message("tn_no_nvlink", gpu=g.name))
    ds = None
    if chosen is not None and chosen.min_gpus is not None:
        st = next(s for s in strategies if s.name == chosen.strategy)
        ds = deepspeed_config(st, chosen.min_gpus, micro_batch=micro_batch, grad_accum=grad_accum,
                              precision=g.training_precision, nvme_path=nvme_path)
        if st.pp > 1:
            notes.append(Message("tn_pipeline", pp=st.pp))
    else:
        notes.append(Message("tn_none", model=spec.id, max_gpus=max_gpus, gpu=g.name))
    engines = ("memory: gpucost.memory.min_gpus / estimate (tensor/pipeline layouts included)",
               "speed: gpucost.speed.training_time", "price: gpucost.economics.card_hourly_cost")
    return TrainPlan(spec.id, g.id, g.name, mode, fmt.id, float(tokens), currency.upper(), price, psrc,
                     tuple(options), chosen, ds, engines, tuple(notes))


__all__ = ["TRAIN_MODES", "OFFLOADS", "DEFAULT_NVME_PATH", "DEEPSPEED_DOC", "Strategy", "STRATEGIES",
           "TrainOption", "TrainPlan", "deepspeed_config", "plan_train", "fit_strategies"]
