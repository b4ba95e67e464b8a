"""Strings of the app, one folder per language: ``locales/<lang>/<page>.json`` (flat key → text).

``t(key, lang, **fmt)`` looks a key up in the page files of that language; a missing key raises, so a
page never shows a raw key silently (tests check both languages have the same keys in every file).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

LOCALES_DIR = Path(__file__).resolve().parent / "locales"
LANGUAGES = {"en": "English", "zh": "简体中文"}
#: the display currency a language starts with (the user can change it)
DEFAULT_CURRENCY = {"en": "USD", "zh": "CNY"}


@cache
def strings(lang: str) -> dict[str, str]:
    """All strings of ``lang`` (every page file merged; a key defined twice is an error)."""
    if lang not in LANGUAGES:
        raise KeyError(f"unknown language '{lang}'; known: {', '.join(LANGUAGES)}")
    out: dict[str, str] = {}
    for f in sorted((LOCALES_DIR / lang).glob("*.json")):
        for k, v in json.loads(f.read_text(encoding="utf-8")).items():
            if k in out:
                raise KeyError(f"string key '{k}' defined twice ({f.name})")
            out[k] = v
    return out


def t(key: str, lang: str = "en", **fmt) -> str:
    """The text of ``key`` in ``lang``, formatted with ``fmt``."""
    text = strings(lang)[key]
    return text.format(**fmt) if fmt else text


class Message(str):
    """A sentence an engine says (a note, a warning): its English text — what the CLI prints and JSON
    holds — with its locale ``key`` and ``params`` kept, so a page renders it in its own language
    (:func:`localize`). Parameters may be Messages themselves."""

    key: str
    params: dict

    def __new__(cls, key: str, **params) -> Message:
        obj = super().__new__(cls, t(key, "en", **{k: str(v) for k, v in params.items()}))
        obj.key, obj.params = key, params
        return obj

    def render(self, lang: str) -> str:
        return t(self.key, lang, **{k: localize(v, lang) for k, v in self.params.items()})

    def __reduce__(self):  # pickles (multiprocessing, caches) as the message it is
        return (_message, (self.key, self.params))


def _message(key: str, params: dict) -> Message:
    return Message(key, **params)


def localize(text, lang: str):
    """``text`` in ``lang`` when it is a :class:`Message`; anything else unchanged."""
    return text.render(lang) if isinstance(text, Message) else text
