"""gpucost fit: memory per GPU (inference or training), on which cards and how many, what fits."""

from __future__ import annotations

import argparse

from gpucost.commands import add_market, add_spec, catalog_for
from gpucost.memory_profiles import LORA_TARGETS, LOSS_KERNELS, TRAINING_FRAMEWORKS
from gpucost.specs import DEFAULTS, ENGINES, SPECS

NAME = "fit"
HELP = "memory per GPU to serve or fine-tune a model, and how many of each card it needs"

MODES = ["inference", "full", "lora", "qlora"]
#: inference engines, and the training frameworks (transformers is both)
FIT_ENGINES = [*ENGINES, *(f for f in TRAINING_FRAMEWORKS if f not in ENGINES)]


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", metavar="M", help="catalog id, Hugging Face repo id or alias (case-insensitive)")
    src.add_argument("--config", metavar="FILE", help="a local Hugging Face config.json")
    p.add_argument("--quant", required=True, metavar="Q",
                   help="weight format: fp32, fp16, bf16, fp8, bnb-int8, bnb-nf4-dq, gptq, awq, q8_0, q4_k_m, …")
    p.add_argument("--mode", default="inference", choices=MODES, help="inference (default), full, lora, qlora")
    add_spec(p, "--context", "context", help="tokens per sequence (inference: KV cache; training: sequence length)")
    add_spec(p, "--batch", "batch", help="concurrent sequences (inference) or micro-batch per GPU (training)")
    add_spec(p, "--gpus", "gpus", help="GPUs the per-GPU breakdown is for")
    add_spec(p, "--zero", "zero")
    add_spec(p, "--sharder", "sharder")
    add_spec(p, "--offload", "offload")
    p.add_argument("--engine", default=None, choices=FIT_ENGINES,
                   help=f"inference engine (default: llama.cpp for GGUF, else {DEFAULTS.engine}); training: "
                        "transformers (default), torchtune or unsloth")
    add_spec(p, "--lora-rank", "lora_rank", metavar="R")
    add_spec(p, "--lora-dropout", "lora_dropout", metavar="P")
    add_spec(p, "--grad-accum", "grad_accum", metavar="N")
    p.add_argument("--precision", default=None, choices=[c for c in SPECS["train_precision"].choices if c],
                   help=SPECS["train_precision"].help)
    p.add_argument("--lora-targets", default="all-linear", choices=list(LORA_TARGETS))
    p.add_argument("--kv-dtype", default="fp16", choices=["fp16", "bf16", "fp32", "fp8", "q8_0", "q4_0"])
    add_spec(p, "--gpu-layers", "gpu_layers", help="llama.cpp partial offload: layers on the GPU (the rest in CPU RAM)")
    add_spec(p, "--cpu-moe", "cpu_moe", metavar="N")
    add_spec(p, "--images", "images", metavar="N")
    p.add_argument("--optimizer", default=None,
                   choices=["adamw", "adamw-8bit", "paged-adamw", "paged-adamw-8bit", "sgd"])
    p.add_argument("--no-flash-attention", action="store_true", help="eager attention (scores in memory)")
    p.add_argument("--no-grad-checkpointing", action="store_true", help="keep every layer's activations")
    p.add_argument("--loss-kernel", default=None, choices=sorted(LOSS_KERNELS),
                   help="training: a fused loss that never holds the logits (cce: Cut Cross-Entropy, e.g. axolotl's "
                        "plugin; liger: Liger Kernel's fused linear cross-entropy, e.g. TRL's use_liger_kernel); "
                        "default: the framework's own loss")
    p.add_argument("--gpu", metavar="ID", help="only this card (catalog id or name, e.g. 'RTX 4090'); adds the "
                                              "longest context and largest batch that fit on it")
    p.add_argument("--currency", default=DEFAULTS.currency, metavar="C", help="currency of the cheapest-card answer")
    add_market(p)
    p.add_argument("--json", action="store_true", help="print JSON")


def default_engine(fmt, mode: str) -> str:
    if mode != "inference":
        return "transformers"
    return "llama.cpp" if fmt.is_gguf else DEFAULTS.engine


