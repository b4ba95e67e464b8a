"""Turn a device run's output (tools/device_measure.py, JSON lines) into validation-corpus rows (data/benchmarks.csv
columns), printed as CSV without a header.

Usage (repo root): python3 tools/device_rows.py docs/corpus/device_h200_2026-12-04.jsonl \
    docs/corpus/device_h200_2026-12-04_extra.jsonl gdv >> data/benchmarks.csv

Each training run gives two rows, its allocated and its reserved peak, linked by "same run as" (the caching
allocator's pairs, gpucost.validation.allocator); each inference run its allocated peak and, where the timed
generate was repeated, its decode speed (a single timed run is left out: see _infer).
The document is one source (``source_id``) for the cross-validation like any other: gpucost's own measurement,
made with the committed script and kept with its raw output.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

COLUMNS = ("id,category,model_id,quant,mode,engine,engine_version,backend,gpu_id,num_gpus,batch,context,prompt_tokens,"
           "gen_tokens,concurrency,lora_rank,grad_checkpointing,optimizer,zero_stage,offload,measured,unit,"
           "measure_kind,source_id,source,as_of,retrieved_on,notes").split(",")
#: the card each GPU name the run reports is in gpus.csv
GPU_IDS = {"NVIDIA H200": "h200"}


def rows(paths: list[Path], prefix: str) -> list[dict]:
    """The rows of one document: the device runs of one day (their files in order)."""
    out: list[dict] = []
    seen_memory: set[tuple] = set()

    def add(common: dict, **kw) -> str:
        rid = f"{prefix}{len(out) + 1:03d}"
        out.append({**common, **kw, "id": rid})
        return rid

    for path in paths:
        lines = [json.loads(s) for s in path.read_text().splitlines() if s.strip()]
        run = next(x for x in lines if x["kind"] == "run")
        if run.get("dry_run"):
            raise SystemExit(f"{path} is a dry run: nothing in it is a measurement")
        plan = run.get("plan", "grid")
        v = run["versions"]
        day = run["started_utc"][:10]
        version = (f"transformers {v['transformers']}, peft {v['peft']}, torch {v['torch']}, "
                   f"bitsandbytes {v['bitsandbytes']}")
        common = {"engine_version": version, "backend": "cuda", "gpu_id": GPU_IDS[run["gpu"]], "num_gpus": 1,
                  "source_id": f"gpucost-{GPU_IDS[run['gpu']]}-{day}",
                  "source": f"{path.as_posix()} (tools/device_measure.py --plan {plan})", "as_of": day,
                  "retrieved_on": day}
        for x in lines:
            if x["kind"] == "train" and "error" not in x:
                if x["steps"] > 2:  # the same configuration as a 2-step run of the first plan, run for 20 steps
                    continue
                _train(x, common, add)
            elif x["kind"] == "infer" and "error" not in x:
                _infer(x, common, add, seen_memory)
    return out


RANDOM_W = "random weights of the model's architecture (data/models.csv), saved as a bf16 checkpoint and loaded"


def _train(x: dict, common: dict, add) -> None:
    full = x["mode"] == "full"
    dropout = x.get("lora_dropout", 0.0)
    base = dict(category="training_memory", model_id=x["model"], quant=x["quant"], mode=x["mode"],
                engine="transformers+peft" if not full else "transformers", batch=x["batch"], context=x["seq"],
                lora_rank=x["lora_rank"] or "", grad_checkpointing=str(x["grad_checkpointing"]).lower(),
                optimizer="adamw", zero_stage=0, offload="none", unit="GiB")
    if full:
        what = ("full fine-tuning, weights loaded in bf16: pure bf16 training (bf16 weights, gradients and AdamW "
                "states)" if "bfloat16" in x.get("weights_dtype", "") else
                "full fine-tuning, weights loaded in fp32 with bf16 autocast: mixed precision (fp32 weights, "
                "gradients and AdamW states)")
    else:
        what = (f"PEFT LoRA r={x['lora_rank']} alpha {2 * x['lora_rank']} lora_dropout={dropout} "
                "target_modules all-linear"
                + ("; bnb NF4 double quant, bf16 compute, prepare_model_for_kbit_training" if x["mode"] == "qlora"
                   else "; base loaded in bf16"))
    how = (f"HF Trainer bf16=True, optim adamw_torch, gradient_accumulation_steps 1 (the Trainer's default), 2 "
           f"steps of micro-batch {x['batch']} × {x['seq']} random token "
           f"ids, labels = inputs, no padding; {what}; gradient checkpointing "
           f"{'on (use_reentrant=False)' if x['grad_checkpointing'] else 'off'}; SDPA attention; {RANDOM_W}; peaks "
           "reset after loading (a 20-step run of two configurations peaked at step 2 and held it to step 20)")
    a = add(common, **base, measured=round(x["allocated_gib"], 3), measure_kind="allocator_peak",
            notes=f"torch.cuda.max_memory_allocated over the two steps; {how}")
    add(common, **base, measured=round(x["reserved_gib"], 3), measure_kind="reserved",
        notes=f"torch.cuda.max_memory_reserved over the two steps, same run as {a}; {how}")


def _infer(x: dict, common: dict, add, seen_memory: set) -> None:
    base = dict(model_id=x["model"], quant=x["quant"], mode="inference", engine="transformers",
                batch=x["batch"], prompt_tokens=x["prompt"], gen_tokens=x["new_tokens"])
    how = (f"generate() greedy, batch 1, a {x['prompt']}-token random prompt, {x['new_tokens']} new tokens "
           f"(min_new_tokens = max_new_tokens), SDPA attention, DynamicCache; "
           + ("bnb LLM.int8() (threshold 6.0) in fp16; " if x["quant"] == "bnb-int8" else
              "bnb NF4 double quant, bf16 compute; " if x["quant"] == "bnb-nf4-dq" else "bf16; ") + RANDOM_W)
    key = (x["model"], x["quant"], x["prompt"])
    if key not in seen_memory:  # the second run measured the 8B's bf16 peaks again: the same figures
        seen_memory.add(key)
        add(common, **base, category="inference_memory", context=x["prompt"] + x["new_tokens"],
            measured=round(x["allocated_gib"], 3), unit="GiB", measure_kind="allocator_peak",
            notes=f"torch.cuda.max_memory_allocated over one generate(); {how}")
    runs = x.get("t_new_runs_s") or ([None, None] if x["prompt"] == 512 else [None])
    if len(runs) < 2:
        # one timed run after a 2-token warm-up: the second run of the day shows the first timed generate of each
        # prompt 2-3x slower than the next ones (4.1 s then 1.7 and 1.6 s), so a single run is not a speed
        return
    int8 = (" int8's outlier decomposition depends on activation magnitudes (above 6.0): random weights may "
            "have fewer outlier columns than a trained model, so this speed may be above a real model's;"
            if x["quant"] == "bnb-int8" else "")
    add(common, **base, category="decode_speed", context="", measured=round(x["decode_tokens_per_s"], 2),
        unit="tokens/s", measure_kind="",
        notes=f"decode tokens/s per sequence = {x['new_tokens'] - 1} / (time of {x['new_tokens']} new tokens − "
              f"time of 1), the fastest of {len(runs)} runs after a 2-token warm-up;{int8} {how}")


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        return 2
    w = csv.DictWriter(sys.stdout, fieldnames=COLUMNS, lineterminator="\n")
    for r in rows([Path(a) for a in argv[:-1]], argv[-1]):
        w.writerow({k: r.get(k, "") for k in COLUMNS})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
