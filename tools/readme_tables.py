"""Regenerate the README's computed tables from the code and the bundled data, or check they are current.

Usage (repo root): .venv/bin/python tools/readme_tables.py [--check]

Each table sits between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``; ``--check`` exits 1
naming the tables that differ (tests/test_readme.py runs it), without it the README is rewritten.
Tables: ``defaults`` (gpucost.specs.SPECS, shared by the CLI and the pages), ``data`` (rows per bundled
table), ``errors`` (the estimators' measured error, gpucost.validation), ``claims`` (gpucost claims).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def defaults_table() -> str:
    from gpucost.specs import DEFAULTS, SPECS

    lines = ["| setting | default | allowed | used by |", "| --- | --- | --- | --- |"]
    for name in DEFAULTS.__dataclass_fields__:
        s = SPECS[name]
        number = isinstance(s.default, (int, float)) and not isinstance(s.default, bool)
        value = f"{s.default:g}" + (f" {s.unit}" if s.unit else "") if number else str(s.default)
        lines.append(f"| `{name}` | {value} | {_cell(s.range_text())} | {_cell(s.help)} |")
    return "\n".join(lines)


def data_table() -> str:
    from gpucost.catalog import Catalog

    cat = Catalog()
    what = _DATA_WHAT
    lines = ["| table | rows | oldest / newest `as_of` | what |", "| --- | ---: | --- | --- |"]
    for name, text in what.items():
        t = cat.table(name)
        dates = t["as_of"].astype(str) if "as_of" in t.columns else None
        span = f"{dates.min()} / {dates.max()}" if dates is not None and len(dates) else "—"
        lines.append(f"| `{name}.csv` | {len(t)} | {span} | {text} |")
    return "\n".join(lines)


_DATA_WHAT = {
    "gpus": "NVIDIA GeForce (Pascal to Blackwell), workstation and data-centre cards (to B300/GB300, China-market "
            "H800/A800/4090 D), AMD Radeon/Instinct (to MI355X), Intel Gaudi, Huawei Ascend (memory only): memory, "
            "bandwidth, dense FP32/FP16/BF16/FP8/INT8 throughput (GeForce: FP32 accumulate), TDP, links, MIG, "
            "form factor and host type, NVML names",
    "prices": "street prices new and used, USD and CNY, with the channel (MSRP, retail, marketplace, news report)",
    "cloud_offers": "on-demand, spot and 1-year/3-year reserved prices per instance (SkyPilot column names)",
    "fx": "exchange rates (ECB reference rates)",
    "api_prices": "hosted APIs' prices per 1M input, cached-input and output tokens (USD and CNY), with the "
                  "open-weights model each is comparable to",
    "models": "open models' architecture from their `config.json`",
    "quant_formats": "effective bits per weight, hardware needs and published perplexity loss",
    "benchmarks": "the validation corpus: published measurements the estimators are judged against, each with its "
                  "source document and conditions",
    "engine_efficiency": "speed factors per engine, backend and kernel path, each with the corpus rows it was "
                         "fitted on (tools/calibrate.py)",
    "error_bands": "cross-validated error and p10–p90 of measured ÷ estimated per category and engine "
                   "(tools/calibrate.py)",
    "training_profiles": "what each fine-tuning framework (and version) keeps on the card, field by field from "
                         "its code",
    "allocator": "PyTorch's caching allocator: reserved ÷ allocated of what a training step frees and allocates "
                 "again, from the corpus's pairs of one run's two figures (tools/calibrate.py)",
    "moe_efficiency": "the share of the dense compute rate a mixture-of-experts model's routed experts reach, "
                      "fitted on the corpus's MoE serving runs (tools/calibrate.py)",
}


def errors_table() -> str:
    """The cross-validated error per category, then per category and engine (rows / documents)."""
    from gpucost.validation import band_coverage, markdown_table, summary, validate

    results = validate()
    est = results[results["role"] == "validation"]
    head = (f"{len(results)} measurements from {results['source_id'].nunique()} documents on "
            f"{results['gpu'].replace('', None).nunique()} named GPUs; {len(est)} of them estimated, from "
            f"{est['source_id'].nunique()} documents on {est['gpu'].replace('', None).nunique()} GPUs.\n\n")
    cov = band_coverage(results)
    lines = ["| category | rows judged / documents | inside the band made without their document | below it | "
             "above it | band |", "| --- | ---: | ---: | ---: | ---: | --- |"]
    for r in cov.to_dict(orient="records"):
        if not r["rows"]:
            continue
        lo, hi = r["band_q_low"], r["band_q_high"]
        band = (f"{'min' if lo == 0 else f'p{100 * lo:g}'}–{'max' if hi == 0 else f'p{100 * (1 - hi):g}'}")
        lines.append(f"| {r['category']} | {r['rows']} / {r['sources']} | {100 * r['coverage']:.0f} % | "
                     f"{100 * r['below'] / r['rows']:.0f} % | {100 * r['above'] / r['rows']:.0f} % | {band} |")
    return (head + markdown_table(summary(results)) + "\n\nPer engine:\n\n" + markdown_table(summary(results, by="engine"))
            + "\n\nThe bands, held out (each row against the band made without its document; target 70–90 % inside, "
              "no more than 10 % beyond either end):\n\n"
            + "\n".join(lines))


def claims_table() -> str:
    from gpucost.catalog import Catalog
    from gpucost.claims import evaluate_all

    lines = ["| claim | verdict | condition |", "| --- | --- | --- |"]
    for r in evaluate_all(Catalog()):
        d = r.to_dict()
        lines.append(f"| {_cell(d['claim'])} | {d['verdict']} | {_cell(d['condition'])} |")
    return "\n".join(lines)


TABLES: dict[str, Callable[[], str]] = {"defaults": defaults_table, "data": data_table,
                                        "errors": errors_table, "claims": claims_table}


def render(text: str) -> tuple[str, list[str]]:
    """``text`` with every generated table replaced; and the names of those that changed."""
    changed = []
    for name, make in TABLES.items():
        pat = re.compile(rf"(<!-- generated:{name} -->\n)(.*?)(<!-- /generated:{name} -->)", re.S)
        m = pat.search(text)
        if m is None:
            raise SystemExit(f"README.md: no <!-- generated:{name} --> block")
        body = make() + "\n"
        if m.group(2) != body:
            changed.append(name)
            text = text[:m.start(2)] + body + text[m.end(2):]
    return text, changed


def main(argv: list[str]) -> int:
    new, changed = render(README.read_text(encoding="utf-8"))
    if "--check" in argv:
        if changed:
            print(f"README.md is out of date: {', '.join(changed)} (run tools/readme_tables.py)")
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    print(f"rewrote: {', '.join(changed) or 'nothing (all current)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
