"""Rules of thumb, tested: common GPU-cost claims computed with gpucost's own engines and data.

Each claim (most from the article in ``shared/seed/low-cost-gpu-guide.zh.txt``) is a
:class:`ClaimDef`: the inputs it assumes (:class:`InputSpec`, each with a default the user can change,
bounds from the shared specs) and a function that computes the quantity with the engine that owns it.
Every sentence — the claim, the article's words, the condition, the numbers' and charts' labels — is a
locale string (``gpucost/locales/<lang>/claims.json``), rendered in English and Chinese. :func:`evaluate` returns a :class:`ClaimResult`: the inputs used,
every computed number (units in the key names), a few headline numbers, the verdict and the condition
under which it holds. Nothing about a verdict is stored: it is computed from the numbers every time.

Verdicts (the user's point of view: is the claim too rosy?)

* ``holds``       — the computed figure is within the tolerance of the claim (or inside its range, or
  meets its bound);
* ``overstated``  — reality is less favourable than the claim says: a smaller saving, a slower card, a
  higher cost, more GPUs;
* ``understated`` — reality is more favourable than the claim says;
* ``depends``     — true or false according to a condition the claim does not state (said in
  ``condition``);
* ``unsupported`` — the data has no sourced figure the check needs (nothing is made up to fill it).

What "about" means is a judgement, not data: each claim's tolerance is an input (``tolerance_pct`` of the
claimed figure, or ``tolerance_pp`` percentage points) with the defaults in :data:`TOLERANCE`.

Units in names: ``_pct`` percent, ``_pp`` percentage points, ``_tflops`` dense TFLOPS, ``_gib`` GiB,
``_tokens_per_s``, ``_hours``, ``_x`` a multiple, ``_gpus`` a GPU count, ``_money`` an amount in the
record's ``computed["currency"]`` (``_money_per_hour``, ``_money_per_month`` likewise).
"""

from gpucost.claims import registry as _registry  # noqa: F401  (fills CLAIMS)
from gpucost.claims.core import (
    ARTICLE,
    CLAIMS,
    TOLERANCE,
    VERDICTS,
    ClaimDef,
    ClaimResult,
    InputSpec,
    Text,
    at_least,
    claim_ids,
    compare,
    default_inputs,
    evaluate,
    evaluate_all,
    get_claim,
    gpu_id,
    in_range,
    input_choices,
    parse_setting,
    price_table,
    resolve_inputs,
    split_overrides,
)

__all__ = ["ARTICLE", "VERDICTS", "TOLERANCE", "CLAIMS", "InputSpec", "ClaimDef", "ClaimResult", "Text", "compare",
           "in_range", "at_least", "claim_ids", "get_claim", "input_choices", "default_inputs", "resolve_inputs",
           "evaluate", "evaluate_all", "split_overrides", "parse_setting", "price_table", "gpu_id"]
