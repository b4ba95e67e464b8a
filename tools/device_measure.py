"""Measure fine-tuning and inference memory, and decode speed, of catalog models on one real GPU — the run whose
output is the corpus document ``gpucost-h200-2026-12-04`` (data/benchmarks.csv rows ``gdv*``; the raw output is
docs/corpus/device_h200_2026-12-04.jsonl, turned into rows by tools/device_rows.py).

What a user of transformers + PEFT runs, with random weights of each model's architecture (data/models.csv; the
weights' values change neither their bytes nor the kernels' work, except bitsandbytes int8's outlier path, which
depends on activation magnitudes): the model is saved as a bf16 safetensors checkpoint, then loaded as a user loads
it — ``from_pretrained`` in bf16, or with a ``BitsAndBytesConfig`` (NF4 with double quantization, bf16 compute;
LLM.int8) — and

* training: PEFT LoRA r=16, alpha 32, dropout 0 (PEFT's default), every Linear of the decoder (``all-linear``),
  for QLoRA after ``prepare_model_for_kbit_training``; the HF ``Trainer`` with ``bf16=True``, ``adamw_torch``,
  2 steps over random token ids with labels = inputs (no padding); torch's peak allocated and reserved bytes
  over the two steps (peaks reset after loading, the cache emptied);
* inference: ``generate`` greedy, batch 1, a random prompt, a fixed number of new tokens; the peak allocated
  bytes, and decode tokens/s as (N − 1) / (time of N new tokens − time of 1 new token).

Usage (the GPU machine): ``python3 tools/device_measure.py --out $OUT/measure.jsonl --budget-s 420``; on a
machine without a GPU ``--dry-run`` runs the same code on the CPU with tiny copies of the architectures
(nothing written there is a measurement). One JSON object per line: a ``run`` header, then one per measurement.
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import os
import platform
import shutil
import sys
import time
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GIB = 2**30

#: catalog models in the order they are measured (the QLoRA-of-an-8B question first)
MODELS = ("llama-3.1-8b", "llama-3.2-3b", "llama-3.2-1b", "mistral-7b-v0.3", "qwen2.5-7b", "qwen3-4b")
#: (micro-batch, sequence length, gradient checkpointing) of each training run
TRAIN_GRID = ((1, 512, False), (4, 512, False), (1, 2048, True), (4, 2048, True))
#: models whose inference memory and decode speed are measured, and the formats
INFER_MODELS = ("llama-3.1-8b",)
INFER_QUANTS = ("bf16", "bnb-nf4-dq", "bnb-int8")
PROMPTS = (512, 2048)
NEW_TOKENS = 65
LORA_RANK = 16
#: --plan extra, in order
EXTRA_MODELS = ("llama-3.1-8b", "llama-3.2-3b", "qwen2.5-7b", "llama-3.2-1b")

ARCH = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
        "mistral": "MistralForCausalLM"}


def catalog_row(model_id: str) -> dict:
    with open(ROOT / "data" / "models.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["id"] == model_id:
                return r
    raise SystemExit(f"{model_id} is not in data/models.csv")


def hf_config(model_id: str, tiny: bool):
    """A transformers config of the catalog row's architecture (tiny: 2 layers of width 64, for a dry run)."""
    import transformers

    r = catalog_row(model_id)
    fam = r["family"]
    kw = dict(hidden_size=int(r["hidden_size"]), num_hidden_layers=int(r["num_layers"]),
              num_attention_heads=int(r["num_attention_heads"]), num_key_value_heads=int(r["num_kv_heads"]),
              intermediate_size=int(r["intermediate_size"]), vocab_size=int(r["vocab_size"]),
              tie_word_embeddings=r["tie_embeddings"].strip().lower() == "true",
              max_position_embeddings=int(r["max_context"]), head_dim=int(r["head_dim"]), torch_dtype="bfloat16")
    if tiny:
        kw.update(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  intermediate_size=128, vocab_size=512, head_dim=16)
    cls = {"llama": transformers.LlamaConfig, "qwen2": transformers.Qwen2Config, "qwen3": transformers.Qwen3Config,
           "mistral": transformers.MistralConfig}[fam]
    cfg = cls(**kw)
    cfg.architectures = [ARCH[fam]]
    if fam == "mistral":
        cfg.sliding_window = None
    return cfg


