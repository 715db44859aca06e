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
from ..infra.checks import check_fields
from ..infra.files import read_json, write_text_atomically
from ..model.transformer import Transformer, TransformerConfig
from .tokenizers import tokenizer_from_dict

__all__ = ["FORMAT", "checkpoint_paths", "load_checkpoint", "read_checkpoint", "restore_run", "save_checkpoint",
           "save_run", "stored_arrays", "write_json"]

FORMAT = 1


def checkpoint_paths(path) -> tuple[Path, Path]:
    """``(NAME.npz, NAME.json)`` for ``NAME``, ``NAME.npz`` or ``NAME.json``."""
    path = Path(path)
    stem = path.with_suffix("") if path.suffix in (".npz", ".json") else path
    return stem.with_name(stem.name + ".npz"), stem.with_name(stem.name + ".json")


def write_json(path, data) -> None:
    """``data`` as JSON at ``path``, atomically (a temporary file renamed); data that JSON cannot hold is refused
    before anything is written."""
    write_text_atomically(path, json.dumps(data, indent=1, ensure_ascii=False))


def check_vocabularies(tokenizer, config, where: str) -> None:
    """A tokenizer's ids must have rows in the model's embedding: ``tokenizer.vocab_size <= config.vocab_size``."""
    if tokenizer.vocab_size > config.vocab_size:
        raise ValueError(f"{where}: the tokenizer has {tokenizer.vocab_size} tokens but the model's vocab_size is "
                         f"{config.vocab_size}: ids {config.vocab_size} and above have no embedding row")


def _config_from_dict(d: dict, where: str) -> TransformerConfig:
    """``TransformerConfig(**d)``, its fields checked first (a field with a default may be absent), its refusals
    said of the file ``where``."""
    fields = dataclasses.fields(TransformerConfig)
    optional = [f.name for f in fields if f.default is not dataclasses.MISSING]
    check_fields(d, where, {f.name: object for f in fields}, optional=optional, exact=True)
    try:
        return TransformerConfig(**d)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: {e}") from None


