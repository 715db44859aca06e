"""Loading DeepSeek-V3 attention weights: checking a state dict, reading a safetensors file, checking a call.

Kept apart from ``mla.py`` (whose layer reads as the paper's equations) because loading is plumbing:
names, shapes, layouts, devices and file formats. DeepSeek's checkpoints store each linear layer's
weight ``(out_features, in_features)`` under the names of their reference ``inference/model.py``
(``wq_a.weight``, ``q_norm.weight``, ..., see :func:`~attention_from_scratch.mla_config.mla_weight_shapes`);
:meth:`MultiHeadLatentAttention.from_state_dict` calls :func:`check_state_dict` and builds the layer.

Reading one layer from a checkpoint converted by DeepSeek's ``inference/convert.py`` (files
``model{rank}-mp{world_size}.safetensors``; FP8 weights must first be dequantised to BF16 with their
``fp8_cast_bf16.py``) needs no network and no ``safetensors`` package::

    state = read_safetensors("model0-mp1.safetensors", "layers.0.attn.")
    mla = MultiHeadLatentAttention.from_state_dict(MLAConfig(), state)

With the ``safetensors`` package the same is ``safe_open(path, framework="np")`` and
``f.get_tensor(name)`` for F32/F16 files (its NumPy loader refuses BF16, hence the widening below).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

import numpy as np

from .infra.backend import as_float, device_of, get_namespace, to_device
from .mla_cache import LatentCache
from .mla_config import MLAConfig, mla_weight_shapes, weight_attribute

__all__ = ["check_call", "check_state_dict", "read_safetensors"]

_NUMPY_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16}


def read_safetensors(path, prefix: str = "") -> dict:
    """The tensors of a safetensors file whose names start with ``prefix``, as NumPy arrays, prefix removed.

    The format: an 8-byte little-endian header size, a JSON header (name -> dtype, shape, byte offsets),
    then the raw little-endian bytes. NumPy has no bfloat16, so BF16 is widened to float32 exactly: a
    bfloat16 is the top 16 bits of a float32.
    """
    out = {}
    with open(path, "rb") as f:
        size, n = os.fstat(f.fileno()).st_size, int.from_bytes(f.read(8), "little")
        try:  # a file of another format gives a huge size or bytes that are not a JSON object
            header = json.loads(f.read(n).decode("utf-8")) if 2 <= n <= size - 8 else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            header = None
        if not isinstance(header, dict):
            raise ValueError(f"{path} is not a safetensors file: expected an 8-byte header size (<= the file's "
                             f"{size} bytes) and then a JSON object describing the tensors")
        base = f.tell()
        for name, info in header.items():
            if name == "__metadata__" or not name.startswith(prefix):
                continue
            try:
                (start, end), shape, dtype = info["data_offsets"], tuple(info["shape"]), info["dtype"]
                ok = 0 <= start <= end <= size - base
            except (KeyError, TypeError, ValueError):
                ok = False
            if not ok:
                raise ValueError(f"{path}: the header entry of {name!r} needs dtype, shape and data_offsets "
                                 f"within the file's data, got {info!r}")
            f.seek(base + start)
            raw = f.read(end - start)
            info = {"dtype": dtype, "shape": shape}
            if info["dtype"] == "BF16":
                array = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
            elif info["dtype"] in _NUMPY_DTYPES:
                array = np.frombuffer(raw, np.dtype(_NUMPY_DTYPES[info["dtype"]]).newbyteorder("<"))
            else:
                raise ValueError(f"{name}: dtype {info['dtype']} is not supported (BF16, F16, F32, F64 are)")
            out[name[len(prefix) :]] = array.reshape(info["shape"])
    return out


def check_state_dict(config: MLAConfig, state, *, prefix: str = "", xp=None, device=None) -> dict:
    """The layer's weights picked from ``state`` and checked: attribute name -> array.

    Attribute names drop ``.weight`` and join the rest with ``_`` (``"indexer.k_norm.bias"`` ->
    ``"indexer_k_norm_bias"``, :func:`~attention_from_scratch.mla_config.weight_attribute`). With
    ``config.index_n_heads > 0`` the DeepSeek-V3.2 indexer's five arrays are expected too.

    ``prefix`` selects one layer of a whole-model dict (e.g. ``"layers.0.attn."``; other keys are then
    ignored); without it every key must be one of :func:`mla_weight_shapes`. Missing, unexpected or
    mis-shaped weights raise ``ValueError`` naming them. Arrays keep their dtype, backend and device,
    unless ``xp`` (and ``device``) is given: then they are moved there. All must end up on one backend
    and device.
    """
    if not isinstance(config, MLAConfig):
        raise TypeError(f"config must be an MLAConfig, got {type(config).__name__}")
    if not isinstance(state, Mapping):
        raise TypeError(
            f"state must be a mapping from DeepSeek-V3 weight names to arrays (a dict), got {type(state).__name__}"
        )
    expected = mla_weight_shapes(config)
    given = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
    missing = [k for k in expected if k not in given]
    if missing:
        names = ", ".join(f"{prefix}{k} (expected shape {expected[k]})" for k in missing)
        raise ValueError(f"state dict is missing {names}")
    unexpected = [k for k in given if k not in expected]
    if unexpected and not prefix:
        raise ValueError(
            f"state dict has unexpected weights {unexpected} for this config "
            f"(q_lora_rank={config.q_lora_rank}, index_n_heads={config.index_n_heads}); expected exactly "
            f"{list(expected)}" + (" -- indexer.* weights are DeepSeek-V3.2's: use MLAConfig.deepseek_v32(...)"
                                   if any(k.startswith("indexer.") for k in unexpected) else "")
        )
    arrays = {}
    for name, shape in expected.items():
        a = given[name] if xp is None else to_device(given[name], xp, device)
        a = as_float(a, get_namespace(a), prefix + name)
        if tuple(a.shape) != shape:
            raise ValueError(f"weight {prefix}{name} has shape {tuple(a.shape)}, expected {shape} (out, in)")
        arrays[weight_attribute(name)] = a
    get_namespace(*arrays.values())  # refuses weights from two backends
    devices = {name: device_of(a) for name, a in arrays.items()}
    if len(set(map(str, devices.values()))) > 1:
        raise TypeError(
            f"the weights live on different devices ({devices}); pass xp= and device= to move them all to one"
        )
    return arrays


def check_call(layer, x, cache, mode: str):
    """The checks of ``mla(x, cache=, mode=)`` before anything is computed: -> ``(x as an array, start)``.

    A list becomes an array beside the weights; x must be ``(B, T, dim)``, non-empty; ``mode`` "naive" or
    "absorb"; ``cache`` a :class:`~attention_from_scratch.mla_cache.LatentCache`; every (possibly reassigned)
    weight is checked before the cache is touched; positions must stay below ``config.max_seq_len``.
    """
    cfg = layer.config
    if not hasattr(x, "dtype") and hasattr(layer.wkv_a, "dtype"):  # a list is data: put it beside the weights
        x = to_device(x, get_namespace(layer.wkv_a), device_of(layer.wkv_a))
    xp = get_namespace(x)
    x = as_float(x, xp, "x")
    if x.ndim != 3 or x.shape[-1] != cfg.dim:
        raise ValueError(f"x must have shape (B, T, dim={cfg.dim}), got {tuple(x.shape)}")
    if 0 in x.shape[:2]:
        raise ValueError(f"x is empty, shape {tuple(x.shape)}: B and T must be >= 1")
    if mode not in ("naive", "absorb"):
        raise ValueError(f"mode must be 'naive' or 'absorb', got {mode!r}")
    if cache is not None and not isinstance(cache, LatentCache):
        raise TypeError(f"cache must be a LatentCache (from mla.new_cache(batch_size)), got {type(cache).__name__}")
    for name in layer.weight_shapes(cfg):  # all weights checked before the cache is touched
        layer._w(weight_attribute(name), x)
    start = 0 if cache is None else len(cache)
    if start + x.shape[1] > cfg.max_seq_len:
        raise ValueError(
            f"positions {start}..{start + x.shape[1] - 1} go beyond config.max_seq_len={cfg.max_seq_len} "
            f"(the cache capacity and the extent of the RoPE table)"
        )
    return x, start
