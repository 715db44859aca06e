"""The computed results that the course's figures draw, and the stored copies the ``figures`` command reads.

A training's numbers depend on the BLAS build that rounds its matmuls (OpenBLAS's Haswell and SkylakeX
kernels differ in the last bits, and hundreds of steps carry that into the curves), so a figure drawn
from a fresh training could change a committed PNG on another machine. The figures of notebook 21 (a
trained indexer), notebook 13 (the capstone's trainings) and of the learning notebooks (the runs of
``learning_demos``, notebook 12's layer training) are therefore drawn from results computed
once, with fixed seeds, by ``python tools/store_results.py`` and stored as JSON in ``course/data/``
(float64 values written exactly): ``python -m attention_from_scratch figures`` reads them and trains
nothing, so it writes the same bytes on any BLAS. The notebooks train for real and pass their own
runs to the same plot functions, which only draw (:mod:`.plots`).

Each ``*_results()`` function computes one stored file's content from the package's functions;
:func:`load` reads a stored file.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np

__all__ = [
    "DATA",
    "STORED",
    "capstone_results",
    "causal_accuracies",
    "indexer_recalls",
    "indexer_results",
    "learned_heads",
    "learning_results",
    "load",
]

DATA = Path(__file__).with_name("data")


@cache
def load(name: str) -> dict:
    """The stored results ``course/data/<name>.json`` (written by ``tools/store_results.py``)."""
    return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))


# --- notebook 21: the lightning indexer, random and trained --------------------------------------


def _index_scores(layer, x):
    return layer.index_scores(x, layer.query_latent(x), layer.index_keys(x, 0))  # (B, T, S)


def _oracle_scores(target):
    t = target.shape[-1]
    return np.where(np.tril(np.ones((t, t), dtype=bool)), target, -np.inf)  # the dense weights themselves


def indexer_recalls(ks=None) -> dict:
    """Held-out recall of the dense attention mass at each k: random indexer, trained one, the best possible."""
    from ..sparse_training import attention_mass_recall
    from .examples import RECALL_KS, indexer_example

    ex = indexer_example()
    x, target = ex["held_out"], ex["target"]
    scores = {"random": _index_scores(ex["random"], x), "trained": _index_scores(ex["trained"], x),
              "oracle": _oracle_scores(target)}
    return {name: [attention_mass_recall(s, target, k) for k in (ks or RECALL_KS)] for name, s in scores.items()}


def indexer_results(k: int = 8, sequence: int = 0) -> dict:
    """What notebook 21's figures draw: one held-out sequence's dense weights, each indexer's top-``k`` keys
    on it and their recall, and the recall against k (:func:`indexer_recalls`)."""
    from ..sparse import topk_mask
    from ..sparse_training import attention_mass_recall
    from .examples import indexer_example

    ex = indexer_example()
    x, target = ex["held_out"], ex["target"]
    out = {"k": k, "sequence": sequence, "target": np.asarray(target[sequence]).tolist(), "recalls": indexer_recalls()}
    for name in ("random", "trained"):
        scores = _index_scores(ex[name], x)[sequence : sequence + 1]  # (1, T, T)
        out[name] = {"mask": np.asarray(topk_mask(scores, k)[0]).astype(int).tolist(),
                     "recall": attention_mass_recall(scores, target[sequence : sequence + 1], k)}
    return out


# --- notebook 13: the capstone's trainings --------------------------------------------------------


def learned_heads(model, tokens, length) -> dict:
    """The trained model's best previous-token and induction heads on ``tokens`` (their maps and scores)."""
    from ..model.tasks import strongest_heads

    (l_p, h_p, s_p), (l_i, h_i, s_i), maps = strongest_heads(model, tokens, length)
    return {"labels": [str(int(t)) for t in np.asarray(tokens)[0]], "length": length,
            "previous_token": {"layer": l_p, "head": h_p, "score": s_p, "map": np.asarray(maps[l_p][0, h_p]).tolist()},
            "induction": {"layer": l_i, "head": h_i, "score": s_i, "map": np.asarray(maps[l_i][0, h_i]).tolist()}}


def causal_accuracies(runs, task) -> dict:
    """Accuracy on the predictable half, scored on the true sequence and generated, with and without the mask."""
    from ..model.tasks import evaluate

    return {str(causal): [evaluate(runs[causal][0], task, generate=g) for g in (False, True)] for causal in runs}


