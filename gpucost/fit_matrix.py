"""Every catalog model × format × card at once (page 02's matrix, benchmarks): the minimum number of cards
each combination needs under one setup, vectorized over the memory model of :mod:`gpucost.memory` (the
same functions a single estimate uses, on arrays of every model and format)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np
import pandas as pd

from gpucost.catalog import Catalog
from gpucost.memory import (
    ENGINE_PROFILES,
    GIB,
    INFERENCE_GPU_COUNTS,
    MODES,
    TRAINING_FRAMEWORKS,
    Setup,
    _arrays,
    _bisect_min,
    _inference_bytes,
    _training_top,
    _training_total,
    usable_gib,
)
from gpucost.models import ModelSpec, catalog_specs, lora_trainable_params
from gpucost.quant import formats
from gpucost.specs import DEFAULTS


@dataclass(frozen=True)
class FitMatrix:
    """min_gpus[model, format, card] (0 = no count fits, -1 = format/mode not applicable) and the per-GPU
    total on one card [GiB] (nan where not applicable)."""

    models: tuple[str, ...]
    formats: tuple[str, ...]
    cards: tuple[str, ...]
    counts: tuple[int, ...]
    min_gpus: np.ndarray
    one_gpu_gib: np.ndarray
    setup: Setup = field(compare=False, default_factory=Setup)

    def for_model(self, model: str) -> pd.DataFrame:
        """cards × formats table of minimum counts for one model (NaN: none fits / not applicable)."""
        i = self.models.index(model)
        m = self.min_gpus[i].T.astype(float)
        m[m <= 0] = np.nan
        return pd.DataFrame(m, index=list(self.cards), columns=list(self.formats))


@lru_cache(maxsize=16)
def _catalog_arrays(key: tuple) -> tuple[tuple[str, ...], tuple[str, ...], dict, np.ndarray, np.ndarray]:
    specs, fmts = key
    pairs = [(s, f) for s in specs for f in fmts]
    a = _arrays(tuple(pairs))
    M, F = len(specs), len(fmts)
    valid_mode = {}
    for mode in MODES:
        ok = np.ones((M, F), dtype=bool)
        for j, f in enumerate(fmts):
            if mode in ("full", "lora"):
                ok[:, j] = f.is_float
            elif mode == "qlora":
                ok[:, j] = not (f.is_float or f.is_gguf or f.id.startswith("fp8"))
        if mode != "inference":
            ok &= np.array([s.is_llm for s in specs])[:, None]
        valid_mode[mode] = ok
    heads = np.array([s.num_attention_heads if s.is_llm else 1 for s in specs], dtype=float)
    trainable_full = np.array([s.params_total for s in specs], dtype=float)
    return tuple(s.id for s in specs), tuple(f.id for f in fmts), {"a": a, "valid": valid_mode}, heads, trainable_full


@lru_cache(maxsize=32)
def _lora_counts(specs: tuple[ModelSpec, ...], rank: int, targets: str) -> np.ndarray:
    return np.array([lora_trainable_params(sp, rank, targets) if sp.is_llm else 0.0 for sp in specs])


def catalog_key(catalog: Catalog) -> tuple:
    """A hashable key of the catalog's models and formats (for the cached arrays)."""
    return (tuple(catalog_specs(catalog)), tuple(formats(catalog).values()))


def fit_matrix(catalog: Catalog, setup: Setup, cards: pd.DataFrame | None = None, key: tuple | None = None) -> FitMatrix:
    """Minimum GPU count for every catalog model × format × card under one setup (vectorized)."""
    key = key or catalog_key(catalog)
    specs, fmts = key
    model_ids, fmt_ids, data, heads, trainable_full = _catalog_arrays(key)
    cards = cards if cards is not None else catalog.gpus
    s = setup
    M, F = len(model_ids), len(fmt_ids)
    a = data["a"]
    if s.is_training:
        eng = s.engine if s.engine in TRAINING_FRAMEWORKS else "transformers"
        s = replace(s, engine=eng, tp=1, pp=1)
        a2 = {k: v[:, None] for k, v in a.items()}
        if s.mode == "full":
            trainable = np.repeat(trainable_full, F)[:, None]
        else:
            trainable = np.repeat(_lora_counts(specs, s.lora_rank, s.lora_targets), F)[:, None]
        quantized = np.tile(np.array([f.is_quantized for f in fmts]), M)[:, None]
        total = _training_total(a2, s, trainable, quantized)
        # cards share a handful of memory sizes: bisect once per distinct size, then map back to the cards; a card
        # must hold the need (without the allocator's cache, memory.min_gpus' rule)
        sizes, card_size = np.unique(np.asarray(cards["vram_gib"], dtype=float), return_inverse=True)
        top = _training_top(s, DEFAULTS.max_gpus)
        need = _training_total(a2, s, trainable, quantized, need=True)
        min_g = _bisect_min(need, sizes[None, :] * GIB, top)[:, card_size].reshape(M, F, len(cards))
        one = np.asarray(total(1.0), dtype=float).reshape(M, F) / GIB
        counts: tuple[int, ...] = (1, top)
    else:
        counts = INFERENCE_GPU_COUNTS
        N = np.asarray(counts, dtype=float)[None, :]
        a2 = {k: v[:, None] for k, v in a.items()}
        prof = ENGINE_PROFILES[s.engine]
        b0 = _inference_bytes(a2, N, s, prof)
        tot = sum(b0[k] for k in ("weights", "kv_cache", "activations", "gradients", "optimizer", "overhead"))
        if (s.parallel or prof.parallel) == "tensor":
            h = np.repeat(heads, F)[:, None]
            tot = np.where(np.mod(h, N) == 0, tot, np.inf)
        usable = np.asarray(usable_gib(cards["vram_gib"], s.engine, s.mode), dtype=float)
        sizes, card_size = np.unique(usable, return_inverse=True)  # cards share a handful of sizes
        tot = np.asarray(tot, dtype=float).reshape(M, F, len(counts))
        # the first count that fits = the number of counts whose running minimum is still above the card
        above = (np.minimum.accumulate(tot, axis=2)[:, :, None, :] > sizes[None, None, :, None] * GIB).sum(axis=3)
        with_zero = np.append(np.asarray(counts), 0)                      # index len(counts): none fits
        min_g = with_zero[above][:, :, card_size]
        one = tot[:, :, 0] / GIB
    valid = data["valid"][s.mode]
    min_g = np.where(valid[:, :, None], min_g, -1)
    one = np.where(valid, one, np.nan)
    return FitMatrix(models=model_ids, formats=fmt_ids, cards=tuple(cards["id"]), counts=tuple(counts),
                     min_gpus=min_g, one_gpu_gib=one, setup=s)
