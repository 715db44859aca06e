"""benchmarks/bench_training.py's FLOP count against the closed form, and one tiny run of its table.

The timed runs are too slow for the suite: ``python benchmarks/bench_training.py`` (or the quick one
in ``python -m attention_from_scratch bench``)."""

from __future__ import annotations

import importlib
import multiprocessing
import threading
from pathlib import Path

import numpy as np
import pytest

from attention_from_scratch.model.transformer import TransformerConfig

BENCH_DIR = Path(__file__).resolve().parents[1] / "benchmarks"
pytestmark = pytest.mark.skipif(not BENCH_DIR.is_dir(), reason="benchmarks/ not in this checkout")


@pytest.fixture(autouse=True)
def no_settle(monkeypatch):
    """The tiny runs here time nothing worth settling for: no 0.2 s sleep before each turn (tests/test_timing.py
    tests the sleep itself)."""
    if BENCH_DIR.is_dir():
        monkeypatch.setattr(importlib.import_module("bench_training"), "SETTLE", 0.0)


@pytest.mark.parametrize(("n_kv_heads", "causal", "query_block"), [(None, True, 64), (2, True, 64), (None, True, 3),
                                                                  (2, False, 3)])
def test_matmul_flops_equal_six_per_weight_per_token_plus_attention(monkeypatch, n_kv_heads, causal, query_block):
    """Causal attention in query blocks of 3 (T = 7: queries 0-2 see 3 keys, 3-5 see 6, 6 sees 7) does
    3·3 + 3·6 + 1·7 = 34 of the 49 query-key products; without the mask, or in one block, all 49."""
    from attention_from_scratch.model import tiled_attention

    monkeypatch.setattr(tiled_attention, "QUERY_BLOCK", query_block)
    bench = importlib.import_module("bench_training")  # benchmarks/ is on pytest's pythonpath
    c = TransformerConfig(11, 24, 4, 3, 40, 9, n_kv_heads=n_kv_heads, causal=causal)
    b, t = 5, 7
    kv = c.kv_heads * c.d_k
    weights = c.n_layers * (2 * c.d_model * c.d_model + 2 * c.d_model * kv + 2 * c.d_model * c.d_ff)
    weights += c.d_model * c.vocab_size  # the unembedding; the embedding is a lookup, no matmul
    # 2 FLOPs per multiply-add, x3 for forward + dX + dW; attention: 2 products forward, 4 backward
    products = 34 if causal and query_block < t else t * t  # query-key pairs whose score is computed
    expected = 6 * b * t * weights + 2 * 6 * c.n_layers * b * c.n_heads * products * c.d_k
    _, flops = bench.make_floor(bench.matmul_shapes(c, b, t))
    assert flops == expected


def test_a_tiny_run_prints_ratios_and_skips_pytorch_when_absent(capsys):
    bench = importlib.import_module("bench_training")
    rows = bench.run({"tiny": (TransformerConfig(7, 8, 2, 1, 12, 6), 2, 6)}, threads=(1,), repeat=2)
    assert len(rows) == 1 and rows[0][0] == "tiny" and rows[0][-2] == "1" and float(rows[0][-1]) >= 0  # peak MiB
    step, *_ = bench.make_step(TransformerConfig(7, 8, 2, 1, 12, 6), 2, 6)
    assert bench.peak_step_bytes(step) > 2 * 6 * 12 * 8  # at least the MLP's hidden activations, float64
    assert float(rows[0][5]) > 0  # step / floor
    try:
        import torch  # noqa: F401
    except ImportError:
        assert "PyTorch is not installed" in capsys.readouterr().out and rows[0][6] == "-"


def test_two_threads_add_a_row_of_the_batch_in_parts():
    bench = importlib.import_module("bench_training")
    config, before = TransformerConfig(7, 8, 2, 1, 12, 6), set(multiprocessing.active_children())
    rows = bench.run({"tiny": (config, 4, 6)}, threads=(1, 2), repeat=1)
    assert [row[1] for row in rows] == ["1", "2", "2 (parts in processes)", "2 (parts in threads)"]
    assert rows[2][-1].endswith(" (caller)")  # the processes' row's peak: this process's share
    assert not rows[3][-1].endswith(" (caller)")  # the threads' row's: every part's, all in this process
    assert set(multiprocessing.active_children()) <= before  # the parts' worker processes were ended
    assert not any(t.name.startswith("attention_from_scratch-part") for t in threading.enumerate())  # and threads
    plain, model, tokens, targets = bench.make_step(config, 4, 6)  # float32, as the benchmark's steps
    _, twin, _, _ = bench.make_step(config, 4, 6)
    plain()
    step = bench.parts_step(twin, tokens, targets, 2)
    step()  # the same step from the same start, the batch in two parts
    step.close()
    start = bench.make_step(config, 4, 6)[1].params
    # both moved, to the same place: Adam's first step is about lr · sign(g) whatever |g|, so a gradient within
    # rounding of 0 may step the other way in the parts' sums; all but such rare entries agree to rounding
    assert all(not np.array_equal(w, start[name]) for name, w in model.params.items())
    agree = [np.isclose(twin.params[n], w, rtol=1e-4, atol=1e-6).ravel() for n, w in model.params.items()]
    assert np.concatenate(agree).mean() > 0.99


def test_the_real_text_rows_are_the_committed_checkpoints_and_print_the_pytorch_target(capsys, monkeypatch):
    import json

    from attention_from_scratch.text.generation import PRETRAINED

    bench = importlib.import_module("bench_training")
    (tang, (config, batch, t)), (devil, _) = bench.TEXT_CONFIGS.items()
    info = json.loads((PRETRAINED / "tang.json").read_text(encoding="utf-8"))
    assert "tang" in tang and "devil" in devil and config == TransformerConfig(**info["config"])
    assert (batch, t) == (info["meta"]["options"]["batch_size"], info["meta"]["options"]["context"]) == (16, 64)
    monkeypatch.setattr(bench, "TEXT_CONFIGS", {tang: bench.TEXT_CONFIGS[tang]})
    bench.main(threads=(1,), repeat=2, text=True)
    out = capsys.readouterr().out
    assert tang in out and "peak MiB" in out
    try:
        import torch  # noqa: F401
    except ImportError:
        assert "real-text step / PyTorch <= 1x: not measured (PyTorch is not installed)" in out
    else:
        assert "step / PyTorch" in out and ("-> met" in out or "-> not met" in out)
