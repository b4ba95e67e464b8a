"""Errors that reach a user as one clear line (the CLI exits 2 with ``str(err)``)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class GpucostError(ValueError):
    """Base class: bad input from a user, a file or an option. Its message is one line."""


class DataError(GpucostError):
    """A data table (bundled or the user's own) is malformed: names file, row and column."""

    def __init__(self, message: str, *, file: str | None = None, row: int | None = None,
                 column: str | None = None) -> None:
        self.file, self.row, self.column = file, row, column
        parts = []
        if file:
            parts.append(file)
        if row is not None:
            # row: 1-based data row; the line in the file is row + 1 (the header is line 1)
            parts.append(f"row {row} (line {row + 1})")
        if column:
            parts.append(f"column '{column}'")
        prefix = ", ".join(parts)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class SpecError(GpucostError):
    """A value outside its input spec. ``reason`` says how (number, whole, range, choice, required,
    finite, bool), so a page can say it in its own language; ``str()`` is the CLI's English line."""

    def __init__(self, message: str, *, reason: str, value: object = None) -> None:
        self.reason, self.value = reason, value
        super().__init__(message)


class UnknownNameError(GpucostError):
    """A name (GPU, model, format, table, scenario) that is not in the catalog."""

    def __init__(self, kind: str, name: str, known: Iterable[str], *, hint: str = "") -> None:
        known = list(known)
        self.kind, self.name = kind, name
        self.suggestions = closest(name, known)
        msg = f"unknown {kind} '{name}'"
        if self.suggestions:
            msg += "; closest: " + ", ".join(self.suggestions)
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)


def closest(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The closest known names to ``name`` (case-insensitive), best first."""
    known = list(dict.fromkeys(known))
    lower = {k.lower(): k for k in known}
    hits = difflib.get_close_matches(name.lower(), list(lower), n=n, cutoff=0.5)
    if not hits:
        hits = [k for k in lower if name.lower() in k or k in name.lower()][:n]
    return [lower[h] for h in hits]
