"""CLI subcommands, one module each: NAME, HELP, add_arguments(parser), run(args), render_text(result).

Modules here may import argparse; they import engines (and pandas) inside ``run`` only. A new module in
this package is registered by itself; ``ORDER`` only sets the order ``gpucost --help`` lists them in.
"""

from __future__ import annotations

import argparse
import pkgutil
from pathlib import Path

from gpucost.specs import SPECS

ORDER = ["gpus", "fit", "speed", "tco", "probe", "showback", "rules", "plan", "claims"]


def _discover() -> list[str]:
    found = [m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if not m.name.startswith("_")]
    return [n for n in ORDER if n in found] + sorted(n for n in found if n not in ORDER)


#: registered subcommands, in the order ``gpucost --help`` lists them
COMMANDS: list[str] = _discover()


def spec_type(name: str, flag: str):
    """An argparse ``type`` that parses and checks a flag's text with the shared spec ``name`` (the same
    bounds as the pages' widgets and the engines' validators)."""
    spec = SPECS[name]

    def parse(text: str):
        from gpucost.errors import GpucostError

        try:
            return spec.parse(text, flag)
        except GpucostError as exc:
            # argparse prefixes "argument --flag:"; keep the allowed range, drop our own "--flag:" prefix
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{flag}: ")) from None

    parse.__name__ = spec.kind  # argparse names the type in its own messages
    return parse


def bounded(lo: float, hi: float, unit: str = "", *, lo_open: bool = False, whole: bool = False):
    """An argparse ``type`` for a finite number in [lo, hi] (``lo_open``: above lo) with one clear message."""
    import math

    def parse(text: str):
        try:
            x = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
        ok = math.isfinite(x) and (x > lo if lo_open else x >= lo) and x <= hi and (not whole or x == int(x))
        if not ok:
            kind = "a whole number" if whole else "a number"
            low = f"above {lo:g}" if lo_open else f"at least {lo:g}"
            raise argparse.ArgumentTypeError(f"'{text}' must be {kind} {low} and at most {hi:g}"
                                             + (f" {unit}" if unit else ""))
        return int(x) if whole else x

    parse.__name__ = "number"
    return parse


def add_spec(p: argparse.ArgumentParser, flag: str, name: str, *, help: str | None = None,
             default=argparse.SUPPRESS, **kw) -> None:
    """Add ``flag`` whose type, default and allowed range come from the shared spec ``name``."""
    spec = SPECS[name]
    if default is argparse.SUPPRESS:
        default = spec.default
    whole = ", a whole number (1e3 = 1000)" if spec.kind == "int" else ""
    text = (help or spec.help) + f" ({spec.range_text()}{whole}; default {default})"
    if spec.kind == "choice":
        p.add_argument(flag, default=default, choices=spec.choices, type=type(spec.choices[0]), help=text, **kw)
    else:
        p.add_argument(flag, default=default, type=spec_type(name, flag), metavar=kw.pop("metavar", "N"),
                       help=text, **kw)


def add_market(p: argparse.ArgumentParser) -> None:
    """``--market``, ``--provider-kinds`` and ``--no-marketplaces``: where the user rents and buys, and from
    whom (every cloud and street price is chosen there)."""
    from gpucost.markets import MARKET_CHOICES, PROVIDER_KINDS

    p.add_argument("--market", default="auto", choices=MARKET_CHOICES,
                   help="where you rent and buy: cloud prices are chosen among this region's offers and street "
                        "prices (buy new, used, lease to own) among its quotes (a card with none is priced "
                        "elsewhere, marked 'outside'); auto = China for CNY, else global (outside mainland "
                        "China) (default auto)")
    p.add_argument("--provider-kinds", default=",".join(PROVIDER_KINDS), metavar="K[,K]",
                   type=_provider_kinds,
                   help=f"the kinds of provider you rent from, comma-separated ({', '.join(PROVIDER_KINDS)}; "
                        "default all)")
    p.add_argument("--no-marketplaces", dest="marketplaces", action="store_false",
                   help="leave out marketplaces (Vast, RunPod community, …: hosts renting out their machines)")


def _provider_kinds(text: str) -> tuple[str, ...]:
    """``--provider-kinds``: the names :class:`gpucost.markets.Market` accepts (its check, said as argparse's
    one line)."""
    from gpucost.errors import GpucostError
    from gpucost.markets import Market

    kinds = tuple(k.strip().lower() for k in str(text).split(",") if k.strip())
    try:
        Market(kinds=kinds)
    except GpucostError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return kinds


_provider_kinds.__name__ = "provider kinds"


def catalog_for(args: argparse.Namespace):
    """The bundled catalog (or ``GPUCOST_DATA_DIR``'s) with the market ``args`` name (:func:`add_market`)."""
    from gpucost.catalog import Catalog
    from gpucost.errors import GpucostError
    from gpucost.markets import PROVIDER_KINDS, Market

    kinds = tuple(getattr(args, "provider_kinds", PROVIDER_KINDS))
    if not getattr(args, "marketplaces", True):
        kinds = tuple(k for k in kinds if k != "marketplace")
        if not kinds:
            raise GpucostError("--no-marketplaces leaves no kind of provider in --provider-kinds")
    return Catalog().with_market(Market(getattr(args, "market", "auto"), kinds))
