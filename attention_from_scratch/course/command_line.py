"""The command line in the learner's language: ``--help`` and argparse's refusals follow ``--lang`` or the
course-wide language (:mod:`.i18n`).

Every help text of the commands is a message (``msg``), rendered with :func:`rendered`; argparse's own words
(``usage:``, ``options``, ``invalid choice``) are answered from the same catalogs by :func:`argparse_words`; and
:class:`WideHelpFormatter` wraps Chinese by terminal columns. ``python -m attention_from_scratch`` and the ``train``
command (``text/train_cli.py``) both parse with :func:`parse_args`.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import unicodedata

from .i18n import LANGS, language, msg, render

__all__ = ["ARGPARSE_WORDS", "WideHelpFormatter", "argparse_words", "columns", "command_language", "formatter",
           "parse_args", "parser_in", "rendered"]

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
    english, english_str = argparse._, argparse.ArgumentError.__str__  # gettext.gettext: argparse's translation hook
    argparse._ = lambda text: words.get(text, text)
    if sys.version_info < (3, 11):  # Python 3.10 writes "argument --x: ..." without asking gettext (3.11 asks)
        argparse.ArgumentError.__str__ = _argument_error
    try:
        yield
    finally:
        argparse._, argparse.ArgumentError.__str__ = english, english_str


def _argument_error(error: argparse.ArgumentError) -> str:
    """An argparse refusal that names its argument, worded as Python 3.11's argparse words it (through ``_``)."""
    if error.argument_name is None:
        return error.message
    return argparse._("argument %(argument_name)s: %(message)s") % {"argument_name": error.argument_name,
                                                                     "message": error.message}


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
            if line and columns(line + piece.rstrip()) > width:
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
        extra = columns(prefix) - len(prefix)
        self._width -= extra
        try:
            first, *rest = super()._format_usage(usage, actions, groups, prefix).split("\n")
        finally:
            self._width += extra
        return "\n".join([first, *(" " * extra + line if line.startswith(" ") else line for line in rest)])


def columns(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def formatter(lang: str) -> type[argparse.HelpFormatter]:
    """The help formatter for ``lang``: argparse's own for English (its output unchanged)."""
    return argparse.HelpFormatter if lang == "en" else WideHelpFormatter


def rendered(options: dict, lang: str) -> dict:
    """``options`` (option -> argparse keyword arguments) with each help message rendered in ``lang``."""
    return {option: {**kwargs, "help": render(kwargs["help"], lang)} for option, kwargs in options.items()}



def parser_in(lang: str, prog: str, description, options: dict) -> argparse.ArgumentParser:
    """An argparse parser whose help speaks ``lang``: ``description`` (a message) rendered, ``options`` (option ->
    argparse keyword arguments, each help a message) added, Chinese wrapped by :class:`WideHelpFormatter`."""
    with argparse_words(lang):
        parser = argparse.ArgumentParser(prog=prog, description=render(description, lang),
                                         formatter_class=formatter(lang))
        for option, kwargs in rendered(options, lang).items():
            parser.add_argument(option, **kwargs)
    return parser


def parse_args(build, argv=None) -> argparse.Namespace:
    """``argv`` (default: ``sys.argv[1:]``) parsed by the parser ``build(lang)`` returns, its help and refusals in
    the command's language (:func:`command_language`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    lang = command_language(argv)
    with argparse_words(lang):
        return build(lang).parse_args(argv)