def run(args: argparse.Namespace):
    from gpucost.bands import fit_verdict, memory_band
    from gpucost.errors import GpucostError
    from gpucost.memory import Setup, card_fits, cheapest_cards, estimate, max_batch, max_context
    from gpucost.models import resolve_model
    from gpucost.pricing import card_table
    from gpucost.quant import get_format

    cat = catalog_for(args)
    spec = resolve_model(args.model, config=args.config, catalog=cat)
    fmt = get_format(args.quant, cat)
    engine = args.engine or default_engine(fmt, args.mode)
    if args.mode == "inference" and engine not in ENGINES:
        raise GpucostError(f"{engine} is a training framework; pick an inference engine for --mode inference")
    setup = Setup(mode=args.mode, context=args.context, batch=args.batch, gpus=args.gpus, engine=engine, zero=args.zero,
                  sharder=args.sharder, offload=args.offload, lora_rank=args.lora_rank, lora_targets=args.lora_targets,
                  kv_dtype=args.kv_dtype, gpu_layers=args.gpu_layers, cpu_moe=args.cpu_moe, images=args.images, optimizer=args.optimizer,
                  flash_attention=not args.no_flash_attention, grad_checkpointing=not args.no_grad_checkpointing,
                  loss_kernel=args.loss_kernel, lora_dropout=args.lora_dropout, precision=args.precision,
                  grad_accum=args.grad_accum)
    est = estimate(spec, fmt, setup)
    cards = cat.gpus
    if args.gpu:
        gid = cat.gpu_id(args.gpu)
        cards = cards[cards["id"] == gid]
    all_fits = card_fits(spec, fmt, est.setup, cat.gpus)
    shown = set(cards["id"])
    fits = [f for f in all_fits if f.gpu in shown]
    out = est.to_dict()
    out["band"] = memory_band(est, cat)
    verdicts = {f.gpu: fit_verdict(f, est, cat) for f in all_fits}
    out["fits"] = [{**f.to_dict(), **verdicts[f.gpu]} for f in fits]
    if args.gpu:
        vram = float(cards["vram_gib"].iloc[0])
        out["max_context"] = max_context(spec, fmt, est.setup, vram)
        out["max_batch"] = max_batch(spec, fmt, est.setup, vram)
    table = card_table(cat, args.currency.upper())
    cur = args.currency.upper()
    # the cheapest card that holds the estimate may hold it only inside the error band (an out-of-memory at the first
    # step for the runs above the estimate): each says which, and the cheapest that holds the band's high end too
    out["cheapest"] = [{**c.to_dict(), "verdict": verdicts[c.gpu]["verdict"] if c.gpu else None}
                       for c in cheapest_cards(all_fits, table, cur)]
    out["cheapest_holding_band"] = [c.to_dict() for c in cheapest_cards(
        [f for f in all_fits if verdicts[f.gpu]["verdict"] == "fits"], table, cur)]
    return out


def render_text(r) -> str:
    pg = r["per_gpu_gib"]
    lines = [f"{r['model']} · {r['quant']} · {r['mode']} · {r['engine']} · context {r['context']} · batch "
             f"{r['batch']} · {r['gpus']} GPU(s)" + (f" · ZeRO-{r['zero']}" if r['zero'] else ""),
             "per GPU [GiB]: " + ", ".join(f"{k} {v:.2f}" for k, v in pg.items()),
             *([f"per GPU, {r['band']['per_gpu_gib']['band']} of measured / estimated over "
                f"{r['band']['per_gpu_gib']['rows']} published measurements: {r['band']['per_gpu_gib']['low']:.2f}"
                f"–{r['band']['per_gpu_gib']['high']:.2f} GiB"] if r.get("band") else []),
             f"CPU RAM {r['cpu_gib']:.2f} GiB · NVMe {r['nvme_gib']:.2f} GiB · weights file {r['weights_file_gib']:.2f} GiB"]
    if "max_context" in r:
        lines.append(f"longest context that fits: {r['max_context']} · largest batch: {r['max_batch']}")
    lines.append(f"{'card':28} {'VRAM':>6} {'min GPUs':>8}  reason")
    for f in r["fits"]:
        lines.append(f"{f['name'][:28]:28} {f['vram_gib']:>6g} {str(f['min_gpus'] or '—'):>8}  {f['reason']}"
                     + ("; within the error band: test before buying" if f["verdict"] == "within_band" else "")
                     + (f"; nvidia-smi shows ~{f['occupied_gib']:.1f} GiB (pre-allocated)"
                        if f["occupied_gib"] and f["per_gpu_gib"] and f["occupied_gib"] > f["per_gpu_gib"] + 0.05 else ""))
    safe = {c["basis"]: c for c in r.get("cheapest_holding_band", [])}
    for c in r["cheapest"]:
        if c["gpu"]:
            lines.append(f"cheapest {c['basis']}: {_card_cost(c)}"
                         + ("; within the error band: test before buying" if c["verdict"] == "within_band" else ""))
            s = safe.get(c["basis"])
            if c["verdict"] == "within_band" and s is not None:
                lines.append(f"cheapest {c['basis']} that holds the band's high end: "
                             + (_card_cost(s) if s["gpu"] else "none in the catalog"))
    lines += [f"note: {n}" for n in r["notes"]]
    return "\n".join(lines)


def _card_cost(c: dict) -> str:
    return f"{c['count']} × {c['name']} = {c['cost']:,.2f} {c['currency']}" + (f" {c['unit']}" if c["unit"] else "")
