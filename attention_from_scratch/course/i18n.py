"""The course's languages: English (the default and the source of truth) and Chinese (``lang="zh"``).

The quiz, the exercise checkers and the tour compose their English text from computed numbers. A
:class:`Catalog` translates such text after the fact: each entry maps an English *template* to a
Chinese one, and a ``{name}`` in a template stands for any text (a number, a shape, a name), carried
over into the Chinese. A placeholder whose name ends in ``_t`` is itself translated by the catalog
(a case label inside a report line, a hint after ``hint:``), one ending in ``_l`` is a list ``a; b``
whose items are::

    "{name}: FAILED on case {n} of {total} ({label_t})"  ->  "{name}：第 {n} 个用例（共 {total} 个）未通过（{label_t}）"

An entry without placeholders matches its English text with any numbers in it: the numbers of the
text being translated replace the entry's in the Chinese (``63.71`` in the catalog, ``63.72`` computed
on another machine: the Chinese says ``63.72``). So the English is never changed and the numbers stay
computed by the package, in both languages. Text that no template
matches is returned in English and remembered in :attr:`Catalog.misses`; the tests render every text
in both languages and fail on any miss, and on any template that nothing renders (a stale one).
"""

from __future__ import annotations

import re
from functools import cached_property

__all__ = ["LANGS", "Catalog", "check_lang"]

LANGS = ("en", "zh")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def _neutral(text: str) -> bool:
    """No English word in it: only numbers, symbols, dtypes, nan/inf and short names such as d_k, H, τ."""
    return not re.search(r"[a-z]{2,}", re.sub(r"float\d+|\b(?:nan|inf|exp|log|sqrt|max|cos|sin)\b|[A-Za-z]+_\w*",
                                              "", text))


def _skeleton(text: str) -> str:
    return _NUMBER.sub("#", text)


def _renumber(zh: str, old: list[str], new: list[str]) -> str:
    """``zh`` with each number that the catalog's English had at position i replaced by ``new[i]``."""
    if old == new:
        return zh
    first = {}
    for o, n in zip(old, new, strict=True):
        first.setdefault(o, n)
    return _NUMBER.sub(lambda m: first.get(m.group(0), m.group(0)), zh)


def check_lang(lang) -> str:
    """``lang`` itself if it is a supported language, else a ValueError naming the choices."""
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {', '.join(map(repr, LANGS))}, got {lang!r}")
    return lang


def _pattern(template: str) -> re.Pattern:
    parts, pos = [], 0
    for m in _PLACEHOLDER.finditer(template):
        parts.append(re.escape(template[pos:m.start()]))
        parts.append(f"(?P<{m.group(1)}>.*?)")
        pos = m.end()
    parts.append(re.escape(template[pos:]))
    return re.compile("".join(parts), re.DOTALL)


class Catalog:
    """English templates -> Chinese templates; ``translate(text, lang)`` (``lang="en"`` returns ``text``)."""

    def __init__(self, entries: dict[str, str]):
        self.entries = dict(entries)
        self.misses: set[str] = set()
        self.used: set[str] = set()
        for en, zh in self.entries.items():
            if set(_PLACEHOLDER.findall(en)) != set(_PLACEHOLDER.findall(zh)):
                raise ValueError(f"catalog entry {en!r}: the Chinese {zh!r} has other placeholders")

    @cached_property
    def _compiled(self):
        literal = {}  # skeleton -> entries; two entries may differ only in their numbers
        for en, zh in self.entries.items():
            if not _PLACEHOLDER.search(en):
                literal.setdefault(_skeleton(en), []).append((en, zh))
        # the most literal characters first, so a specific template wins over a general one
        patterns = sorted(((en, zh) for en, zh in self.entries.items() if en not in literal),
                          key=lambda e: -len(_PLACEHOLDER.sub("", e[0])))
        return literal, [(en, _pattern(en), zh) for en, zh in patterns]

    def translate(self, text: str, lang: str = "zh") -> str:
        if check_lang(lang) == "en" or _neutral(text):
            return text  # English, or no word to translate ("0", "[0.25 nan]", "(B, H) = (2, 3)", "float32")
        literal, patterns = self._compiled
        hits = literal.get(_skeleton(text))
        if hits:
            en, zh = next(((en, zh) for en, zh in hits if en == text), hits[0])
            self.used.add(en)
            return _renumber(zh, _NUMBER.findall(en), _NUMBER.findall(text))
        for en, pattern, zh in patterns:
            m = pattern.fullmatch(text)
            if m:
                self.used.add(en)
                values = {k: self._value(k, v, lang) for k, v in m.groupdict().items()}
                return _PLACEHOLDER.sub(lambda p, values=values: values[p.group(1)], zh)
        self.misses.add(text)
        return text

    def _value(self, name: str, value: str, lang: str) -> str:
        if name.endswith("_t"):
            return self.translate(value, lang)
        if name.endswith("_l"):  # a list "a; b; c", each item translated ("; " inside brackets is not a split)
            items = []
            for part in value.split("; "):
                if items and items[-1].count("(") > items[-1].count(")"):
                    items[-1] += "; " + part
                else:
                    items.append(part)
            return "；".join(self.translate(v, lang) for v in items)
        return value

    def translate_lines(self, text: str, lang: str = "zh") -> str:
        """Each line on its own; lines without a letter (numbers, matrices, blank) are kept as they are."""
        if check_lang(lang) == "en":
            return text
        out = []
        for line in text.split("\n"):
            body = line.lstrip(" ")
            indent = line[: len(line) - len(body)]
            out.append(indent + self.translate(body, lang))
        return "\n".join(out)


def printed_in(lang: str, catalog: Catalog, fn, *args) -> None:
    """Call ``fn(*args)``; in English its printing goes straight out, in Chinese it is caught (as UTF-8, so
    猫 is printable on any terminal) and printed again line by line through ``catalog``."""
    import contextlib
    import io

    if check_lang(lang) == "en":
        fn(*args)
        return
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(out):
        fn(*args)
    out.seek(0)
    print(catalog.translate_lines(out.read().rstrip("\n"), lang))
