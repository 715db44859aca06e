"""``python -m attention_from_scratch train --corpus tang``: train on real text, compare with the n-grams.

The command loads the corpus, holds out 10% of its documents, trains the tokenizer and the n-gram
baselines on the rest, trains a Transformer (``trainer.train_on_text``: progress line, held-out
evaluations, the best checkpoint in ``--out``, Ctrl-C then ``--resume``), and ends with a table of
held-out loss per character, nats and bits, of every model. Each named corpus has a preset
(:data:`PRESETS`, the settings that trained the committed checkpoints); any option given on the command
line replaces the preset's value. The command owns its process, so it keeps the memory each step frees for
the next one (``infra/allocator.keep_freed_memory``: glibc's malloc would hand it back to the system).
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
import time

from ..course.command_line import command_language, parse_args, parser_in
from ..course.i18n import msg
from ..infra.allocator import keep_freed_memory
from .data import baselines, prepare_text
from .evaluate import bits
from .trainer import TrainOptions, train_on_text

__all__ = ["OPTIONS", "PRESETS", "command_line", "main", "parser", "report", "run"]

# Per corpus: the data options and the training options of its committed checkpoint (docs/guide/numbers.md).
PRESETS = {
    # 300 poems overfit within a few hundred steps (issue 32): a small model, the Song poems added to the
    # training side, unigram input noise, strong weight decay and the moving average hold it back
    "tang": {"extra": ["song"], "tokenizer": "char", "d_model": 64, "n_heads": 4, "n_layers": 2, "d_ff": 256,
             "context": 64, "batch_size": 16, "steps": 1000, "lr": 3e-3, "weight_decay": 2.0, "input_noise": 0.2,
             "ema": 0.99, "eval_every": 25, "patience": 8},
    "devil": {"tokenizer": "char", "d_model": 128, "n_heads": 4, "n_layers": 3, "d_ff": 512, "context": 128,
              "batch_size": 16, "steps": 2000, "lr": 3e-3, "weight_decay": 0.1, "ema": 0.99, "eval_every": 100,
              "patience": 0},
}
DATA_OPTIONS = {"extra": [], "titles": False, "tokenizer": "char", "vocab_size": None, "min_count": 2,
                "held_out": 0.1, "split_seed": 0}


def _options() -> dict:
    """Option -> argparse keyword arguments, in the order of ``--help``: the data options, then one per
    field of :class:`TrainOptions`. ``None`` everywhere means "the corpus's preset" (:data:`PRESETS`)."""
    options = {
        "--corpus": {"default": "tang", "help": msg("tang, song, devil, or the path of any UTF-8 text file; tang and "
                                                     "devil have a preset, the settings that trained their "
                                                     "committed checkpoints (an option given replaces its value)")},
        "--out": {"default": None, "help": msg("output folder (default: runs/CORPUS)")},
        "--resume": {"action": "store_true", "default": False, "help": msg("continue the run saved in --out")},
        "--extra": {"action": "append", "default": None,
                    "help": msg("a corpus added to the training side (repeat)")},
        "--titles": {"action": "store_true", "default": None, "help": msg("keep the poems' title and author lines")},
        "--tokenizer": {"choices": ("char", "bpe"), "default": None, "help": msg("char or bpe (preset: char)")},
        "--vocab-size": {"type": int, "default": None, "help": msg("BPE vocabulary size")},
        "--min-count": {"type": int, "default": None, "help": msg("char: characters seen fewer times are bytes")},
        "--held-out": {"type": float, "default": None, "help": msg("fraction of documents held out")},
        "--split-seed": {"type": int, "default": None, "help": msg("seed of the held-out split")},
    }
    for f in dataclasses.fields(TrainOptions):
        kind = {"int": int, "float": float, "str": str}.get(str(f.type).split(" ")[0], float)
        options["--" + f.name.replace("_", "-")] = {"type": kind, "default": None,
                                                    "help": msg("the corpus's preset, else {default}",
                                                                default=f.default)}
    return options


OPTIONS = _options()  # also the rows of ``python -m attention_from_scratch train`` (__main__.COMMANDS)


# the first paragraph of the module docstring: the description of ``python -m attention_from_scratch.text.train_cli``
_DESCRIPTION = msg("``python -m attention_from_scratch train --corpus tang``: train on real text, compare with the "
                   "n-grams.")


def parser(lang: str | None = None) -> argparse.ArgumentParser:
    """The parser of this module's command line, its help in ``lang`` (default: the course-wide language)."""
    lang = command_language() if lang is None else lang
    return parser_in(lang, "python -m attention_from_scratch train", _DESCRIPTION, OPTIONS)


