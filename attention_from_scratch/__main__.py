"""``python -m attention_from_scratch``: argument parsing and dispatch to the sub-commands.

    python -m attention_from_scratch                  # the tour (same as `tour`)
    python -m attention_from_scratch tour --backend cupy
    python -m attention_from_scratch --lang zh        # the tour in Chinese
    python -m attention_from_scratch figures [--out figures/]
    python -m attention_from_scratch bench           # quick versions of the benchmarks
    python -m attention_from_scratch student OUTDIR  # notebooks without worked solutions, to hand out
                                                      # (OUTDIR new or empty, or --force)
    python -m attention_from_scratch student OUTDIR --lang zh   # the same, from the Chinese notebooks
    python -m attention_from_scratch train --corpus tang   # train on real text (tang, song, devil, any file)

Each sub-command is one row of :data:`COMMANDS`; its code lives in its own module of the course
machinery (``course/tour/``, one module of sections per part of the course, ``course/plots/``,
``course/bench.py``, ``course/student.py``), imported only when that command runs.

``--help`` and argparse's refusals speak the command's language (:func:`command_language`: ``--lang zh``
anywhere on the command line, else the course-wide language): every help is a message of course/i18n.py,
and argparse's own words (``usage:``, ``options``, ``invalid choice``) are answered from the same catalogs.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import unicodedata
from importlib import import_module

from .course.i18n import LANGS, language, msg, render
from .text.train_cli import OPTIONS as _TRAIN_OPTIONS

_BACKEND = {
    "choices": ["numpy", "cupy"],
    "default": "numpy",
    "help": msg("array backend: numpy (CPU, default) or cupy (needs a CUDA GPU and the cuda12/cuda13 extra)"),
}

_LANG = {"choices": ["en", "zh"], "default": None,
         "help": msg("language: en (English) or zh (Chinese); default: the course-wide one "
                     "(ATTENTION_FROM_SCRATCH_LANG, else English)")}

# name -> (help, {option: argparse keyword arguments}, "module:function" called with the parsed arguments
# and returning the exit status). Adding a sub-command is one row here. Every help is a message
# (course/i18n.py): --help speaks the command's language (command_language).
COMMANDS = {
    "tour": (msg("print one checked computation per concept (the default)"), {"--backend": _BACKEND, "--lang": _LANG},
             "course.tour:main"),
    "figures": (msg("regenerate the course figures (PNG) that the notebooks draw; benchmark figures come from "
                    "benchmarks/"), {"--out": {"default": "figures", "help": msg("output folder (default: figures/)")}},
                "course.plots:main"),
    "bench": (msg("run quick versions of all benchmarks (< 60 s)"), {}, "course.bench:main"),
    "student": (msg("write copies of the notebooks without solutions, answer keys and outputs, to hand out"),
                {"outdir": {"help": msg("folder for the student copies: new or empty (created if missing)")},
                 "--force": {"action": "store_true", "default": False,
                             "help": msg("write into OUTDIR even if it already holds files (they may be "
                                         "overwritten)")},
                 "--notebooks": {"default": None,
                                 "help": msg("course notebooks to copy (default: the repo's notebooks/)")},
                 "--lang": {**_LANG, "help": msg("en or zh: the Chinese notebooks, notebooks/zh/, and the language "
                                                 "of their checks and of this command's messages (default: the "
                                                 "course-wide one)")}},
                "course.student:main"),
    "train": (msg("train a Transformer on real text (Tang poems, Song poems, The Devil's Dictionary, any UTF-8 "
                  "file), keep the best checkpoint by held-out loss, compare with n-gram baselines"),
              _TRAIN_OPTIONS, "text.train_cli:run"),
}
DEFAULT_COMMAND = "tour"  # what runs with no sub-command; its options are accepted before one too


_DESCRIPTION = msg("Attention from scratch: a tour that prints one checked computation per concept, from the dot "
                   "product to multi-head latent attention, plus sub-commands for figures and benchmarks.")

# argparse's own words that these commands can print: its headings, -h's help and its error messages. argparse
# asks gettext for each of them by this English text (Python's argparse howto, "How to translate the argparse
# output"); argparse_words answers from the course's message catalogs instead of a compiled .mo file.
ARGPARSE_WORDS = (
    msg("usage: "), msg("positional arguments"), msg("options"), msg("show this help message and exit"),
    msg("%(prog)s: error: %(message)s\n"), msg("argument %(argument_name)s: %(message)s"),
    msg("invalid choice: %(value)r (choose from %(choices)s)"), msg("invalid %(type)s value: %(value)r"),
    msg("expected one argument"), msg("the following arguments are required: %s"),
    msg("unrecognized arguments: %s"), msg("ambiguous option: %(option)s could match %(matches)s"),
    msg("ignored explicit argument %r"),
)


def command_language(argv=()) -> str:
    """The language of the command's help and errors: the last ``--lang X`` (or ``--lang=X``) in ``argv`` that
    names a language, wherever it stands, else the course-wide one (course/i18n.py ``language()``), else English
    (an unknown one in the environment does not hide the help)."""
    argv = list(argv)
    given = [word[len("--lang="):] if word.startswith("--lang=") else argv[i + 1]
             for i, word in enumerate(argv) if word.startswith("--lang=") or (word == "--lang" and i + 1 < len(argv))]
    given = [lang for lang in given if lang in LANGS]
    if given:
        return given[-1]
    try:
        return language()
    except ValueError:  # ATTENTION_FROM_SCRATCH_LANG or the folder's file names no language: the command says so
        return "en"


@contextlib.contextmanager
def argparse_words(lang: str):
    """Within the block, argparse says its own words (:data:`ARGPARSE_WORDS`) in ``lang``: it looks each up when
    a parser is built (headings, -h), when help is printed (usage) and when it refuses the command line."""
    words = {text.template: text.render(lang) for text in ARGPARSE_WORDS}
    english = argparse._  # gettext.gettext: argparse's translation hook
    argparse._ = lambda text: words.get(text, text)
    try:
        yield
    finally:
        argparse._ = english


_WIDE = "\u2e80-\u9fff\uff00-\uffef"  # CJK characters and punctuation, full-width forms: two columns each
# the pieces a line may break between: a wide character or a run of other ones, with the punctuation that
# must stay beside it (no line starts with ，or ends with （) and the spaces after it
_PIECE = re.compile(rf"[（《“]*(?:[{_WIDE}]|[^\s{_WIDE}]+)[，。：；、）》”！？]*\s*")


class WideHelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter, wrapping lines by terminal columns: textwrap counts a Chinese character as one
    column and breaks lines only at spaces, so Chinese help would run to twice the terminal's width."""

    def _split_lines(self, text, width):
        lines, line = [], ""
        for piece in _PIECE.findall(" ".join(text.split())):
            if line and _columns(line + piece.rstrip()) > width:
                lines.append(line.rstrip())
                line = ""
            line += piece
        return [*lines, line.rstrip()]

    def _fill_text(self, text, width, indent):
        return "\n".join(indent + line for line in self._split_lines(text, width - len(indent)))

    def _format_usage(self, usage, actions, groups, prefix):
        """argparse's usage, laid out for a prefix ("用法：") wider on the terminal than its length: argparse
        indents the continuation lines by len(prefix + prog); they move under the first line's options, and
        every line is wrapped that much narrower."""
        prefix = argparse._("usage: ") if prefix is None else prefix
        extra = _columns(prefix) - len(prefix)
        self._width -= extra
        try:
            first, *rest = super()._format_usage(usage, actions, groups, prefix).split("\n")
        finally:
            self._width += extra
        return "\n".join([first, *(" " * extra + line if line.startswith(" ") else line for line in rest)])


