"""The course's languages: English (the default and the source of truth) and Chinese (``lang="zh"``).

Every sentence a learner reads is a :class:`Message`: an English template in ``str.format`` syntax with
named fields, and the values that fill them::

    msg("{name}: FAILED on case {n} of {total} ({label})", name="softmax", n=3, total=9, label=msg(...))

The template is the message's id. Its Chinese is data: ``translations/zh/messages/*.json`` maps each
English template to a Chinese one with the same fields, in the Chinese word order.
Rendering looks the template up and formats it with the values, so the numbers are always the ones the
package computed; a value that is itself a Message is rendered in the same language (a case label in a
report line), and a list of them is joined with the language's separator. Nothing is matched against
rendered English.

The language is chosen per call (``lang="zh"``) or course-wide: :func:`set_language`, or the environment
variable ``ATTENTION_FROM_SCRATCH_LANG`` (so a Chinese notebook or student copy can set it once and
every check replies in Chinese). tests/test_translations.py fails on a template without a Chinese entry
and on an entry no template uses.
"""

from __future__ import annotations

import contextlib
import json
import os
import string
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

__all__ = ["ENV_VAR", "LANGS", "Message", "catalog", "check_lang", "language", "msg", "render", "set_language",
           "using_language"]

LANGS = ("en", "zh")
ENV_VAR = "ATTENTION_FROM_SCRATCH_LANG"
CATALOGS = Path(__file__).resolve().parents[2] / "translations"  # translations/<lang>/messages/*.json
_chosen: list[str] = []  # set_language's choice (empty: the environment's, else English)
MISSES: set[str] = set()  # templates rendered in a language whose catalog lacks them (the tests keep it empty)


def check_lang(lang) -> str:
    """``lang`` itself if it is a supported language, else a ValueError naming the choices."""
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {', '.join(map(repr, LANGS))}, got {lang!r}")
    return lang


def set_language(lang: str) -> None:
    """Choose the language of every check and report that is not given ``lang=`` explicitly."""
    _chosen[:] = [check_lang(lang)]


def language(lang: str | None = None) -> str:
    """``lang`` if given, else the course-wide language: :func:`set_language`'s, the environment's, or "en"."""
    if lang is not None:
        return check_lang(lang)
    if _chosen:
        return _chosen[0]
    env = os.environ.get(ENV_VAR, "").strip()
    return check_lang(env) if env else "en"


@contextlib.contextmanager
def using_language(lang: str | None):
    """Within the block, the course-wide language is ``lang`` (None: unchanged)."""
    saved = list(_chosen)
    if lang is not None:
        set_language(lang)
    try:
        yield
    finally:
        _chosen[:] = saved


@cache
def catalog(lang: str) -> dict[str, str]:
    """English template -> ``lang``'s template, from every ``translations/<lang>/messages/*.json``."""
    merged: dict[str, str] = {}
    for path in sorted((CATALOGS / check_lang(lang) / "messages").glob("*.json")):
        for en, text in json.loads(path.read_text(encoding="utf-8")).items():
            if merged.get(en, text) != text:
                raise ValueError(f"{path.name}: {en!r} has two different translations")
            merged[en] = text
    return merged


def fields(template: str) -> list[tuple[str, str]]:
    """The (name, format spec) of each field of ``template``, in order."""
    return [(name, spec or "") for _, name, spec, _ in string.Formatter().parse(template) if name is not None]


@dataclass(frozen=True)
class Message:
    """An English ``template`` and the ``values`` of its fields; ``render(lang)`` gives the text."""

    template: str
    values: dict = field(default_factory=dict)

    def render(self, lang: str | None = None) -> str:
        lang = language(lang)
        template = self.template
        if lang != "en":
            template = catalog(lang).get(self.template)
            if template is None:  # never crash a learner: English, remembered for the tests
                MISSES.add(self.template)
                template = self.template
        return template.format(**{k: _value(v, lang) for k, v in self.values.items()})

    def __str__(self) -> str:
        return self.render()


def msg(template: str, /, **values) -> Message:
    """A message: ``template`` (English, ``str.format`` fields) filled with ``values`` when rendered."""
    return Message(template, values)


def render(text, lang: str | None = None) -> str:
    """A Message, a template without fields (an exercise's case label, a quiz option) or lines of them."""
    if isinstance(text, Message):
        return text.render(lang)
    if isinstance(text, str):
        return Message(text).render(lang) if text else text  # data text has no braces (the tests check)
    return "\n".join(render(line, lang) for line in text)


def _value(value, lang):
    if isinstance(value, Message):
        return value.render(lang)
    if isinstance(value, list) and value and all(isinstance(v, Message) for v in value):  # "a; b; c"
        return render(msg("; "), lang).join(_value(v, lang) for v in value)
    return value
