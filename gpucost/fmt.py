"""Numbers for reading: money always with its currency and rounded to what matters, shares in percent.

Used by the CLI's text output, the engines' sentences (rendered from the locale files) and the pages.
"""

from __future__ import annotations

import math


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt_amount(x: float | None) -> str:
    """An amount rounded for reading: ``12,999``, ``0.46``, ``0.0039`` (where a column names the unit)."""
    if _missing(x):
        return "—"
    if math.isinf(x):  # type: ignore[arg-type]
        return "∞"
    a = abs(x)  # type: ignore[arg-type]
    if a >= 100:
        return f"{x:,.0f}"
    if a >= 0.1 or a == 0:
        return f"{x:,.2f}"
    return f"{x:.2g}"


def fmt_money(x: float | None, currency: str) -> str:
    """``12,999 CNY``, ``0.46 USD``; thousands without cents, small amounts with two significant decimals."""
    text = fmt_amount(x)
    return text if text in ("—", "∞") else f"{text} {currency}"


def fmt_pct(x: float | None) -> str:
    """A fraction as a percentage: 0.37 → ``37 %``."""
    return "—" if _missing(x) else f"{100 * x:.0f} %"  # type: ignore[operator]


def fmt_hours(h: float | None) -> str:
    """``45 min`` under two hours, else ``3.5 h``; ∞ → ``never``."""
    if _missing(h):
        return "—"
    if math.isinf(h):  # type: ignore[arg-type]
        return "never"
    return f"{h * 60:.0f} min" if h < 2 else f"{h:.1f} h"  # type: ignore[operator]


__all__ = ["fmt_amount", "fmt_money", "fmt_pct", "fmt_hours"]
