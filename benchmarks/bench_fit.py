"""Fit engine speed: the whole fit matrix — every catalog model × every card × every format for one set
of inputs — target <= 20 ms on one core (issue 15; was 50 ms, issue 3); plus one scalar estimate, the speed of every card,
the validation run and `gpucost fit --json` end to end.

Run: .venv/bin/python benchmarks/bench_fit.py   (pin to one core with: taskset -c 0 ...)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import measure  # noqa: E402

from gpucost.catalog import Catalog  # noqa: E402
from gpucost.fit_matrix import _catalog_arrays, catalog_key, fit_matrix  # noqa: E402
from gpucost.memory import Setup, estimate  # noqa: E402
from gpucost.models import catalog_spec  # noqa: E402
from gpucost.quant import get_format  # noqa: E402
from gpucost.records import gpu_records  # noqa: E402
from gpucost.speed import decode_speed_cards  # noqa: E402
from gpucost.validation import validate  # noqa: E402


def main() -> None:
    cat = Catalog()
    cards = cat.gpus
    key = catalog_key(cat)
    specs, fmts = key
    n = len(specs) * len(fmts) * len(cards)
    print(f"fit matrix: {len(specs)} models × {len(fmts)} formats × {len(cards)} cards = {n} cells")
    fit_matrix(cat, Setup(), key=key)  # warm the per-catalog arrays
    for label, setup in (("inference, vLLM, 8k context, batch 8", Setup(context=8192, batch=8, engine="vllm")),
                         ("inference, llama.cpp, 32k context", Setup(context=32768, engine="llama.cpp")),
                         ("QLoRA, 2k sequence", Setup(mode="qlora", context=2048)),
                         ("full fine-tune, ZeRO-3 + CPU offload", Setup(mode="full", context=2048, zero=3,
                                                                          offload="cpu"))):
        measure(f"fit_matrix ({label})", lambda s=setup: fit_matrix(cat, s, cards=cards, key=key),
                repeat=100, target_ms=20)
    one_model = ((specs[0],), fmts)
    fit_matrix(cat, Setup(), key=one_model)
    for label, setup in (("inference", Setup(context=8192, batch=8, engine="vllm")),
                         ("full fine-tune, ZeRO-3 + CPU offload", Setup(mode="full", context=2048, zero=3,
                                                                          offload="cpu"))):
        measure(f"page 02's row: one model × every format × card ({label})",
                lambda s=setup: fit_matrix(cat, s, cards=cards, key=one_model), repeat=100, target_ms=20)
    measure("fit_matrix incl. re-reading the catalog key", lambda: fit_matrix(cat, Setup(), key=catalog_key(cat)),
            repeat=30, target_ms=20)

    def cold():
        _catalog_arrays.cache_clear()
        from gpucost.memory import _arrays
        from gpucost.quant import _weight_bytes_cached
        _arrays.cache_clear()
        _weight_bytes_cached.cache_clear()
        fit_matrix(cat, Setup(), key=key)

    measure("fit_matrix cold (per-tensor GGUF sizes of every pair)", cold, repeat=5, warmup=1)
    s, f = catalog_spec("llama-3.1-70b", cat), get_format("awq-4bit-g128", cat)
    measure("estimate (one model, one format)", lambda: estimate(s, f, Setup(context=8192, engine="vllm")), repeat=200)
    recs = list(gpu_records(cat).values())
    counts = [1] * len(recs)
    measure("decode_speed_cards (every card)", lambda: decode_speed_cards(s, f, recs, counts, catalog=cat), repeat=50)
    measure("validate (every benchmarks.csv row)", lambda: validate(cat), repeat=3, warmup=1)
    measure("gpucost fit --json (subprocess, end to end)",
            lambda: subprocess.run([sys.executable, "-m", "gpucost", "fit", "--model", "llama-3.1-8b", "--quant",
                                    "q4_k_m", "--json"], check=True, capture_output=True), repeat=5, warmup=1)


if __name__ == "__main__":
    main()