class Clock:
    def __init__(self, budget_s: float):
        self.t0, self.budget = time.monotonic(), budget_s

    def left(self) -> float:
        return self.budget - (time.monotonic() - self.t0)


def emit(out, obj: dict) -> None:
    out.write(json.dumps(obj) + "\n")
    out.flush()
    print(json.dumps(obj), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=420.0)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--models", default=None, help="comma-separated catalog ids (default: the plan's)")
    ap.add_argument("--plan", choices=("grid", "extra"), default="grid")
    args = ap.parse_args()

    import peft
    import torch
    import transformers

    warnings.filterwarnings("ignore", message=".*MatMul8bitLt.*")
    transformers.logging.set_verbosity_error()
    dry = args.dry_run
    if args.models is None:
        args.models = ",".join(MODELS if args.plan == "grid" else EXTRA_MODELS)
    cuda = torch.cuda.is_available() and not dry
    if not cuda and not dry:
        print("no CUDA device: use --dry-run", file=sys.stderr)
        return 2
    dev = "cuda" if cuda else "cpu"
    clock = Clock(args.budget_s)
    # checkpoints in RAM where /dev/shm has room for a 16 GiB model, else on disk
    shm = Path("/dev/shm")
    roomy = shm.is_dir() and shutil.disk_usage(shm).free > 40 * GIB
    tmp = (shm if roomy and not dry else Path("/tmp")) / "gpucost-measure"
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        import bitsandbytes as bnb
        bnb_version = bnb.__version__
    except Exception as e:  # noqa: BLE001 - reported, the quantized runs are then skipped
        bnb_version = f"unavailable: {e!r}"[:200]
    out = open(args.out, "a")
    versions = {"torch": torch.__version__, "cuda": torch.version.cuda, "transformers": transformers.__version__,
                "peft": peft.__version__, "bitsandbytes": bnb_version, "python": platform.python_version()}
    gpu = torch.cuda.get_device_name(0) if cuda else "cpu (dry run)"
    total = torch.cuda.get_device_properties(0).total_memory / GIB if cuda else None
    emit(out, {"kind": "run", "plan": args.plan, "gpu": gpu, "total_gib": total, "versions": versions, "dry_run": dry,
               "checkpoints_in": str(tmp),
               "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def fresh():
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()

    def peaks() -> dict:
        if not cuda:
            return {"allocated_gib": None, "reserved_gib": None}
        return {"allocated_gib": torch.cuda.max_memory_allocated() / GIB,
                "reserved_gib": torch.cuda.max_memory_reserved() / GIB}

    def now_alloc() -> float | None:
        return torch.cuda.memory_allocated() / GIB if cuda else None

    def load(path: Path, quant: str, dtype=None):
        kw = {"dtype": dtype or torch.bfloat16, "device_map": dev}
        if quant == "bnb-nf4-dq":
            kw["quantization_config"] = transformers.BitsAndBytesConfig(
                load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                bnb_4bit_compute_dtype=torch.bfloat16)
        elif quant == "bnb-int8":  # LLM.int8() computes in fp16 (bitsandbytes casts bf16 inputs to it)
            kw["quantization_config"] = transformers.BitsAndBytesConfig(load_in_8bit=True)
            kw["dtype"] = torch.float16
        fresh()
        t = time.monotonic()
        m = transformers.AutoModelForCausalLM.from_pretrained(path, **kw)
        sync()
        info = {"load_s": time.monotonic() - t, "load_peak_allocated_gib": peaks()["allocated_gib"],
                "weights_allocated_gib": now_alloc()}
        m.config.use_cache = False
        return m, info

    def set_checkpointing(model, on: bool) -> None:
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        if on:
            base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            if hasattr(base, "enable_input_require_grads"):
                base.enable_input_require_grads()
        else:
            base.gradient_checkpointing_disable()

    class Tokens(torch.utils.data.Dataset):
        def __init__(self, n, seq, vocab):
            g = torch.Generator().manual_seed(0)
            self.ids = torch.randint(0, vocab, (n, seq), generator=g)

        def __len__(self):
            return len(self.ids)

        def __getitem__(self, i):
            return {"input_ids": self.ids[i], "labels": self.ids[i].clone(), "attention_mask": torch.ones_like(self.ids[i])}

    class StepPeaks(transformers.TrainerCallback):
        """Each step's allocated and reserved peak (the peaks are reset after each step)."""

        def __init__(self):
            self.steps: list[tuple[float, float]] = []

        def on_step_end(self, args, state, control, **kw):
            if cuda:
                sync()
                p = peaks()
                self.steps.append((round(p["allocated_gib"], 3), round(p["reserved_gib"], 3)))
                torch.cuda.reset_peak_memory_stats()

    def train_runs(model_id: str, path: Path, quant: str, vocab: int, grid=TRAIN_GRID, mode: str | None = None,
                   dropout: float = 0.0, steps: int = 2, load_dtype=None) -> None:
        mode = mode or ("qlora" if quant != "bf16" else "lora")
        if clock.left() < 40:
            emit(out, {"kind": "skipped", "model": model_id, "mode": mode, "why": "time budget"})
            return
        model, info = load(path, quant, load_dtype)
        if quant != "bf16":
            model = peft.prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
        if mode != "full":
            lcfg = peft.LoraConfig(r=LORA_RANK, lora_alpha=2 * LORA_RANK, lora_dropout=dropout,
                                   target_modules="all-linear", task_type="CAUSAL_LM")
            model = peft.get_peft_model(model, lcfg)
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        adapter_dtype = str(next(p.dtype for p in model.parameters() if p.requires_grad))
        emit(out, {"kind": "load", "model": model_id, "quant": quant, "mode": mode, **info,
                   "trainable_params": trainable, "adapter_dtype": adapter_dtype,
                   "after_peft_allocated_gib": now_alloc()})
        for batch, seq, ckpt in grid:
            if clock.left() < 15:
                emit(out, {"kind": "skipped", "model": model_id, "mode": mode, "batch": batch, "seq": seq,
                           "why": "time budget"})
                continue
            if dry:
                seq = min(seq, 64)
            rec = {"kind": "train", "model": model_id, "quant": quant, "mode": mode, "batch": batch, "seq": seq,
                   "grad_checkpointing": ckpt, "lora_rank": LORA_RANK if mode != "full" else None,
                   "lora_targets": "all-linear" if mode != "full" else None, "lora_dropout": dropout,
                   "optimizer": "adamw_torch", "steps": steps, "weights_dtype": adapter_dtype}
            try:
                set_checkpointing(model, ckpt)
                targs = transformers.TrainingArguments(
                    output_dir=str(tmp / "trainer"), per_device_train_batch_size=batch, max_steps=steps,
                    learning_rate=1e-4, bf16=cuda, optim="adamw_torch", report_to="none", save_strategy="no",
                    logging_strategy="no", disable_tqdm=True, dataloader_num_workers=0, gradient_checkpointing=False,
                    use_cpu=not cuda)
                per_step = StepPeaks()
                trainer = transformers.Trainer(model=model, args=targs, train_dataset=Tokens(steps * batch, seq, vocab),
                                               callbacks=[per_step] if steps > 2 else None)
                fresh()
                rec["before_allocated_gib"] = now_alloc()
                t = time.monotonic()
                trainer.train()
                sync()
                rec["train_s"] = time.monotonic() - t
                if steps > 2:
                    rec["step_peaks_gib"] = per_step.steps
                    rec["allocated_gib"] = max((a for a, _ in per_step.steps), default=None)
                    rec["reserved_gib"] = max((r for _, r in per_step.steps), default=None)
                else:
                    rec.update(peaks())
                del trainer
            except Exception as e:  # noqa: BLE001 - an out-of-memory or API error is a result to report
                rec["error"] = f"{type(e).__name__}: {e}"[:400]
                rec.update(peaks())
            for p in model.parameters():
                p.grad = None
            emit(out, rec)
            fresh()
        del model
        fresh()

    def infer_runs(model_id: str, path: Path, quant: str, vocab: int, repeats: int | None = None) -> None:
        if clock.left() < 40:
            emit(out, {"kind": "skipped", "model": model_id, "mode": "inference", "quant": quant, "why": "time budget"})
            return
        model, info = load(path, quant)
        model.config.use_cache = True
        emit(out, {"kind": "load", "model": model_id, "quant": quant, "mode": "inference", **info})
        g = torch.Generator().manual_seed(1)
        for prompt in PROMPTS:
            if clock.left() < 15:
                break
            p = min(prompt, 32) if dry else prompt
            ids = torch.randint(0, vocab, (1, p), generator=g).to(dev)
            rec = {"kind": "infer", "model": model_id, "quant": quant, "batch": 1, "prompt": p,
                   "new_tokens": NEW_TOKENS}
            try:
                def gen(n, ids=ids, p=p, model=model):
                    sync()
                    t = time.monotonic()
                    with torch.no_grad():
                        o = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n,
                                           do_sample=False, pad_token_id=0)
                    sync()
                    assert o.shape[1] == p + n, o.shape
                    return time.monotonic() - t
                gen(2)  # warm-up
                fresh()
                # the first plan: the faster of two runs at the first prompt, one at the others; --plan extra: repeats
                n_runs = repeats or (2 if prompt == PROMPTS[0] else 1)
                times = [gen(NEW_TOKENS) for _ in range(n_runs)]
                t_n = min(times)
                rec.update(peaks())
                t_1 = min(gen(1), gen(1))
                rec.update({"t_new_s": t_n, "t_first_s": t_1, "t_new_runs_s": times,
                            "decode_tokens_per_s": (NEW_TOKENS - 1) / max(t_n - t_1, 1e-9)})
            except Exception as e:  # noqa: BLE001
                rec["error"] = f"{type(e).__name__}: {e}"[:400]
            emit(out, rec)
        del model
        fresh()

    def checkpoint(model_id: str):
        path = tmp / model_id
        cfg = hf_config(model_id, dry)
        t = time.monotonic()
        with torch.device(dev):
            m = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        m.save_pretrained(path, safe_serialization=True)
        n_params = sum(p.numel() for p in m.parameters())
        del m
        fresh()
        emit(out, {"kind": "checkpoint", "model": model_id, "params": n_params, "s": time.monotonic() - t})
        return path, cfg

    def grid_plan(model_id: str) -> None:
        path, cfg = checkpoint(model_id)
        quants = ["bf16"] + (["bnb-nf4-dq"] if not bnb_version.startswith("unavailable") else [])
        for q in quants:
            train_runs(model_id, path, q, cfg.vocab_size)
        if model_id in INFER_MODELS:
            for q in INFER_QUANTS:
                if q == "bf16" or not bnb_version.startswith("unavailable"):
                    infer_runs(model_id, path, q, cfg.vocab_size)

    def extra_plan(model_id: str) -> None:
        """The second run: how the reserved peak grows over 20 steps, LoRA dropout's copies, decode speed by
        model size with three runs per prompt, full fine-tuning in pure bf16 and in mixed precision."""
        path, cfg = checkpoint(model_id)
        v = cfg.vocab_size
        if model_id == "llama-3.1-8b":
            train_runs(model_id, path, "bf16", v, grid=((4, 512, False),), steps=20)
            train_runs(model_id, path, "bnb-nf4-dq", v, grid=((4, 2048, True),), steps=20)
            train_runs(model_id, path, "bf16", v, grid=((4, 512, False),), dropout=0.05)
            train_runs(model_id, path, "bnb-nf4-dq", v, grid=((4, 512, False),), dropout=0.05)
        if model_id == "llama-3.2-1b":
            full = ((4, 512, False), (4, 2048, True))
            train_runs(model_id, path, "bf16", v, grid=full, mode="full")                           # pure bf16
            train_runs(model_id, path, "bf16", v, grid=full, mode="full", load_dtype=torch.float32)  # mixed
        infer_runs(model_id, path, "bf16", v, repeats=3)

    plan = {"grid": grid_plan, "extra": extra_plan}[args.plan]
    for model_id in [m for m in args.models.split(",") if m]:
        if clock.left() < 60:
            emit(out, {"kind": "skipped", "model": model_id, "why": "time budget"})
            continue
        try:
            plan(model_id)
        except Exception as e:  # noqa: BLE001
            emit(out, {"kind": "error", "model": model_id, "error": f"{type(e).__name__}: {e}"[:400],
                       "trace": traceback.format_exc()[-1500:]})
        finally:
            shutil.rmtree(tmp / model_id, ignore_errors=True)
            fresh()
    emit(out, {"kind": "end", "elapsed_s": time.monotonic() - clock.t0})
    out.close()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.exit(main())
