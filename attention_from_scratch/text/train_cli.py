"""``python -m attention_from_scratch train --corpus tang``: train on real text, compare with the n-grams.

The command loads the corpus, holds out 10% of its documents, trains the tokenizer and the n-gram
baselines on the rest, trains a Transformer (``trainer.train_on_text``: progress line, held-out
evaluations, the best checkpoint in ``--out``, Ctrl-C then ``--resume``), and ends with a table of
held-out loss per character, nats and bits, of every model. Each named corpus has a preset
(:data:`PRESETS`, the settings that trained the committed checkpoints); any option given on the command
line replaces the preset's value.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
import time

from .data import baselines, prepare_text
from .evaluate import bits
from .trainer import TrainOptions, train_on_text

__all__ = ["PRESETS", "main", "parser"]

# Per corpus: the data options and the training options of its committed checkpoint (README, "Real text").
PRESETS = {
    # 300 poems overfit within a few hundred steps (issue 32): a small model, the Song poems added to the
    # training side, unigram input noise, strong weight decay and the moving average hold it back
    "tang": {"extra": ["song"], "tokenizer": "char", "d_model": 64, "n_heads": 4, "n_layers": 2, "d_ff": 256,
             "context": 64, "batch_size": 16, "steps": 1000, "lr": 3e-3, "weight_decay": 2.0, "input_noise": 0.2,
             "ema": 0.99, "eval_every": 25, "patience": 8},
    "devil": {"tokenizer": "char", "d_model": 128, "n_heads": 4, "n_layers": 3, "d_ff": 512, "context": 128,
              "batch_size": 16, "steps": 1400, "lr": 3e-3, "weight_decay": 0.1, "ema": 0.99, "eval_every": 100,
              "patience": 0},
}
DATA_OPTIONS = {"extra": [], "titles": False, "tokenizer": "char", "vocab_size": None, "min_count": 2,
                "held_out": 0.1, "split_seed": 0}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m attention_from_scratch train", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--corpus", default="tang", help="tang, song, devil, or the path of any UTF-8 text file")
    p.add_argument("--out", default=None, help="output folder (default: runs/CORPUS)")
    p.add_argument("--resume", action="store_true", help="continue the run saved in --out")
    data = p.add_argument_group("data (default: the corpus's preset)")
    data.add_argument("--extra", action="append", default=None, help="a corpus added to the training side (repeat)")
    data.add_argument("--titles", action="store_true", default=None, help="keep the poems' title and author lines")
    data.add_argument("--tokenizer", choices=("char", "bpe"), default=None)
    data.add_argument("--vocab-size", type=int, default=None, help="BPE vocabulary size")
    data.add_argument("--min-count", type=int, default=None, help="char: characters seen fewer times are bytes")
    data.add_argument("--held-out", type=float, default=None, help="fraction of documents held out")
    data.add_argument("--split-seed", type=int, default=None, help="seed of the held-out split")
    model = p.add_argument_group("model and training (default: the corpus's preset, else TrainOptions)")
    for f in dataclasses.fields(TrainOptions):
        kind = {"int": int, "float": float, "str": str}.get(str(f.type).split(" ")[0], float)
        model.add_argument("--" + f.name.replace("_", "-"), type=kind, default=None, help=f"default {f.default}")
    return p


def main(argv=None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    args = vars(parser().parse_args(argv))
    preset = PRESETS.get(args["corpus"], {})
    chosen = {k: v for k, v in args.items() if v is not None}
    data_options = {k: chosen.get(k, preset.get(k, v)) for k, v in DATA_OPTIONS.items()}
    train_fields = {f.name for f in dataclasses.fields(TrainOptions)}
    options = TrainOptions(**{k: v for k, v in {**preset, **chosen}.items() if k in train_fields})
    out = args["out"] or f"runs/{args['corpus']}"
    t0 = time.perf_counter()
    data = prepare_text(args["corpus"], **data_options)
    base = baselines(data)
    print(f"{args['corpus']}: {len(data.train)} training documents ({len(data.train.text):,} characters), "
          f"{len(data.held)} held out ({data.held_out.n_chars:,} characters); {data.tokenizer}, "
          f"{data.chars_per_token:.2f} characters per token; prepared in {time.perf_counter() - t0:.1f} s")
    command = "python -m attention_from_scratch train " + shlex.join(sys.argv[1:] if argv is None else argv)
    meta = {"command": command, "corpus": args["corpus"], "data": data_options, "baselines": base,
            "n_train_chars": len(data.train.text), "n_held_out_chars": data.held_out.n_chars}
    run = train_on_text(data.train_ids, data.held_out, data.tokenizer, options, out, resume=args["resume"],
                        meta=meta, chars_per_token=data.chars_per_token)
    print(f"stopped: {run.stopped}; {run.history['seconds'][-1] if run.history['seconds'] else 0:.0f} s of training")
    print(report(base, run.best_loss, run.best_step))
    print(f"best checkpoint: {run.out / 'best'}.npz (+ .json); load it with TextModel.load({str(run.out / 'best')!r})")
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
