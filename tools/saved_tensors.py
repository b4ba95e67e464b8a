"""What autograd keeps for backward in one decoder layer of a fine-tuning run, per token, read off the real code on
the CPU: transformers' modeling code, PEFT's LoRA layers and bitsandbytes' 4-bit Linear, under the bf16 autocast the
HF Trainer runs with ``bf16=True``. Every tensor saved for backward is caught by
``torch.autograd.graph.saved_tensors_hooks`` and counted once per storage (frozen weights excluded); the per-layer
figure is the difference between a model of two decoder layers and one of one, divided by the tokens.

This is how data/training_profiles.csv's activation terms are checked against the code rather than guessed: the
script prints, per setup (LoRA on a bf16 base, QLoRA after ``prepare_model_for_kbit_training``; with and without
LoRA dropout), the bytes per layer per token in units of the hidden size h and the MLP width I, and next to them
what gpucost's model (gpucost.memory_training.training_activation_bytes) counts for the same setup.

Usage (needs torch, transformers, peft and bitsandbytes; runs on the CPU in about a minute):
    python tools/saved_tensors.py [--model llama-3.1-8b] [--tokens 64]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))


def saved_bytes(model, ids, autocast: bool) -> dict[str, int]:
    """Bytes of the tensors autograd saves in one forward pass (each storage once, parameters excluded), by dtype."""
    import torch

    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    params |= {b.untyped_storage().data_ptr() for b in model.buffers()}
    seen: dict[int, tuple[int, str]] = {}

    def pack(t):
        if isinstance(t, torch.Tensor) and t.device.type != "meta":
            st = t.untyped_storage()
            ptr = st.data_ptr()
            if ptr not in params and ptr not in seen:
                seen[ptr] = (st.nbytes(), str(t.dtype).replace("torch.", ""))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = model(input_ids=ids, labels=ids)
    del out
    by: dict[str, int] = {}
    for n, dt in seen.values():
        by[dt] = by.get(dt, 0) + n
    return by


def build(model_id: str, layers: int, quant: str, dropout: float):
    import peft
    import torch
    import transformers
    from device_measure import hf_config

    cfg = hf_config(model_id, tiny=False)
    cfg.num_hidden_layers = layers
    cfg.vocab_size = 256  # the logits are counted apart (gpucost's ``logits`` term): a small vocabulary here
    torch.manual_seed(0)
    m = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    if quant == "nf4":
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            m.save_pretrained(d)
            m = transformers.AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16, quantization_config=(
                transformers.BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16)))
        m = peft.prepare_model_for_kbit_training(m, use_gradient_checkpointing=False)
    m.config.use_cache = False
    m = peft.get_peft_model(m, peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=dropout, target_modules="all-linear",
                                               task_type="CAUSAL_LM"))
    m.train()
    return m, cfg


def main() -> int:
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="llama-3.1-8b")
    ap.add_argument("--tokens", type=int, default=64)
    args = ap.parse_args()
    from gpucost.catalog import Catalog
    from gpucost.memory import _arrays
    from gpucost.memory_training import training_activation_bytes, training_profile
    from gpucost.models import catalog_spec
    from gpucost.quant import get_format

    spec = catalog_spec(args.model, Catalog())
    a = _arrays(((spec, get_format("bf16")),))
    h, inter = spec.hidden_size, spec.intermediate_size
    print(f"{args.model}: h={h}, I={inter}; bytes per layer per token, from the code (saved for backward) and "
          "gpucost's model")
    for quant, dropout in (("bf16", 0.0), ("nf4", 0.0), ("bf16", 0.05), ("nf4", 0.05)):
        got = {}
        for layers in (1, 2):
            m, _ = build(args.model, layers, quant, dropout)
            for n in (args.tokens, 2 * args.tokens):
                got[layers, n] = saved_bytes(m, torch.randint(0, 256, (1, n)), autocast=True)
            del m
        # per layer (2 layers less 1) per token (2T tokens less T): what does not grow with either drops out (the
        # adapters' weights cast to bf16 by autocast, the embeddings, the loss over a 256-entry vocabulary)
        dts = {dt for v in got.values() for dt in v}
        diff = {dt: ((got[2, 2 * args.tokens].get(dt, 0) - got[1, 2 * args.tokens].get(dt, 0))
                     - (got[2, args.tokens].get(dt, 0) - got[1, args.tokens].get(dt, 0))) / args.tokens for dt in dts}
        total = sum(diff.values())
        mode = "qlora" if quant == "nf4" else "lora"
        prof = training_profile("transformers")
        est = training_activation_bytes(a, 1.0, 1.0, True, False, prof, mode, quant == "nf4", "all-linear",
                                        lora_dropout=dropout > 0)
        est_layer = float(est["saved"][0]) / spec.num_layers
        dt_s = ", ".join(f"{k} {v:,.0f}" for k, v in sorted(diff.items()) if v)
        print(f"  {mode:5} dropout {dropout}: code {total:,.0f} B (= {total / h:.2f} h; {dt_s}); gpucost "
              f"{est_layer:,.0f} B ({est_layer / total - 1:+.1%})")
    print("  (on the CPU, dropout keeps a float mask, 4 B per value; CUDA's fused dropout keeps a bool one, 1 B, which "
          "is what gpucost counts)")
    return 0


if __name__ == "__main__":
    import os
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    raise SystemExit(main())
