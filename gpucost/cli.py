"""The ``gpucost`` command line: every answer as JSON with ``--json``; exit 2 with one line on bad input.

Subcommands live in :mod:`gpucost.commands` (one module each, registered in ``COMMANDS``). Heavy
libraries are imported inside each command's ``run`` so that ``gpucost --help`` answers at once.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any

from gpucost import __version__
from gpucost.commands import COMMANDS


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        from gpucost.errors import one_line

        sys.stderr.write(f"{self.prog}: error: {one_line(message)}\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gpucost", description="What is the cheapest way to get the GPU compute "
                     "you need? Every answer as JSON with --json.")
    parser.add_argument("--version", action="version", version=f"gpucost {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        mod = importlib.import_module(f"gpucost.commands.{name}")
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_module=mod)
    return parser


def dump_json(obj: Any) -> str:
    from gpucost.serialize import jsonable

    return json.dumps(jsonable(obj), ensure_ascii=False, indent=2, allow_nan=False)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 0
    mod = args._module
    from gpucost.errors import GpucostError, one_line

    try:
        result = mod.run(args)
    except GpucostError as exc:
        sys.stderr.write(f"gpucost {mod.NAME}: {exc}\n")
        return 2
    except FileNotFoundError as exc:
        sys.stderr.write(f"gpucost {mod.NAME}: {one_line(exc.filename)}: file not found\n")
        return 2
    if getattr(args, "json", False) or not hasattr(mod, "render_text"):
        if isinstance(result, str):
            sys.stdout.write(result if result.endswith("\n") else result + "\n")
        else:
            sys.stdout.write(dump_json(result) + "\n")
    else:
        sys.stdout.write(mod.render_text(result) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
