"""Every registered figure is built without training; the figures command writes each listed figure as a PNG and
matches the committed PNGs of the figures drawn from stored results (the trainings' figures, which must not depend
on the BLAS build).

The command writes here the figures that no notebook draws, those drawn from stored results and the two that the
tests below read again (``WRITTEN``): the notebooks (nbval) draw the others, and rendering them twice cost the
suite 10 s of a core. The whole command, every figure, runs in CI's wheel smoke test (``.ci/wheel-smoke``).

Also: the figures are assembled from the part modules' FIGURES, the heatmap shows the weights it is
given, and the examples that notebooks share with the figures compute what they say.
"""

import hashlib
import importlib
import re

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")  # no display needed; also what the figures command uses on a headless machine

import build_translations as bt  # tools/, on pytest's pythonpath: the notebooks' reader
from committed_figures import COMMITTED, FIGURES_MATPLOTLIB, drawn_by_this_matplotlib

from attention_from_scratch.__main__ import main
from attention_from_scratch.course import examples, plots, results
from attention_from_scratch.course.plots.heatmaps import plot_attention_weights

STORED_FIGURES = [name for name in plots.FIGURES if name.startswith(("21_selected", "21_recall", "13_"))]


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


# the code of the notebooks' cells that show a figure (notebooks/*.ipynb, which nbval runs; notebooks/zh holds the
# same code): nbval runs each again, and matplotlib draws what it shows
NOTEBOOK_CODE = "\n".join(bt.cell_source(cell) for path in sorted(COMMITTED.parent.glob("notebooks/*.ipynb"))
                          for cell in bt.load(path)["cells"] if cell["cell_type"] == "code"
                          and any("image/png" in out.get("data", {}) for out in cell["outputs"]))


def _drawn_by_a_notebook(make) -> bool:
    """Whether a notebook cell that shows a figure calls this figure's function (by name): nbval then draws it."""
    name = getattr(make, "__name__", "<lambda>")
    return name.isidentifier() and re.search(rf"(?<![\w.]){name}\(", NOTEBOOK_CODE) is not None


# what the figures command writes here: the figures no notebook draws, those drawn from stored results, and the two
# that tests below draw again
WRITTEN = [name for name, make in plots.FIGURES.items()
           if not _drawn_by_a_notebook(make) or name in STORED_FIGURES
           or name in ("05_kernel_regression.png", "17_mla_singular_values.png")]


def _no_training(*args, **kwargs):
    raise AssertionError("the figures command must draw stored results, not train")


def _replace_trainings(mp: pytest.MonkeyPatch) -> None:
    """Every training the figures could start, replaced by a failure."""
    from attention_from_scratch.model import emergence, training

    for module, name in ((training, "fit"), (training, "train"), (emergence, "train_watching_heads"),
                         (examples, "indexer_example")):
        mp.setattr(module, name, _no_training)


def test_every_other_figure_is_built_without_training(monkeypatch):
    """The figures the command does not write here (``written`` builds those the same way)."""
    import matplotlib.pyplot as plt

    _replace_trainings(monkeypatch)
    for name, make in plots.FIGURES.items():
        if name in WRITTEN:
            continue
        fig = make()
        assert isinstance(fig, matplotlib.figure.Figure), f"{name}: {type(fig)}"
        assert fig.axes, f"{name} has no axes"
        plt.close(fig)


def test_the_notebooks_draw_the_figures_this_file_does_not_write():
    drawn = [name for name, make in plots.FIGURES.items() if _drawn_by_a_notebook(make)]
    assert len(drawn) > len(plots.FIGURES) / 2, f"the notebooks draw only {drawn}: is NOTEBOOK_CODE read?"
    assert _drawn_by_a_notebook(plots.FIGURES["03_variance_vs_dk.png"])  # notebook 03: plot_variance_vs_dk()
    assert not _drawn_by_a_notebook(lambda: None)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The ``WRITTEN`` figures, rendered once by the figures command (its list cut to them), with every training
    replaced by a failure."""
    out = tmp_path_factory.mktemp("figures")
    with pytest.MonkeyPatch.context() as mp:
        _replace_trainings(mp)
        mp.setattr(plots, "FIGURES", {name: plots.FIGURES[name] for name in WRITTEN})
        assert main(["figures", "--out", str(out)]) == 0
    return out


def test_figures_command_writes_each_listed_figure(written):
    assert len(WRITTEN) >= 12, f"the command is checked on {WRITTEN} only"
    assert {p.name for p in written.iterdir()} == set(WRITTEN)
    for name in WRITTEN:
        data = (written / name).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n"), f"{name} is not a PNG"
        assert len(data) > 5_000, f"{name} is suspiciously small ({len(data)} bytes)"


@pytest.mark.skipif(not drawn_by_this_matplotlib(),
                    reason=f"the committed figures were drawn by matplotlib {FIGURES_MATPLOTLIB}, "
                           f"this is {matplotlib.__version__}")
def test_figures_of_trainings_are_the_committed_ones(written):
    """Drawn from stored results, they do not depend on this machine's BLAS: the committed bytes, exactly."""
    assert len(STORED_FIGURES) == 8
    changed = [name for name in STORED_FIGURES if _digest(written / name) != _digest(COMMITTED / name)]
    assert not changed, f"figures that differ from figures/ (run the figures command and commit): {changed}"


