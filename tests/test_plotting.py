"""The figures command writes every registered figure, and writes the same bytes twice."""

import hashlib

import matplotlib
import pytest

matplotlib.use("Agg")  # no display needed; also what the figures command uses on a headless machine

from attention_from_scratch import plotting
from attention_from_scratch.__main__ import main


def _digests(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.png"))}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    first, second = tmp_path_factory.mktemp("figs1"), tmp_path_factory.mktemp("figs2")
    assert main(["figures", "--out", str(first)]) == 0
    assert main(["figures", "--out", str(second)]) == 0
    return first, second


def test_figures_command_writes_every_listed_figure(two_runs):
    first, _ = two_runs
    assert plotting.FIGURES, "no figures are registered"
    written = {p.name for p in first.iterdir()}
    assert written == set(plotting.FIGURES)
    for name in plotting.FIGURES:
        data = (first / name).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n"), f"{name} is not a PNG"
        assert len(data) > 5_000, f"{name} is suspiciously small ({len(data)} bytes)"


def test_figures_are_deterministic(two_runs):
    first, second = two_runs
    assert _digests(first) == _digests(second)


def test_part1_figures_are_registered():
    # the notebooks 01-06 refer to these files by name
    for name in ["01_dot_product_geometry.png", "03_softmax_sharpness.png", "05_cat_eats_fish_weights.png",
                 "06_causal_mask.png"]:
        assert name in plotting.PART1_FIGURES and name in plotting.FIGURES


def test_attention_heatmap_shows_the_weights():
    import numpy as np

    w = np.array([[0.25, 0.75], [1.0, 0.0]])
    fig = plotting.plot_attention_weights(w, ["a", "b"])
    ax = fig.axes[0]
    texts = sorted(t.get_text() for t in ax.texts)
    assert texts == ["0.00", "0.25", "0.75", "1.00"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    np.testing.assert_array_equal(ax.images[0].get_array(), w)
    plotting.plt.close(fig)
