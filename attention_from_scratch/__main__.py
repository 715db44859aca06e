"""``python -m attention_from_scratch``: argument parsing and dispatch to the sub-commands.

    python -m attention_from_scratch                  # the tour (same as `tour`)
    python -m attention_from_scratch tour --backend cupy
    python -m attention_from_scratch --lang zh        # the tour in Chinese
    python -m attention_from_scratch figures [--out figures/]
    python -m attention_from_scratch bench           # quick versions of the benchmarks
    python -m attention_from_scratch student OUTDIR  # notebooks without worked solutions, to hand out
                                                      # (OUTDIR new or empty, or --force)
    python -m attention_from_scratch student OUTDIR --lang zh   # the same, from the Chinese notebooks
    python -m attention_from_scratch grade HANDOUT SUBMISSION...   # each submission's checks: passed or not
    python -m attention_from_scratch corpora         # the corpora's Debian packages, where apt-get is missing
    python -m attention_from_scratch train --corpus tang   # train on real text (tang, song, devil, any file)

Each sub-command is one row of :data:`COMMANDS`; its code lives in its own module of the course
machinery (``course/tour/``, one module of sections per part of the course, ``course/plots/``,
``course/bench.py``, ``course/student.py``, ``course/grading.py``), imported only when that command runs.

``--help`` and argparse's refusals speak the command's language (``course/command_line.py``: ``--lang zh``
anywhere on the command line, else the course-wide language): every help is a message of course/i18n.py,
and argparse's own words (``usage:``, ``options``, ``invalid choice``) are answered from the same catalogs.
"""

from __future__ import annotations

import argparse
import sys
from importlib import import_module

from .course.command_line import argparse_words, command_language, formatter, parse_args, parser_in, rendered
from .course.i18n import language, msg, render
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
                                 "help": msg("the folder of the notebooks to copy, e.g. a few of the course's "
                                             "(default: the course's notebooks/, or notebooks/zh/ with --lang zh)")},
                 "--lang": {**_LANG, "help": msg("en or zh: the language of this command's messages and of the "
                                                 "copies' checks (from --notebooks DIR that holds an "
                                                 "attention_from_scratch.json: DIR's language); without "
                                                 "--notebooks, zh also copies the Chinese notebooks, notebooks/zh/ "
                                                 "(default: the course-wide one)")}},
                "course.student:main"),
    "grade": (msg("grade submitted notebooks: run each one, then ask the course's checks for their verdicts (needs "
                  "Jupyter's nbclient)"),
              {"handout": {"help": msg("your student copy of the notebook (from `student`): its check cells name "
                                       "what is graded")},
               "submissions": {"nargs": "+", "help": msg("the submitted copies of that notebook")},
               "--csv": {"default": None, "help": msg("also write the verdicts to this CSV file: one row per "
                                                      "submission, one column per check (1 = passed)")},
               "--timeout": {"type": int, "default": 600,
                             "help": msg("seconds one cell may run before its submission is given up (default: 600)")},
               "--lang": {**_LANG, "help": msg("en or zh: the language of this command's lines (default: the "
                                               "course-wide one); the verdicts are the same in both")}},
              "course.grading:main"),
    "corpora": (msg("download the Debian packages of the Tang and Song poems and The Devil's Dictionary where apt-get "
                    "cannot install them (macOS, Windows), then say where each corpus is read from"),
                {"--lang": {**_LANG, "help": msg("en or zh: the language of this command's lines (default: the "
                                                 "course-wide one)")}},
                "text.debian:main"),
    "train": (msg("train a Transformer on real text (Tang poems, Song poems, The Devil's Dictionary, any UTF-8 "
                  "file), keep the best checkpoint by held-out loss, compare with n-gram baselines"),
              _TRAIN_OPTIONS, "text.train_cli:run"),
}
DEFAULT_COMMAND = "tour"  # what runs with no sub-command; its options are accepted before one too


_DESCRIPTION = msg("Attention from scratch: a tour that prints one checked computation per concept, from the dot "
                   "product to multi-head latent attention, plus sub-commands for figures, benchmarks, student copies, "
                   "grading and training on real text.")


def build_parser(lang: str | None = None) -> argparse.ArgumentParser:
    """The parser of the command line, its help in ``lang`` (default: :func:`command_language`)."""
    lang = command_language() if lang is None else lang
    parser = parser_in(lang, "python -m attention_from_scratch", _DESCRIPTION, COMMANDS[DEFAULT_COMMAND][1])
    with argparse_words(lang):  # the sub-commands' parsers ask argparse's words too
        sub = parser.add_subparsers(dest="command", metavar="COMMAND")  # the commands are listed below it
        for name, (text, options, _) in COMMANDS.items():
            command = sub.add_parser(name, help=render(text, lang), formatter_class=formatter(lang))
            for option, kwargs in rendered(options, lang).items():
                if name == DEFAULT_COMMAND:  # SUPPRESS: `--backend cupy tour` keeps the top-level choice
                    kwargs = {**kwargs, "default": argparse.SUPPRESS}
                command.add_argument(option, **kwargs)
    return parser


def main(argv=None) -> int:
    args = parse_args(build_parser, argv)  # help and refusals in the command's language
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
