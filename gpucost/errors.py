"""Errors that reach a user as one clear line (the CLI exits 2 with ``str(err)``)."""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable

#: characters that break or hide a line when a message is printed: control characters (newline, carriage
#: return, tab, escape), format characters (zero-width, bidirectional overrides), line and paragraph
#: separators, lone surrogates (undecodable bytes of argv)
_UNPRINTABLE = ("Cc", "Cf", "Zl", "Zp", "Cs")


def one_line(text: object) -> str:
    """``text`` with every character that would break or hide the line written as Python escapes it
    (``\\n``, ``\\r``, ``\\x1b``, ``\\u2028``): a value a user typed is echoed on one line, as typed."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(repr(ch)[1:-1] if unicodedata.category(ch) in _UNPRINTABLE else ch for ch in s)


class GpucostError(ValueError):
    """Base class: bad input from a user, a file or an option. Its message is one line: whatever the
    message echoes (a name, a file's cell) is made single-line by :func:`one_line`."""

    def __init__(self, message: object = "", *args: object) -> None:
        super().__init__(one_line(message), *args)


class DataError(GpucostError):
    """A data table (bundled or the user's own) is malformed: names file, row and column (the first problem);
    ``problems`` lists every (row, column, message) found when the table was validated."""

    def __init__(self, message: str, *, file: str | None = None, row: int | None = None,
                 column: str | None = None, problems: Iterable[tuple[int, str, str]] = ()) -> None:
        self.file, self.row, self.column = file, row, column
        self.problems = tuple(problems)
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
