"""gpucost plan share|train|scale: workloads sharing a card (time-slicing, MIG, MPS), the fewest GPUs for a
training run (DeepSpeed ZeRO, offload, tensor/pipeline parallel) and a fleet that follows its queue."""

from __future__ import annotations

import argparse
from pathlib import Path

from gpucost.commands import add_market, add_spec, bounded, catalog_for
from gpucost.specs import DEFAULTS

NAME = "plan"
HELP = "plan sharing (time-slicing/MIG/MPS), multi-GPU training (DeepSpeed) and autoscaling"

def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="plan_cmd", metavar="share|train|scale", parser_class=type(p))
    sub.required = True

    s = sub.add_parser("share", help="place workloads on cards by time-slicing, MIG or MPS",
                       description="Place workloads (memory GiB : average utilization %) on as few cards as "
                                   "time-slicing, MIG or MPS allow, and write the NVIDIA configs.")
    s.add_argument("--gpu", required=True, metavar="ID", help="card id or name (e.g. a100-80gb-sxm, 'H100 SXM')")
    s.add_argument("--workload", action="append", required=True, metavar="MEM_GIB:UTIL_PCT[:latency]",
                   help="a workload: memory [GiB] and average utilization [%%] of a whole card; add "
                        ":latency for a latency target (repeat the option)")
    s.add_argument("--mode", default="time-slicing", choices=["time-slicing", "mig", "mps"])
    s.add_argument("--latency-shared", action="store_true",
                   help="time-slicing: let latency-sensitive workloads share a card (default: a card each)")
    s.add_argument("--namespace", default="gpu-operator", help="namespace of the ConfigMap")
    s.add_argument("--k8s-config", metavar="FILE", help="write the Kubernetes ConfigMap (device-plugin sharing "
                   "config, or the mig-parted config for MIG) to FILE")
    s.add_argument("--mig-parted-config", metavar="FILE", help="MIG: write the mig-parted config to FILE")
    s.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    s.add_argument("--json", action="store_true", help="print JSON")

    t = sub.add_parser("train", help="fewest GPUs, time and cost of a training run; DeepSpeed config",
                       description="For a model, a card and a token budget: plain data parallel, ZeRO 1/2/3, "
                                   "CPU/NVMe offload and tensor/pipeline parallel — the fewest GPUs that fit, "
                                   "throughput, time and cloud cost, and a DeepSpeed config.")
    t.add_argument("--model", required=True, metavar="M", help="catalog model id or alias (e.g. llama-3.1-8b)")
    t.add_argument("--gpu", required=True, metavar="ID")
    t.add_argument("--mode", default="full", choices=["full", "lora", "qlora"])
    t.add_argument("--quant", default=None, metavar="Q", help="base weights format (qlora: bnb-nf4-dq by default)")
    add_spec(t, "--tokens", "train_tokens", help="token budget (1e9, 500M, 2B)")
    add_spec(t, "--seq-len", "context", help="sequence length [tokens]")
    add_spec(t, "--micro-batch", "batch", help="micro-batch per GPU [sequences]")
    add_spec(t, "--grad-accum", "batch", default=1, help="gradient accumulation steps")
    add_spec(t, "--lora-rank", "lora_rank", metavar="R")
    add_spec(t, "--max-gpus", "max_gpus", help="largest GPU count to consider")
    t.add_argument("--strategy", default=None, help="pick a strategy (dp, zero1, zero2, zero3, zero2+cpu, "
                   "zero3+cpu, zero3+nvme, tpN[+ppM]+zero1) instead of the fewest GPUs")
    t.add_argument("--currency", default=DEFAULTS.currency, metavar="C")
    add_market(t)
    t.add_argument("--nvme-path", default=None, metavar="DIR", help="NVMe offload directory in the config")
    t.add_argument("--deepspeed-config", metavar="FILE", help="write the DeepSpeed config JSON to FILE")
    t.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    t.add_argument("--json", action="store_true", help="print JSON")

    c = sub.add_parser("scale", help="fixed fleet, autoscaling or spot pool on a job trace; commitment level",
                       description="Simulate a job trace (CSV: arrival_hour, gpu_hours, gpus) on a fixed fleet, "
                                   "a queue-driven autoscaler or a spot-heavy pool; and the committed GPU level "
                                   "that minimizes cost.")
    c.add_argument("--trace", required=True, metavar="FILE", help="trace CSV, or 'sample' for the bundled one")
    c.add_argument("--policy", default="fixed", choices=["fixed", "autoscale", "spot"])
    c.add_argument("--max-gpus", type=bounded(1, 100_000, "GPUs", whole=True), default=None, metavar="N",
                   help="fixed fleet size / autoscaling cap (default: the largest job or the 95th percentile "
                        "of the demand, whichever is more)")
    c.add_argument("--gpu", default="h100-sxm", metavar="ID", help="card whose cloud prices are used")
    c.add_argument("--currency", default="USD", metavar="C")
    add_market(c)
    c.add_argument("--min-gpus", type=bounded(0, 100_000, "GPUs", whole=True), default=0, metavar="N",
                   help="autoscaler floor")
    c.add_argument("--startup-hours", type=bounded(0, 168, "hours"), default=0.05, metavar="H", help="time a new GPU takes to serve")
    c.add_argument("--cooldown-hours", type=bounded(0, 168, "hours"), default=0.25, metavar="H",
                   help="idle time before a GPU is released")
    c.add_argument("--checkpoint-hours", type=bounded(0, 168, "hours", lo_open=True), default=1.0, metavar="H", help="spot: checkpoint interval")
    c.add_argument("--spot-bucket", default=">20%", choices=["<5%", "5-10%", "10-15%", "15-20%", ">20%"],
                   help="AWS Spot Advisor interruption bucket")
    c.add_argument("--on-demand-base", type=bounded(0, 100_000, "GPUs", whole=True), default=0, metavar="N", help="spot: on-demand GPUs kept first")
    c.add_argument("--commit-discount", type=bounded(0, 99, "%"), default=None, metavar="PCT",
                   help="commitment discount [%%] (default: the 1-year discount of tco_defaults.csv)")
    c.add_argument("--price", type=bounded(0, 10_000, "per GPU-hour", lo_open=True), default=None, help="on-demand price per GPU-hour (default: catalog)")
    c.add_argument("--spot-price", type=bounded(0, 10_000, "per GPU-hour", lo_open=True), default=None, help="spot price per GPU-hour (default: catalog)")
    add_spec(c, "--seed", "seed", help="random seed of the spot interruptions")
    c.add_argument("--json", action="store_true", help="print JSON")