def test_saving_a_figure_twice_writes_the_same_bytes(written, tmp_path):
    name = "05_kernel_regression.png"  # drawn a second time here: the command's copy is the first
    again = plots.save_figure(plots.FIGURES[name](), tmp_path / name)
    assert again.read_bytes() == (written / name).read_bytes()  # no timestamp in the PNG metadata


def test_stored_results_hold_what_the_figures_draw():
    capstone, indexer = results.load("capstone"), results.load("indexer")
    assert set(capstone) == {"induction", "scale", "causal", "flash", "exercises"}
    assert len(capstone["flash"]["flash"]) == len(capstone["flash"]["sdpa"]) == 250  # the whole run, both kernels
    assert set(capstone["exercises"]) == {"learned_positions", "one_layer", "one_layer_long", "reversal"}  # notebook 13
    assert len(capstone["induction"]["loss"]) == 600 and capstone["induction"]["loss"][-1] < capstone["induction"][
        "loss"][0] / 2  # the induction run learns
    assert np.asarray(indexer["target"]).shape == (32, 32)
    assert indexer["trained"]["recall"] > indexer["random"]["recall"]  # training the indexer helps
    assert all(r <= 1 + 1e-12 for rs in indexer["recalls"].values() for r in rs)


def test_figures_are_the_union_of_the_parts():
    parts = [importlib.import_module(f"attention_from_scratch.course.plots.{name}") for name in plots.PARTS]
    names = [name for part in parts for name in part.FIGURES]
    assert len(names) == len(set(names)) == len(plots.FIGURES)
    assert set(names) == set(plots.FIGURES)
    # the notebooks 01-08 refer to these files by name
    scores, attention = (importlib.import_module(f"attention_from_scratch.course.plots.{m}") for m in ("scores",
                                                                                                       "attention"))
    for name in ["01_dot_product_geometry.png", "03_softmax_sharpness.png", "06_cat_eats_fish_weights.png",
                 "07_causal_mask.png", "08_mha_heads.png"]:
        assert name in scores.FIGURES or name in attention.FIGURES


def test_two_parts_registering_one_file_is_refused(monkeypatch):
    monkeypatch.setattr(importlib.import_module("attention_from_scratch.course.plots.inference"), "FIGURES",
                        {"01_dot_product_geometry.png": None})
    with pytest.raises(ValueError, match=r"01_dot_product_geometry\.png"):
        plots._collect(("scores", "inference"))


