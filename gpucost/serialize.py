"""One encoder from records to JSON: dataclasses → dicts, tuples → lists, numpy → Python, NaN/inf → null.

Every record the engines return derives from :class:`Record`, whose ``to_dict()`` is this encoder; a
record whose JSON has another shape (a stable CLI contract) overrides ``to_dict`` and still passes its
values through :func:`jsonable`. The CLI prints ``jsonable(result)``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

import numpy as np


def number(v: Any) -> float | None:
    """``v`` as a finite float, or None when it is missing, not a number, NaN or infinite."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def jsonable(obj: Any) -> Any:
    """``obj`` as plain JSON values (see the module docstring). Missing numbers (NaN, ±inf) become None."""
    own = getattr(type(obj), "to_dict", None)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type) and callable(own) \
            and own is not Record.to_dict:  # a record with its own JSON shape (a CLI contract)
        obj = own(obj)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        obj = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.repr}
    elif hasattr(obj, "to_dict") and not isinstance(obj, Mapping) and callable(obj.to_dict) \
            and not isinstance(obj, (np.ndarray, np.generic)) and not hasattr(obj, "columns"):
        obj = obj.to_dict()
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [jsonable(v) for v in obj.tolist()]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, PurePath):
        return str(obj)
    return obj


class Record:
    """Base of the engines' frozen dataclass records: ``to_dict()`` is :func:`jsonable` of the fields."""

    __slots__ = ()

    def to_dict(self) -> dict:
        return {f.name: jsonable(getattr(self, f.name))
                for f in dataclasses.fields(self) if f.repr}  # type: ignore[arg-type]


def fields_dict(rec: Any, **extra: Any) -> dict:
    """The record's fields (encoded) plus ``extra`` keys, for records that add derived values."""
    d = {f.name: jsonable(getattr(rec, f.name)) for f in dataclasses.fields(rec) if f.repr}
    d.update({k: jsonable(v) for k, v in extra.items()})
    return d


__all__ = ["jsonable", "Record", "fields_dict"]