def _write_new(path: str, text: str, force: bool) -> str:
    from gpucost.errors import GpucostError

    p = Path(path)
    if p.exists() and not force:
        raise GpucostError(f"{path} exists; not overwritten (use --force to replace it)")
    if p.is_dir():
        raise GpucostError(f"{path} is a folder, not a file")
    try:
        p.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise GpucostError(f"cannot write {path} ({exc.strerror})") from None
    return str(p)


def run(args: argparse.Namespace):

    cat = catalog_for(args)
    return {"share": _run_share, "train": _run_train, "scale": _run_scale}[args.plan_cmd](args, cat)


def _run_share(args: argparse.Namespace, cat) -> dict:
    from gpucost import plan
    from gpucost.errors import GpucostError

    workloads = plan.parse_workloads(args.workload)
    result = plan.plan_share(workloads, args.gpu, args.mode, cat, latency_alone=not args.latency_shared,
                             namespace=args.namespace)
    written = {}
    if args.k8s_config:
        text = result.config("k8s_configmap")
        if text is None:
            raise GpucostError("no card runs more than one workload: there is no sharing ConfigMap to write")
        written["k8s_config"] = _write_new(args.k8s_config, text, args.force)
    if args.mig_parted_config:
        text = result.config("mig_parted")
        if text is None:
            raise GpucostError("--mig-parted-config needs --mode mig")
        written["mig_parted_config"] = _write_new(args.mig_parted_config, text, args.force)
    d = result.to_dict()
    d["written"] = written
    return d


def _run_train(args: argparse.Namespace, cat) -> dict:
    from gpucost import plan
    from gpucost.errors import GpucostError

    kw = {"nvme_path": args.nvme_path} if args.nvme_path else {}
    result = plan.plan_train(args.model, args.gpu, cat, mode=args.mode, quant=args.quant, tokens=args.tokens,
                             seq_len=args.seq_len, micro_batch=args.micro_batch, grad_accum=args.grad_accum,
                             lora_rank=args.lora_rank, max_gpus=args.max_gpus, currency=args.currency,
                             strategy=args.strategy, **kw)
    d = result.to_dict()
    d["written"] = {}
    if args.deepspeed_config:
        if result.deepspeed_config is None:
            raise GpucostError("no strategy fits, so there is no DeepSpeed config to write")
        d["written"]["deepspeed_config"] = _write_new(args.deepspeed_config,
                                                      plan.config_json(result.deepspeed_config) + "\n",
                                                      args.force)
    return d