def command_line(args: dict) -> str:
    """The command that gives ``args``: every option that is set (not None, not False), in ``--help``'s order."""
    words = ["python", "-m", "attention_from_scratch", "train"]
    for option, kwargs in OPTIONS.items():
        value = args.get(option[2:].replace("-", "_"), kwargs["default"])
        if value is None or value is False:
            continue
        for one in value if isinstance(value, list) else [value]:
            words += [option] if one is True else [option, str(one)]
    return shlex.join(words)


def main(argv=None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    return run(parse_args(parser, argv))  # as `python -m attention_from_scratch train` would speak


def run(namespace: argparse.Namespace) -> int:
    """Train with the parsed options (``python -m attention_from_scratch train`` calls this); 2 if an option is
    refused or the corpus cannot be read (the message names the Debian package to install). It sets the
    process's allocator (``keep_freed_memory``), as the command that owns its process: a program that calls it
    in-process (``tools/train_text_checkpoints.py``) gets that setting too."""
    args = vars(namespace)
    keep_freed_memory()  # for every step of this process (the module docstring)
    preset = PRESETS.get(args["corpus"], {})
    chosen = {k: v for k, v in args.items() if v is not None and k in {o[2:].replace("-", "_") for o in OPTIONS}}
    data_options = {k: chosen.get(k, preset.get(k, v)) for k, v in DATA_OPTIONS.items()}
    train_fields = {f.name for f in dataclasses.fields(TrainOptions)}
    out = args["out"] or f"runs/{args['corpus']}"
    t0 = time.perf_counter()
    try:  # every option checked first (TrainOptions), then the text read: a refusal creates no folder
        options = TrainOptions(**{k: v for k, v in {**preset, **chosen}.items() if k in train_fields})
        data = prepare_text(args["corpus"], **data_options)
    except (FileNotFoundError, ValueError, TypeError) as e:  # CorpusNotFoundError: says what to install
        print(f"error: {e}", file=sys.stderr)
        return 2
    base = baselines(data)
    extra = "".join(f" + {name}" for name in data_options["extra"])  # added to the training side only
    print(f"{args['corpus']}{extra}: {len(data.train)} training documents ({len(data.train.text):,} characters), "
          f"{len(data.held)} held out ({data.held_out.n_chars:,} characters); {data.tokenizer}, "
          f"{data.chars_per_token:.2f} characters per token; prepared in {time.perf_counter() - t0:.1f} s")
    meta = {"command": command_line(args), "corpus": args["corpus"], "data": data_options, "baselines": base,
            "n_train_chars": len(data.train.text), "n_held_out_chars": data.held_out.n_chars}
    result = train_on_text(data.train_ids, data.held_out, data.tokenizer, options, out, resume=args["resume"],
                        meta=meta, chars_per_token=data.chars_per_token)
    seconds = result.history["seconds"][-1] if result.history["seconds"] else 0
    print(f"stopped: {result.stopped}; {seconds:.0f} s of training")
    print(report(base, result.best_loss, result.best_step))
    best = result.out / "best"
    print(f"best checkpoint: {best}.npz (+ .json); load it with TextModel.load({str(best)!r})")
    return 0


def report(base: dict, loss: float, step: int) -> str:
    """The held-out table: every baseline and the Transformer, nats and bits per character, and the verdict."""
    rows = [*base.items(), (f"Transformer (best, step {step})", loss)]
    width = max(28, *(len(name) for name, _ in rows))
    lines = [f"  {'held-out loss per character':{width}}  {'nats':>6}  {'bits':>6}"]
    lines += [f"  {name:{width}}  {nats:6.3f}  {bits(nats):6.3f}" for name, nats in rows]
    beaten = [name for name, nats in base.items() if loss < nats]
    verdict = ("the Transformer beats every baseline" if len(beaten) == len(base) else
               "the Transformer does NOT beat: " + ", ".join(n for n in base if n not in beaten))
    return "\n".join([*lines, verdict])


if __name__ == "__main__":  # python -m attention_from_scratch.text.train_cli --corpus tang
    sys.exit(main())
