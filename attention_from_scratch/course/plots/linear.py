"""Figures of the notebook "Attention without the softmax" (linear attention, the delta rule, Gated DeltaNet).

    linear_recall.png   associative recall vs the number of stored pairs N (softmax attention, linear
                        attention, the plain sum, the delta rule), and the overwrite experiment: the same
                        keys written again with new values -- who answers with the new one
    linear_costs.png    time of a prefill vs T (the recurrent loop, the chunked form, flash attention;
                        the stored run of ``benchmarks/bench_linear.py``) and the bytes a sequence keeps
                        vs T (Qwen3-Next's 3:1 hybrid stack vs the same stack all full attention)

The recall panels draw :func:`attention_from_scratch.recall.associative_recall` and ``overwrite_recall``
(seeded, d = 32, eight trials: a tenth of a second); the time panel draws :data:`BENCH_LINEAR`, medians
measured once and written down here (a figure that timed itself would differ on every run), the bytes
panel :func:`attention_from_scratch.cache_costs.hybrid_cache_bytes`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter

from ...cache_costs import hybrid_cache_bytes
from ...recall import associative_recall, overwrite_recall

__all__ = ["BENCH_LINEAR", "FIGURES", "plot_costs", "plot_recall"]

# benchmarks/bench_linear.py, one run (2 December 2026, a shared 2-core CPU under load, one BLAS thread):
# median seconds of a causal prefill, B = 1, H = 4, d_k = d_v = 64, float32, chunk 64
BENCH_LINEAR = {
    "T": [128, 256, 512, 1024, 2048, 4096, 8192],
    "recurrent": [0.0038, 0.0071, 0.0144, 0.0296, 0.0548, 0.1208, 0.2438],
    "chunked": [0.0016, 0.0029, 0.0050, 0.0066, 0.0131, 0.0488, 0.0962],
    "flash": [0.0008, 0.0020, 0.0054, 0.0140, 0.0356, 0.1317, 0.4826],
}

_STYLE = {"softmax": ("softmax attention (keeps all N pairs)", "C0", "o"),
          "linear": ("linear attention (φ = elu + 1)", "C3", "s"),
          "sum": ("plain sum S = Σ k vᵀ (unit keys)", "C7", "v"),
          "delta": ("delta rule (β = 1, unit keys)", "C2", "^")}


def plot_recall(recall=None, overwrite=None):
    """Two panels: recall vs N, and the share of answers nearer the newer value after an overwrite."""
    recall = associative_recall() if recall is None else recall
    overwrite = overwrite_recall() if overwrite is None else overwrite
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.5, 4.2))
    for ax, data, title, ylabel in (
        (left, recall, "Store N pairs (d = 32), ask with each key", "share answered with its own value"),
        (right, overwrite, "Write N keys, then the same keys with new values", "share nearer the NEW value"),
    ):
        for name, (label, color, marker) in _STYLE.items():
            ax.plot(data["n_pairs"], data[name], marker=marker, color=color, label=label)
        ax.set_xscale("log", base=2)
        ax.set(xlabel="N (pairs stored)", ylabel=ylabel, title=title, ylim=(-0.03, 1.05))
        ax.set_xticks(data["n_pairs"], [str(n) for n in data["n_pairs"]])
        ax.grid(alpha=0.3)
    left.axvline(32, color="0.6", ls=":", lw=1)
    left.text(33, 0.5, "N = d", color="0.4", fontsize=9)
    right.axhline(0.5, color="0.6", ls=":", lw=1)
    right.text(4, 0.53, "a coin flip", color="0.4", fontsize=9)
    # one legend for both panels, below them: inside the left panel it hid linear attention's points at N = 8-16
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8.5, loc="lower center", ncol=4, bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def plot_costs(bench=None, sizes=(256, 1024, 4096, 16384, 65536, 262144)):
    """Two panels: prefill time vs T (stored medians), and the bytes one sequence keeps vs T (log-log)."""
    bench = BENCH_LINEAR if bench is None else bench
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.5, 4.2))
    for name, label, color in (("recurrent", "delta rule, recurrent loop", "C1"),
                               ("chunked", "delta rule, chunked (C = 64)", "C2"),
                               ("flash", "softmax attention (flash, causal)", "C0")):
        left.plot(bench["T"], [s * 1e3 for s in bench[name]], marker="o", color=color, label=label)
    left.set(xscale="log", yscale="log", xlabel="T (tokens in the prompt)", ylabel="milliseconds (median)",
             title="Prefill, one stored run (a 2-core CPU): linear in T vs quadratic")
    left.set_xticks(bench["T"], [str(t) for t in bench["T"]])
    left.legend(fontsize=8.5)
    left.grid(alpha=0.3, which="both")
    rows = [hybrid_cache_bytes(context_len=t) for t in sizes]
    mib = 2.0**20  # the unit the notebook prints and quotes (MiB), ticks written out: 100, 1,000, 10,000
    states = rows[0]["linear_layers"] * rows[0]["linear_state_bytes_layer"] / mib
    right.plot(sizes, [r["full_attention_bytes"] / mib for r in rows], marker="o", color="C0",
               label="48 layers, all full attention")
    right.plot(sizes, [r["hybrid_bytes"] / mib for r in rows], marker="^", color="C2",
               label="Qwen3-Next: 36 Gated DeltaNet + 12 full")
    right.axhline(states, color="C2", ls=":", lw=1, label=f"the 36 fixed states alone ({states:.0f} MiB)")
    right.set(xscale="log", yscale="log", xlabel="T (tokens in the context)", ylabel="MiB per sequence",
              title="Cache bytes per sequence (BF16 KV, float32 states)")
    right.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:,.0f}"))
    right.set_xticks(list(sizes), [f"{t // 1024}k" if t >= 1024 else str(t) for t in sizes])
    right.legend(fontsize=8.5)
    right.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


FIGURES = {"linear_recall.png": plot_recall, "linear_costs.png": plot_costs}
