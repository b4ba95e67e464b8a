"""CLI subcommands, one module each: NAME, HELP, add_arguments(parser), run(args), render_text(result).

Modules here may import argparse; they import engines (and pandas) inside ``run`` only. A new module in
this package is registered by itself; ``ORDER`` only sets the order ``gpucost --help`` lists them in.
"""

from __future__ import annotations

import pkgutil
from pathlib import Path

ORDER = ["gpus", "fit", "speed", "tco", "probe", "rules", "plan", "claims"]


def _discover() -> list[str]:
    found = [m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if not m.name.startswith("_")]
    return [n for n in ORDER if n in found] + sorted(n for n in found if n not in ORDER)


#: registered subcommands, in the order ``gpucost --help`` lists them
COMMANDS: list[str] = _discover()
