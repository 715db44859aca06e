"""Checkpoints: a trained model, its tokenizer and what made it, in two plain files.

``NAME.npz`` holds the parameters (``model.params``, name -> array, in the model's dtype: float32 for the
text models, half the bytes of float64); ``NAME.json`` holds the rest, readable by eye:

    {"format": 1, "config": {TransformerConfig's fields}, "tokenizer": {tokenizer.to_dict()},
     "meta": {free-form: the command, the seed, the corpus split, the held-out loss, ...}}

:func:`load_checkpoint` rebuilds ``Transformer(TransformerConfig(**config))``, replaces its parameters by
the stored ones (every name and shape checked), and returns ``(model, tokenizer, meta)``.
Files are written to a temporary name and renamed, so an interrupted save never leaves half a checkpoint.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np

from ..infra.backend import to_numpy
from ..model.transformer import Transformer, TransformerConfig
from .tokenizers import tokenizer_from_dict

__all__ = ["FORMAT", "checkpoint_paths", "load_checkpoint", "save_checkpoint", "write_json"]

FORMAT = 1


def checkpoint_paths(path) -> tuple[Path, Path]:
    """``(NAME.npz, NAME.json)`` for ``NAME``, ``NAME.npz`` or ``NAME.json``."""
    path = Path(path)
    stem = path.with_suffix("") if path.suffix in (".npz", ".json") else path
    return stem.with_name(stem.name + ".npz"), stem.with_name(stem.name + ".json")


def write_json(path, data) -> None:
    """``data`` as JSON at ``path``, atomically (a temporary file renamed)."""
    tmp = Path(f"{path}.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def save_checkpoint(path, model, tokenizer, meta: dict | None = None, *, dtype=None, arrays=None) -> Path:
    """Write ``NAME.npz`` (the parameters in ``dtype``, default their own; plus any extra ``arrays``), ``NAME.json``."""
    npz, js = checkpoint_paths(path)
    npz.parent.mkdir(parents=True, exist_ok=True)
    params = {name: to_numpy(p).astype(dtype or to_numpy(p).dtype) for name, p in model.params.items()}
    tmp = npz.with_name(npz.name + ".tmp.npz")
    np.savez_compressed(tmp, **params, **(arrays or {}))
    os.replace(tmp, npz)
    write_json(js, {"format": FORMAT, "config": dataclasses.asdict(model.config),
                    "tokenizer": tokenizer.to_dict(), "meta": meta or {}})
    return npz


def load_checkpoint(path, *, dtype=None):
    """``(model, tokenizer, meta)`` from the files :func:`save_checkpoint` wrote (``dtype``: default the stored one)."""
    npz, js = checkpoint_paths(path)
    for f in (npz, js):
        if not f.is_file():
            raise FileNotFoundError(f"no checkpoint file {f} (a checkpoint is NAME.npz beside NAME.json)")
    info = json.loads(js.read_text(encoding="utf-8"))
    if info.get("format") != FORMAT:
        raise ValueError(f"{js} has checkpoint format {info.get('format')!r}; this package reads format {FORMAT}")
    config = TransformerConfig(**info["config"])
    with np.load(npz) as stored:
        arrays = {name: stored[name] for name in stored.files}
    model = Transformer(config, seed=0, dtype=dtype or arrays["embed"].dtype.type)
    for name, p in model.params.items():
        if name not in arrays or arrays[name].shape != tuple(p.shape):
            seen = arrays[name].shape if name in arrays else "missing"
            raise ValueError(f"{npz}: parameter {name!r} should be {tuple(p.shape)}, got {seen}")
        model.params[name] = arrays[name].astype(p.dtype)
    return model, tokenizer_from_dict(info["tokenizer"]), info["meta"]