def _columns(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def formatter(lang: str) -> type[argparse.HelpFormatter]:
    """The help formatter for ``lang``: argparse's own for English (its output unchanged)."""
    return argparse.HelpFormatter if lang == "en" else WideHelpFormatter


def rendered(options: dict, lang: str) -> dict:
    """``options`` (option -> argparse keyword arguments) with each help message rendered in ``lang``."""
    return {option: {**kwargs, "help": render(kwargs["help"], lang)} for option, kwargs in options.items()}


def build_parser(lang: str | None = None) -> argparse.ArgumentParser:
    """The parser of the command line, its help in ``lang`` (default: :func:`command_language`)."""
    lang = command_language() if lang is None else lang
    with argparse_words(lang):
        parser = argparse.ArgumentParser(prog="python -m attention_from_scratch",
                                         description=render(_DESCRIPTION, lang), formatter_class=formatter(lang))
        for option, kwargs in rendered(COMMANDS[DEFAULT_COMMAND][1], lang).items():
            parser.add_argument(option, **kwargs)
        sub = parser.add_subparsers(dest="command")
        for name, (text, options, _) in COMMANDS.items():
            command = sub.add_parser(name, help=render(text, lang), formatter_class=formatter(lang))
            for option, kwargs in rendered(options, lang).items():
                if name == DEFAULT_COMMAND:  # SUPPRESS: `--backend cupy tour` keeps the top-level choice
                    kwargs = {**kwargs, "default": argparse.SUPPRESS}
                command.add_argument(option, **kwargs)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    lang = command_language(argv)
    with argparse_words(lang):  # help and refusals in the command's language
        args = build_parser(lang).parse_args(argv)
    if getattr(args, "lang", "") is None:  # a command that speaks the course-wide language, which is not given here:
        try:  # a wrong one in the environment or the folder's file is refused in one line, not a traceback
            language()
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    module, function = COMMANDS[args.command or DEFAULT_COMMAND][2].split(":")
    return getattr(import_module(f".{module}", __package__), function)(args)


if __name__ == "__main__":
    sys.exit(main())
