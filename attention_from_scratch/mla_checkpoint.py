"""Loading DeepSeek-V3 attention weights: checking a state dict, and reading a safetensors file.

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
from collections.abc import Mapping

import numpy as np

from .backend import as_float, device_of, get_namespace, to_device
from .mla_config import MLAConfig, mla_weight_shapes

__all__ = ["check_state_dict", "read_safetensors"]

_NUMPY_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16}


def read_safetensors(path, prefix: str = "") -> dict:
    """The tensors of a safetensors file whose names start with ``prefix``, as NumPy arrays, prefix removed.

    The format: an 8-byte little-endian header size, a JSON header (name -> dtype, shape, byte offsets),
    then the raw little-endian bytes. NumPy has no bfloat16, so BF16 is widened to float32 exactly: a
    bfloat16 is the top 16 bits of a float32.
    """
    out = {}
    with open(path, "rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
        base = f.tell()
        for name, info in header.items():
            if name == "__metadata__" or not name.startswith(prefix):
                continue
            start, end = info["data_offsets"]
            f.seek(base + start)
            raw = f.read(end - start)
            if info["dtype"] == "BF16":
                array = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
            elif info["dtype"] in _NUMPY_DTYPES:
                array = np.frombuffer(raw, np.dtype(_NUMPY_DTYPES[info["dtype"]]).newbyteorder("<"))
            else:
                raise ValueError(f"{name}: dtype {info['dtype']} is not supported (BF16, F16, F32, F64 are)")
            out[name[len(prefix) :]] = array.reshape(info["shape"])
    return out


def check_state_dict(config: MLAConfig, state, *, prefix: str = "", xp=None, device=None) -> dict:
    """The layer's weights picked from ``state`` and checked: name (without ``.weight``) -> array.

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
            f"(q_lora_rank={config.q_lora_rank}); expected exactly {list(expected)}"
        )
    arrays = {}
    for name, shape in expected.items():
        a = given[name] if xp is None else to_device(given[name], xp, device)
        a = as_float(a, get_namespace(a), prefix + name)
        if tuple(a.shape) != shape:
            raise ValueError(f"weight {prefix}{name} has shape {tuple(a.shape)}, expected {shape} (out, in)")
        arrays[name.removesuffix(".weight")] = a
    get_namespace(*arrays.values())  # refuses weights from two backends
    devices = {name: device_of(a) for name, a in arrays.items()}
    if len(set(map(str, devices.values()))) > 1:
        raise TypeError(
            f"the weights live on different devices ({devices}); pass xp= and device= to move them all to one"
        )
    return arrays
