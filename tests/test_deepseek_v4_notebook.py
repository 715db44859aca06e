"""The DeepSeek-V4 notebook's figures compute what they show (its catalog is checked with every other one in
tests/test_translations.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from attention_from_scratch.course.plots.deepseek_v4 import pooling_weights

REPO = Path(__file__).resolve().parents[1]


def test_pooling_weights_are_the_windows_by_hand():
    """Gates 0: each existing slot weighs 1/(number of slots); CSA's entry w spans tokens (w-1)m .. wm + m - 1."""
    m, n = 3, 9
    csa, hca = pooling_weights(n, m, overlap=True), pooling_weights(n, m, overlap=False)
    want_csa, want_hca = np.zeros((3, n)), np.zeros((3, n))
    for w in range(3):
        want_hca[w, w * m:(w + 1) * m] = 1 / m
        first = max(0, (w - 1) * m)
        want_csa[w, first:(w + 1) * m] = 1 / ((w + 1) * m - first)
    np.testing.assert_allclose(csa, want_csa, atol=1e-15)
    np.testing.assert_allclose(hca, want_hca, atol=1e-15)


def test_the_v4_figures_are_the_same_bytes_every_run(tmp_path):
    """Under the matplotlib that drew figures/, each v4 figure drawn here (another process, another hash seed) is the
    committed PNG: byte for byte on a CPU like the one that drew them (an AMD one, AVX2); elsewhere a curve's
    anti-aliasing may differ by a few levels at a few pixels. Their log-scale axes no longer use NumPy's log10, which
    rounds its last bit by the CPU's vector unit (drawn on an Intel CPU with AVX-512, they differed here at 83
    pixels, by 3 levels at most), but the C library's; what else an x86 CPU of another kind may round otherwise is
    not known here. Under another matplotlib, two drawings in this process are the same bytes."""
    import matplotlib

    matplotlib.use("Agg")
    from committed_figures import COMMITTED, drawn_by_this_matplotlib
    from matplotlib.image import imread

    from attention_from_scratch.course import plots
    from attention_from_scratch.course.plots import deepseek_v4

    assert set(deepseek_v4.FIGURES) <= set(plots.FIGURES) and all(n.startswith("v4_") for n in deepseek_v4.FIGURES)
    committed = drawn_by_this_matplotlib()
    for name, make in deepseek_v4.FIGURES.items():
        drawn = plots.save_figure(make(), tmp_path / name)
        again = COMMITTED / name if committed else plots.save_figure(make(), tmp_path / f"again_{name}")
        if drawn.read_bytes() == again.read_bytes():
            continue
        assert committed, f"{name}: two drawings in one process differ"
        mine, theirs = imread(drawn), imread(again)  # (H, W, 4) floats in [0, 1]
        assert mine.shape == theirs.shape, name
        off = np.abs(mine - theirs).max(axis=-1)  # (H, W): each pixel's largest channel difference
        assert off.max() <= 16 / 255 and np.mean(off > 0) < 1e-3, f"{name}: not the committed figure"