def test_attention_heatmap_shows_the_weights():
    w = np.array([[0.25, 0.75], [1.0, 0.0]])
    fig = plot_attention_weights(w, ["a", "b"])
    ax = fig.axes[0]
    texts = sorted(t.get_text() for t in ax.texts)
    assert texts == ["0.00", "0.25", "0.75", "1.00"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    np.testing.assert_array_equal(ax.images[0].get_array(), w)
    matplotlib.pyplot.close(fig)


def _softmax_rows(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_cat_eats_fish_weights_by_hand():
    ex = examples.CAT_EATS_FISH
    x, w_q, w_k = (np.array(ex[n]) for n in ("x", "w_q", "w_k"))
    expected = _softmax_rows((x @ w_q) @ (x @ w_k).T / np.sqrt(2))
    np.testing.assert_allclose(examples.cat_eats_fish_weights(), expected, rtol=1e-12)


def test_head_weights_match_a_loop_over_heads():
    tokens, x, w_q, w_k = examples.mha_head_example()
    weights = examples.head_weights(x[None], w_q, w_k, 2)  # (B, H, T, S)
    assert weights.shape == (1, 2, len(tokens), len(tokens))
    for h in range(2):
        cols = slice(8 * h, 8 * h + 8)  # head h's columns of W_Q and W_K
        expected = _softmax_rows((x @ w_q[:, cols]) @ (x @ w_k[:, cols]).T / np.sqrt(8))
        np.testing.assert_allclose(weights[0, h], expected, rtol=1e-12, atol=1e-300)
    # head 0 follows the previous token (the first token, having none, looks at itself)
    assert list(weights[0, 0].argmax(-1)) == [0, 0, 1, 2, 3]


def test_cross_attention_head0_aligns_meanings():
    weights = examples.cross_attention_weights()  # (B, H, T_dec, S_enc)
    assert weights.shape == (1, 2, 4, 3)
    assert list(weights[0, 0, 1:].argmax(-1)) == [0, 1, 2]  # cat -> māo, eats -> chī, fish -> yú
    np.testing.assert_allclose(weights[0, 0, 0], 1 / 3, rtol=1e-12)  # "the" has no counterpart


def test_additive_scores_do_not_grow_with_dk():
    small, large = examples.additive_score_stats(16), examples.additive_score_stats(1024)
    # the score is bounded by |v_a|_1 whatever d_k; the dot product's std would grow 8x (sqrt(1024/16))
    assert large[0] < 2 * small[0]
    assert 1 / 16 < large[1] < 0.3


def test_the_recommender_figure_draws_the_fit_it_is_given():
    """plot_mf_training draws a fit, it does not make one: the loss curve and the unseen ratings' points are those
    of the model passed in (a shorter fit draws its own), and the figures command's fit is notebook 24's."""
    from attention_from_scratch.course.plots.applications import plot_mf_training
    from attention_from_scratch.recommender import fit_matrix_factorization, synthetic_ratings

    model, truth, observed = examples.matrix_factorisation_example()
    ratings = synthetic_ratings(30, 20, rank=3, density=0.3, noise=0.1, seed=0)[0]
    short = fit_matrix_factorization(ratings, observed, rank=3, steps=20, seed=0)
    unseen = ~observed
    for fit in (model, short):
        fig = plot_mf_training(fit, truth, observed)
        loss, scatter = fig.axes
        np.testing.assert_array_equal(loss.lines[0].get_ydata(), fit.losses)
        np.testing.assert_array_equal(scatter.collections[0].get_offsets(),
                                      np.stack([truth[unseen], fit.predict()[unseen]], axis=1))
        matplotlib.pyplot.close(fig)
    # notebook 24 prints its fit's losses at these steps: the figure's fit is that one
    notebook = bt.load(COMMITTED.parent / "notebooks" / "24_applications.ipynb")
    printed = re.findall(r"step +(\d+): training loss ([\d.]+)", "".join(
        "".join(out.get("text", "")) for cell in notebook["cells"] if cell["cell_type"] == "code"
        for out in cell["outputs"]))
    assert len(printed) == 5, printed
    for step, value in printed:
        assert f"{model.losses[int(step)]:.4f}" == value


def test_mla_singular_values_do_not_depend_on_blas_rounding(written, tmp_path, monkeypatch):
    # another BLAS (or thread count) rounds the product W_UK W_DKV and the SVD differently: singular
    # values change by ~1e-16 of the largest, which moves the rank-deficient tail (all rounding noise)
    # by orders of magnitude on a log axis. Simulate that and require the same PNG bytes.
    from attention_from_scratch.course.plots import inference

    plain = (written / "17_mla_singular_values.png").read_bytes()  # the figures command's render, this BLAS
    svd, rng = np.linalg.svd, np.random.default_rng(0)

    def other_blas(w, compute_uv=True):
        sv = svd(w, compute_uv=compute_uv)
        noise = rng.uniform(0.1, 30.0, sv.shape) * np.finfo(sv.dtype).eps * sv[0]  # rounding-sized changes
        return sv * (1 + rng.uniform(-4, 4, sv.shape) * np.finfo(sv.dtype).eps) + noise

    monkeypatch.setattr(np.linalg, "svd", other_blas)
    moved = plots.save_figure(inference.plot_mla_singular_values(), tmp_path / "moved.png").read_bytes()
    assert moved == plain