def capstone_results() -> dict:
    """Every number notebook 13's figures draw, from the recipes of :data:`..model.training.RECIPES` (seeded)."""
    from ..model.emergence import train_watching_heads
    from ..model.training import RECIPES, SCALE_LRS, SCALE_SEEDS, fit

    runs = {}

    def run(name):
        if name not in runs:
            runs[name] = fit(**RECIPES[name])
        return runs[name]

    task = RECIPES["induction"]["task"]
    model, history, trace = train_watching_heads(RECIPES["induction"])
    low, high = task.lengths
    induction = {"loss": history.loss, "vocab_size": task.vocab_size,
                 "floor": float(np.mean([task.loss_floor(n) for n in range(low, high + 1)])),
                 "trace": {which: [list(v) for v in trace.best(which)] for which in ("previous_token", "induction")},
                 "onset": trace.onset("induction", 0.5),
                 "heads": learned_heads(model, task.sample(np.random.default_rng(7), 1, 8)[0], 8)}
    sweep = {s: {lr: run(f"scale_{s}_lr{lr:g}_0")[1].final() for lr in SCALE_LRS} for s in (True, False)}
    lrs = {s: min(SCALE_LRS, key=sweep[s].get) for s in (True, False)}
    scale = {"lrs": {str(s): lrs[s] for s in lrs}, "d_k": RECIPES[f"scale_True_lr{SCALE_LRS[0]:g}_0"]["config"].d_k,
             "sweep": {str(s): {f"{lr:g}": sweep[s][lr] for lr in SCALE_LRS} for s in sweep},  # seed 0's final loss
             "runs": {str(s): [run(f"scale_{s}_lr{lrs[s]:g}_{seed}")[1].loss for seed in SCALE_SEEDS] for s in lrs}}
    copy_task = RECIPES["copy"]["task"]
    causal_runs = {True: run("copy"), False: run("no_mask")}
    causal = {"loss": {str(c): r[1].loss for c, r in causal_runs.items()},
              "floor": copy_task.loss_floor(copy_task.length), "accuracy": causal_accuracies(causal_runs, copy_task)}
    # the whole 250-step run with flash (the notebook trains only RECIPES["flash"]'s first 20 steps live)
    flash_full = fit(**(RECIPES["flash"] | {"steps": RECIPES["copy"]["steps"]}))[1]
    flash = {"sdpa": run("copy")[1].loss, "flash": flash_full.loss}
    return {"induction": induction, "scale": scale, "causal": causal, "flash": flash, "exercises": exercise_results()}


LONG_ONE_LAYER = 8  # exercise 2's longer run: this many times the induction recipe's steps


def exercise_results() -> dict:
    """Notebook 13's three exercises, run as their worked solutions say: what the solutions quote and assert."""
    import dataclasses

    from ..model.tasks import ReversalTask, evaluate, induction_score, previous_token_score
    from ..model.training import RECIPES, fit

    def scores(model, task, length, rows_cols=None):
        maps = model.attention_weights(task.sample(np.random.default_rng(7), 256, length)[0])  # [(B, H, T, T)]
        out = {"previous_token": [previous_token_score(w).mean(0).tolist() for w in maps]}
        if rows_cols is None:
            out["induction"] = [induction_score(w, length).mean(0).tolist() for w in maps]
        else:  # reversal: query L + j on key L - 1 - j, j = 0..L-1
            rows, cols = rows_cols
            out["reversal"] = [w[..., rows, cols].mean(-1).mean(0).tolist() for w in maps]
        return out

    copy, induction = RECIPES["copy"], RECIPES["induction"]
    learned_model, learned = fit(**(copy | {"config": dataclasses.replace(copy["config"], positions="learned")}))
    one_layer = induction | {"config": dataclasses.replace(induction["config"], n_layers=1)}
    one_model, one = fit(**one_layer)
    # the same one-layer model trained LONG_ONE_LAYER times as many steps: "cannot" or "not yet"?
    long_model, long = fit(**(one_layer | {"steps": LONG_ONE_LAYER * induction["steps"]}))
    reversal_task = ReversalTask(16, 6)
    rev_model, rev = fit(**(induction | {"task": reversal_task}))
    length = reversal_task.length
    rows = np.arange(length, 2 * length)
    runs = (("learned_positions", learned_model, learned, copy["task"]),
            ("one_layer", one_model, one, induction["task"]),
            ("one_layer_long", long_model, long, induction["task"]),
            ("reversal", rev_model, rev, reversal_task))
    result = {name: {"final_loss": history.final(), "accuracy": [evaluate(m, task), evaluate(m, task, generate=True)]}
              for name, m, history, task in runs}
    result["learned_positions"] |= scores(learned_model, copy["task"], copy["task"].length)
    result["reversal"] |= scores(rev_model, reversal_task, length, (rows, length - 1 - (rows - length)))
    return result


def learning_results() -> dict:
    """The runs of the learning and Transformer-block notebooks and of notebook 12's layer training."""
    from .learning_demos import learning_results as runs

    return runs()


STORED = {"capstone": capstone_results, "indexer": indexer_results,  # file name -> the function that computes it
          "learning": learning_results}
