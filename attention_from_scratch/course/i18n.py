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

The language is chosen per call (``lang="zh"``) or course-wide, in this order: :func:`set_language`; the
environment variable ``ATTENTION_FROM_SCRATCH_LANG``; the notebook's folder, when it holds a file
``attention_from_scratch.json`` with ``{"lang": "zh"}`` (:data:`FOLDER_FILE`); else English. The folder is
the kernel's working directory -- Jupyter, VS Code, nbclient and nbval start a notebook's kernel in the
notebook's folder -- or the folder of the notebook the kernel serves, where the front end says which one
(Jupyter Server's ``JPY_SESSION_NAME``, IPython's ``__session__``, VS Code's ``__vsc_ipynb_file__``).
``notebooks/zh/`` holds that file, and ``student OUTDIR --lang zh`` writes it beside the student copies,
so a Chinese notebook replies in Chinese without the learner asking, while its code cells stay the English
ones. tests/test_translations.py fails on a template without a Chinese entry and on an entry no template
uses, and runs the Chinese notebooks' check cells with wrong answers looking for English sentences.
"""

from __future__ import annotations

import contextlib
import json
import os
import string
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from .files import course_folder

__all__ = ["ENV_VAR", "FOLDER_FILE", "LANGS", "Message", "catalog", "check_lang", "folder_language", "language",
           "msg", "render", "set_language", "using_language", "write_folder_language"]

LANGS = ("en", "zh")
ENV_VAR = "ATTENTION_FROM_SCRATCH_LANG"
FOLDER_FILE = "attention_from_scratch.json"  # beside a folder's notebooks: {"lang": "zh"}
_SESSION_NAMES = ("__session__", "__vsc_ipynb_file__")  # IPython (from JPY_SESSION_NAME), VS Code
CATALOGS = course_folder("translations")  # translations/<lang>/messages/*.json (a wheel ships a copy)
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
    """``lang`` if given, else the course-wide language: :func:`set_language`'s, the environment's, the
    notebook folder's (:func:`folder_language`), or "en"."""
    if lang is not None:
        return check_lang(lang)
    if _chosen:
        return _chosen[0]
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        if env not in LANGS:
            raise ValueError(f"the environment variable {ENV_VAR} must be one of {', '.join(map(repr, LANGS))} "
                             f"(or unset, for English), got {env!r}")
        return env
    return folder_language() or "en"


def _notebook_folders() -> list[Path]:
    """The kernel's working directory, then the folder of the notebook the front end names, if any."""
    try:
        folders = [Path.cwd()]
    except OSError:  # a working directory that was deleted: no folder to ask
        folders = []
    names = [os.environ.get("JPY_SESSION_NAME", "")]
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()  # only if IPython runs this
    user_ns = getattr(shell, "user_ns", None) or {}
    names += [str(user_ns.get(name) or "") for name in _SESSION_NAMES]
    for name in filter(None, names):
        path = Path(name)
        if path.suffix != ".ipynb":
            continue
        if not path.is_absolute():  # relative to the server's root: meaningful only if it is where we are
            path = folders[0] / path if folders else path
        if path.is_file():
            folders.append(path.parent)
    return folders


def folder_language(folder=None) -> str | None:
    """The language named by ``attention_from_scratch.json`` in ``folder`` (default: the notebook's folder, see
    the module docstring), else None."""
    for where in _notebook_folders() if folder is None else [Path(folder)]:
        try:
            text = (where / FOLDER_FILE).read_text(encoding="utf-8")
        except OSError:  # no such file (the usual case), or an unreadable one: it names no language
            continue
        try:
            lang = json.loads(text).get("lang")
        except (ValueError, AttributeError):
            lang = None
        if lang not in LANGS:
            raise ValueError(f"{where / FOLDER_FILE} must hold a JSON object such as {{\"lang\": \"zh\"}} naming "
                             f"one of {', '.join(map(repr, LANGS))}, got {text[:60]!r}")
        return lang
    return None


def write_folder_language(folder, lang: str) -> Path:
    """Write ``attention_from_scratch.json`` into ``folder``: the notebooks there reply in ``lang``."""
    path = Path(folder) / FOLDER_FILE
    about = ("The language of every check's reply in the notebooks of this folder (quiz, exercises, short answers): "
             "see attention_from_scratch/course/i18n.py")
    path.write_text(json.dumps({"lang": check_lang(lang), "about": about}, indent=1) + "\n", encoding="utf-8")
    return path


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
    paths = sorted((CATALOGS / check_lang(lang) / "messages").glob("*.json"))
    if not paths and lang != "en":
        raise FileNotFoundError(f"no message catalogs for {lang!r} in {CATALOGS / lang / 'messages'}: this install "
                                "lacks the translations (a checkout has them in translations/, a wheel ships a copy)")
    for path in paths:
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
