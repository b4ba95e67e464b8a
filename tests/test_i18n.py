"""Both languages have every string key, in every page file, with the same {placeholders}."""

from __future__ import annotations

import json
import re
import string

from gpucost.i18n import LANGUAGES, LOCALES_DIR, strings


def _fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


def test_every_page_file_exists_in_every_language():
    files = {lang: sorted(p.name for p in (LOCALES_DIR / lang).glob("*.json")) for lang in LANGUAGES}
    assert files["en"] == files["zh"] and files["en"]


def test_same_keys_and_placeholders_in_both_languages():
    for f in (LOCALES_DIR / "en").glob("*.json"):
        en = json.loads(f.read_text(encoding="utf-8"))
        zh = json.loads((LOCALES_DIR / "zh" / f.name).read_text(encoding="utf-8"))
        assert set(en) == set(zh), f"{f.name}: missing in zh {set(en) - set(zh)}, in en {set(zh) - set(en)}"
        for k in en:
            assert _fields(en[k]) == _fields(zh[k]), f"{f.name}:{k} placeholders differ"


def test_chinese_strings_are_translated():
    zh = strings("zh")
    han = re.compile(r"[\u4e00-\u9fff]")
    untranslated = [k for k, v in zh.items() if len(v) > 12 and not han.search(v)]
    assert not untranslated, untranslated