def save_checkpoint(path, model, tokenizer, meta: dict | None = None, *, dtype=None, arrays=None) -> Path:
    """Write ``NAME.npz`` (the parameters in ``dtype``, default their own; plus any extra ``arrays``), ``NAME.json``.

    Everything is checked and serialised before the first file is written (a tokenizer that fits the model,
    ``meta`` that JSON can hold), and both files go to temporary names first: a refused call changes nothing.
    """
    npz, js = checkpoint_paths(path)
    if not hasattr(tokenizer, "to_dict") or not hasattr(tokenizer, "vocab_size"):
        raise TypeError(f"tokenizer must be one of the package's tokenizers, got {type(tokenizer).__name__}")
    check_vocabularies(tokenizer, model.config, "save_checkpoint")
    try:
        text = json.dumps({"format": FORMAT, "config": dataclasses.asdict(model.config),
                           "tokenizer": tokenizer.to_dict(), "meta": meta or {}}, indent=1, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise TypeError(f"meta must hold only what JSON can (str, numbers, bools, None, lists, dicts): {e}") from None
    params = {name: to_numpy(p).astype(dtype or to_numpy(p).dtype) for name, p in model.params.items()}
    npz.parent.mkdir(parents=True, exist_ok=True)
    tmp_npz = npz.with_name(npz.name + ".tmp.npz")
    np.savez_compressed(tmp_npz, **params, **(arrays or {}))
    os.replace(tmp_npz, npz)
    write_text_atomically(js, text)  # already serialised: it cannot fail on the data now
    return npz


def load_checkpoint(path, *, dtype=None):
    """``(model, tokenizer, meta)`` from the files :func:`save_checkpoint` wrote (``dtype``: default the stored one)."""
    info, arrays = read_checkpoint(path)
    npz, js = checkpoint_paths(path)
    config = _config_from_dict(info["config"], f"{js}: config")
    tokenizer = tokenizer_from_dict(info["tokenizer"], f"{js}: tokenizer")
    model = Transformer(config, seed=0, dtype=dtype or (arrays["embed"].dtype.type if "embed" in arrays else None))
    shapes = {name: p.shape for name, p in model.params.items()}
    model.params = {name: a.astype(model.dtype) for name, a in stored_arrays(arrays, shapes, npz).items()}
    check_vocabularies(tokenizer, config, str(js))
    return model, tokenizer, info["meta"]


def read_checkpoint(path) -> tuple[dict, dict]:
    """``(info, arrays)``: a checkpoint's JSON, its fields checked (a malformed file is a ``ValueError`` naming it),
    and every array of its ``.npz``. What :func:`load_checkpoint` and the trainer's resume read."""
    npz, js = checkpoint_paths(path)
    for f in (npz, js):
        if not f.is_file():
            raise FileNotFoundError(f"no checkpoint file {f} (a checkpoint is NAME.npz beside NAME.json)")
    info = check_fields(read_json(js), str(js), {"config": dict, "format": int, "meta": dict, "tokenizer": dict})
    if info["format"] != FORMAT:
        raise ValueError(f"{js} has checkpoint format {info['format']!r}; this package reads format {FORMAT}")
    with np.load(npz) as stored:
        return info, {name: stored[name] for name in stored.files}


def stored_arrays(arrays: dict, shapes: dict, npz) -> dict:
    """``{name: arrays[name]}`` for each name of ``shapes``, each of that shape, or a ``ValueError`` naming the file,
    the array and what it holds instead (missing, or another shape)."""
    for name, shape in shapes.items():
        if name not in arrays or arrays[name].shape != tuple(shape):
            seen = arrays[name].shape if name in arrays else "missing"
            raise ValueError(f"{npz}: array {name!r} should be {tuple(shape)}, got {seen}")
    return {name: arrays[name] for name in shapes}


# -- a training run's resumable checkpoint (last.npz, last.json): what train_on_text saves and resumes from -----------
def save_run(path, model, optimizer, rng, tokenizer, state: dict, averaged=None) -> Path:
    """A run's checkpoint: the parameters, Adam's moments (``adam_m/``, ``adam_v/``) and step, the averaged model's
    parameters (``ema/``, if any), the random state and the run's ``state`` (its step, history, best loss)."""
    moments = {f"adam_m/{k}": v for k, v in optimizer.m.items()} | {f"adam_v/{k}": v for k, v in optimizer.v.items()}
    if averaged is not None:
        moments |= {f"ema/{k}": v for k, v in averaged.params.items()}
    return save_checkpoint(path, model, tokenizer, {"state": state, "adam_t": optimizer.t,
                                                     "rng": rng.bit_generator.state}, arrays=moments)


def restore_run(path, model, optimizer, rng, averaged=None) -> dict:
    """What :func:`save_run` wrote, put back into ``model``, ``optimizer``, ``rng`` and ``averaged``: the run's
    ``state``. Every field and array is checked first (a damaged file is a ``ValueError`` naming it), and the random
    state is set before any array, so a refused file changes nothing."""
    npz, js = checkpoint_paths(path)
    if not js.exists():
        raise FileNotFoundError(f"nothing to resume: no {js} (start a run without resume first)")
    info, arrays = read_checkpoint(path)  # its JSON's fields checked
    meta = check_fields(info["meta"], f"{js}: meta", {"adam_t": int, "rng": dict, "state": dict})
    fields = {"step": int, "best_loss": float | int, "best_step": int, "seconds": float | int, "history": dict}
    check_fields(meta["state"], f"{js}: meta's state", fields | {"window": list}, optional=["window"])
    if info["config"] != dataclasses.asdict(model.config):
        raise ValueError(f"{js} was trained with {info['config']}, not {dataclasses.asdict(model.config)}: "
                         "resume with the same model options")
    kinds = ("", "adam_m/", "adam_v/") + (("ema/",) if averaged is not None else ())
    stored = stored_arrays(arrays, {k + name: p.shape for k in kinds for name, p in model.params.items()}, npz)
    try:  # checked by the generator itself
        rng.bit_generator.state = meta["rng"]
    except (TypeError, ValueError, KeyError) as e:
        raise ValueError(f"{js}: meta's rng is not a {type(rng.bit_generator).__name__} state ({e!r})") from None
    for name in model.params:
        model.params[name], optimizer.m[name], optimizer.v[name] = (stored[k + name] for k in kinds[:3])
        if averaged is not None:
            averaged.params[name] = stored[f"ema/{name}"]
    optimizer.t = meta["adam_t"]
    return meta["state"]