def _run_scale(args: argparse.Namespace, cat) -> dict:
    from gpucost import plan
    from gpucost.errors import GpucostError

    if args.max_gpus is not None and args.max_gpus < 1:
        raise GpucostError(f"--max-gpus must be >= 1, not {args.max_gpus}")
    if args.commit_discount is None:
        disc, _ = plan.default_commit_discount(cat)
    else:
        if not (0 <= args.commit_discount < 100):
            raise GpucostError(f"--commit-discount must be >= 0 and < 100 %, not {args.commit_discount:g}")
        disc = args.commit_discount / 100
    result = plan.plan_scale(args.trace, args.policy, gpu=args.gpu, catalog=cat, currency=args.currency,
                             max_gpus=args.max_gpus, commit_discount=disc, price_per_gpu_hour=args.price,
                             spot_price_per_gpu_hour=args.spot_price, spot_bucket=args.spot_bucket,
                             min_gpus=args.min_gpus, startup_hours=args.startup_hours,
                             cooldown_hours=args.cooldown_hours, checkpoint_hours=args.checkpoint_hours,
                             on_demand_base=args.on_demand_base, seed=args.seed)
    return result.to_dict()


def _f(v, nd=2) -> str:
    return "—" if v is None else f"{v:,.{nd}f}"


def render_text(d: dict) -> str:
    lines: list[str] = []
    if "placements" in d:
        lines.append(f"{d['mode']} on {d['gpu_name']} ({d['vram_gib']:g} GiB): {d['cards_needed']} card(s) instead "
                     f"of {d['cards_without_sharing']}; average utilization {d['utilization_without_sharing_pct']:.0f} % "
                     f"-> {d['utilization_shared_pct']:.0f} %")
        for c in d["cards"]:
            inst = ", ".join(f"{i['profile']}@{i['start']}" for i in c["instances"])
            lines.append(f"  card {c['index']}: workloads {c['workloads']}  {c['mem_gib']:g} GiB  {c['util_pct']:g} %"
                         + (f"  [{inst}]" if inst else ""))
        lines += [f"  ! {w}" for w in d["warnings"]] + [f"  - {n}" for n in d["notes"]]
        for k, v in d.get("written", {}).items():
            lines.append(f"wrote {k}: {v}")
        if not d.get("written"):
            for name, text in d["configs"].items():
                lines.append(f"--- {name}")
                lines.append(text.rstrip())
        return "\n".join(lines)
    if "deepspeed_config" in d:
        lines.append(f"{d['model']} ({d['mode']}, {d['quant']}) on {d['gpu_name']}, {d['tokens']:.3g} tokens")
        lines.append(f"{'strategy':16} {'GPUs':>5} {'GiB/GPU':>8} {'tokens/s':>10} {'hours':>9} {'cost':>11}")
        for o in d["options"]:
            lines.append(f"{o['strategy']:16} {o['min_gpus'] if o['min_gpus'] else '—':>5} "
                         f"{_f(o['per_gpu_gib'], 1):>8} {_f(o['tokens_per_s'], 0):>10} "
                         f"{_f(o['time_to_train_hours'], 1):>9} {_f(o['cost']):>11}")
        lines.append(f"chosen: {d['strategy']} on {d['min_gpus']} GPUs, cost {_f(d['cost'])} {d['currency']} "
                     f"(price per GPU-hour {_f(d['price_per_gpu_hour'])}: {d['price_source']})")
        lines += [f"  - {n}" for n in d["notes"]] + [f"  · {e}" for e in d["engines"]]
        for k, v in d.get("written", {}).items():
            lines.append(f"wrote {k}: {v}")
        return "\n".join(lines)
    lines.append(f"trace {d['trace']}: {d['jobs']} jobs; {d['gpu']} at {_f(d['price_per_gpu_hour'])} {d['currency']}"
                 f"/GPU-hour on demand, {_f(d['spot_price_per_gpu_hour'])} spot")
    lines.append(f"{'policy':10} {'cost':>12} {'wait mean h':>12} {'wait p95 h':>11} {'utilization':>12}")
    for name, r in d["policies"].items():
        lines.append(f"{name:10} {_f(r['cost']):>12} {_f(r['wait_mean_hours']):>12} {_f(r['wait_p95_hours']):>11} "
                     f"{r['utilization'] * 100:>11.1f}%")
    c = d.get("commitment")
    if c:
        lines.append(f"commit {c['level_gpus']} GPUs at {c['discount'] * 100:.1f} % off: {_f(c['cost'])} vs "
                     f"{_f(c['cost_on_demand_only'])} all on demand (saves {_f(c['saving'])})")
    lines += [f"  ! {w}" for w in d["warnings"]]
    return "\n".join(lines)
