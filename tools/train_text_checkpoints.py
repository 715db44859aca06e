"""Train the committed real-text checkpoints: ``attention_from_scratch/text/checkpoints/{tang,devil}.npz/.json``.

    python tools/train_text_checkpoints.py                 # both corpora, each with its preset
    python tools/train_text_checkpoints.py --corpus devil  # one
    python tools/train_text_checkpoints.py --corpus tang -- --steps 400   # extra options for the command

Each corpus runs ``python -m attention_from_scratch train --corpus NAME --out runs/checkpoint-NAME`` (the
preset of ``train_cli.PRESETS``; the same seeds, so the same run on the same machine and BLAS), then the
best checkpoint is copied into the package with what made it added to its meta: the command, the
wall time of training, when, the BLAS threads and the 1-minute load average of the machine before and
after (for the record only: the run never depends on it). Needs Debian's ``fortunes-zh`` and ``dict-devil``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from attention_from_scratch.text.checkpoints import checkpoint_paths, write_json
from attention_from_scratch.text.generation import PRETRAINED
from attention_from_scratch.text.train_cli import main as train


def train_checkpoint(corpus: str, extra: list[str], runs: Path) -> Path:
    out = runs / f"checkpoint-{corpus}"
    if out.exists():
        shutil.rmtree(out)  # a fresh run: the committed checkpoint must come from one command
    argv = ["--corpus", corpus, "--out", str(out), *extra]
    load_before, t0 = os.getloadavg()[0], time.time()
    train(argv)
    wall, load_after = time.time() - t0, os.getloadavg()[0]
    PRETRAINED.mkdir(exist_ok=True)
    for src, dst in zip(checkpoint_paths(out / "best"), checkpoint_paths(PRETRAINED / corpus), strict=True):
        shutil.copyfile(src, dst)
    info_path = checkpoint_paths(PRETRAINED / corpus)[1]
    info = json.loads(info_path.read_text(encoding="utf-8"))
    tool = ["python tools/train_text_checkpoints.py --corpus", corpus, *(["--", *extra] if extra else [])]
    info["meta"]["made_by"] = {
        "command": " ".join(tool),
        "train_command": "python -m attention_from_scratch train " + " ".join(argv),
        "wall_seconds_including_data_and_baselines": round(wall, 1),
        "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
        "load_average_before_after": [round(load_before, 2), round(load_after, 2)],
        "cpus": os.cpu_count(),
    }
    write_json(info_path, info)
    sizes = ", ".join(f"{p.name} {p.stat().st_size / 1e6:.2f} MB" for p in checkpoint_paths(PRETRAINED / corpus))
    print(f"{corpus}: {wall:.0f} s; committed {sizes}")
    return info_path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", action="append", choices=("tang", "devil"), help="default: both")
    p.add_argument("--runs", default="runs", help="where the training runs go (not committed)")
    p.add_argument("extra", nargs="*", help="options passed on to the train command (after --)")
    args = p.parse_args(argv)
    for corpus in args.corpus or ["tang", "devil"]:
        train_checkpoint(corpus, args.extra, Path(args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
