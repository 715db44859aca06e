#!/usr/bin/env python3
"""Insert the "Write it yourself" coding exercises into the course notebooks (issue 11).

Usage:  python tools/insert_exercises.py [REPO_ROOT]     (default: the current directory)

For each exercise notebook it removes the cells it inserted before (tag ``write-it-yourself``), then
inserts a "Write it yourself" section right before the first markdown cell with a line starting with
"## Recap" (if that line is not the first of its cell, the cell is split there). Each exercise gets: a
markdown task, a stub code cell (``raise NotImplementedError``), a check cell, and a collapsed worked
solution (markdown, tags ``solution`` and ``exercise-<name>``) rendered from
``tests/exercise_solutions.py``. Idempotent: a cell whose source is unchanged keeps its stored outputs,
and a notebook whose cells did not change is not rewritten. Fails loudly when a notebook or its anchor
is missing. Afterwards re-execute the changed notebooks (the stub cells need fresh outputs).
"""

from __future__ import annotations

import copy
import importlib.util
import inspect
import sys
from pathlib import Path

import nbformat

TAG = "write-it-yourself"

# notebook -> section title, then the exercises in it: (name, task markdown, stub source)
EXERCISES = {
    "04_softmax": ("a stable softmax", [
        ("softmax", """Write `my_softmax(x)`: the softmax over the **last axis** of `x` (shape `(..., n)`), one
distribution per row, that does not overflow on huge scores. Use NumPy only (not `afs.softmax`). The
checker below compares it with the package's `softmax` on rows with batch dimensions, float32 and float64,
huge scores, `-inf` entries (in rows with at least one finite score) and a single score, and tells you what
went wrong on the first case that fails.""",
         '''def my_softmax(x):
    """Softmax over the last axis of x (..., n); each row sums to 1, even for huge scores."""
    raise NotImplementedError  # delete this line and write your code'''),
    ]),
    "05_scaled_dot_product_attention": ("scaled dot-product attention", [
        ("attention", """Write `my_attention(q, k, v, mask=None)` returning `(out, weights)`:
$\\mathrm{softmax}(QK^\\top/\\sqrt{d_k})\\,V$ for `q` `(..., T, d_k)`, `k` `(..., S, d_k)`, `v` `(..., S, d_v)`,
with any leading batch/head dimensions. `mask` (boolean, `True` = may attend) blocks scores with $-\\infty$;
a query that may attend to **no** key gets weights 0 and output 0 (never `nan`). Keep float32 inputs
float32. The checker tries T ≠ S, batch and head dimensions, a mask, a fully masked row, large scores and
a single token.""",
         '''def my_attention(q, k, v, mask=None):
    """(out, weights) = (softmax(q kᵀ / √d_k) v, softmax(q kᵀ / √d_k)); mask: True = may attend."""
    raise NotImplementedError  # delete this line and write your code'''),
    ]),
    "06_masking": ("the causal mask, bottom-right aligned", [
        ("causal_mask", """Write `my_causal_mask(n_q, n_k)`: a boolean `(n_q, n_k)` array, `True` = may attend,
for `n_q` new queries that are the **last** `n_q` of the `n_k` keys (decoding against a cache): query $i$ sits at
position $n_k - n_q + i$ and may see every key up to and including that position. The checker tries
square masks, one new token against a long cache, and more queries than keys.""",
         '''def my_causal_mask(n_q, n_k):
    """Boolean (n_q, n_k): True where key j is not in the future of query i (bottom-right aligned)."""
    raise NotImplementedError  # delete this line and write your code'''),
    ]),
    "07_multi_head_attention": ("split and merge heads", [
        ("split_heads", """Write `my_split_heads(x, n_heads)`: `(B, T, d_model)` → `(B, H, T, d_k)` with
$d_k = d_{model}/H$, head $h$ taking features $h\\,d_k \\ldots (h+1)\\,d_k - 1$ of every token.""",
         '''def my_split_heads(x, n_heads):
    """(B, T, d_model) -> (B, H, T, d_k), d_k = d_model / H."""
    raise NotImplementedError  # delete this line and write your code'''),
        ("merge_heads", """Then its inverse, `my_merge_heads(x)`: `(B, H, T, d_k)` → `(B, T, H·d_k)`, the heads
concatenated token by token (what goes into $W_O$).""",
         '''def my_merge_heads(x):
    """(B, H, T, d_k) -> (B, T, H·d_k): the inverse of my_split_heads."""
    raise NotImplementedError  # delete this line and write your code'''),
    ]),
    "08_kv_cache": ("one decoding step with a KV cache", [
        ("kv_decode_step", """Write `my_decode_step(q, k_new, v_new, k_cache, v_cache)` for one new token: append
its key and value to the cache, then let its query attend (scaled dot-product, no mask) over **all** cached tokens.
Shapes: `q`, `k_new` `(B, H, 1, d_k)`, `v_new` `(B, H, 1, d_v)`, `k_cache` `(B, H, S, d_k)`, `v_cache`
`(B, H, S, d_v)`. Return `(out, k_cache, v_cache)`, `out` `(B, H, 1, d_v)` and the caches grown to $S+1$
tokens. The checker also starts from an empty cache ($S = 0$), and has a float32 case: keep float32 inputs
float32 (divide by `d_k ** 0.5`; `np.sqrt(d_k)` is a float64 and turns the scores float64).""",
         '''def my_decode_step(q, k_new, v_new, k_cache, v_cache):
    """Append the new key/value to the cache, attend over it; return (out, k_cache, v_cache)."""
    raise NotImplementedError  # delete this line and write your code'''),
    ]),
    "09_rope": ("the RoPE rotation", [
        ("rope", """Write `my_rope(x, positions)`: rotate each consecutive pair $(x_{2i}, x_{2i+1})$ of the last axis
of `x` `(..., T, d)` by the angle $m\\,\\theta_i$, $\\theta_i = 10000^{-2i/d}$, where $m$ = `positions[t]`
is the position of token `t` (an integer array of length T). Keep float32 inputs float32. The checker
compares with `apply_rope`.""",
         '''def my_rope(x, positions):
    """Rotate pairs (x_2i, x_2i+1) of x (..., T, d) by positions[t] * 10000^(-2i/d)."""
    raise NotImplementedError  # delete this line and write your code'''),
    ]),
    "10_mla": ("the absorbed MLA score", [
        ("mla_absorbed_scores", """Write `my_absorbed_scores(q_nope, q_pe, c_kv, k_pe, w_uk)`: the MLA scores
$q^C_h\\cdot(W_{UK,h}\\,c_s) + q^R_h\\cdot k^R_s$ (unscaled) **without** rebuilding the keys: fold $W_{UK}$
into the query instead. Shapes: `q_nope` `(B, H, T, d_h)`, `q_pe` `(B, H, T, d_r)`, `c_kv` `(B, S, d_c)`,
`k_pe` `(B, S, d_r)` (one per token, shared by the heads), `w_uk` `(H, d_h, d_c)`; return `(B, H, T, S)`.
The checker compares with the naive form (keys rebuilt).""",
         '''def my_absorbed_scores(q_nope, q_pe, c_kv, k_pe, w_uk):
    """MLA scores (B, H, T, S) with W_UK absorbed into the query, plus the RoPE part."""
    raise NotImplementedError  # delete this line and write your code'''),
    ]),
    "11_flash_attention": ("the online-softmax merge", [
        ("online_softmax_merge", """Write `my_merge(a, b)`: merge the online-softmax states `a = (m_a, l_a, acc_a)` and
`b = (m_b, l_b, acc_b)` of two disjoint blocks of keys into the state of their union (`m`, `l` `(..., T, 1)`,
`acc` `(..., T, d_v)`). An empty block (fully masked: `m = -inf`, `l = 0`, `acc = 0`) must change nothing,
even when both are empty. The checker compares with `online_softmax_merge`, also on huge scores.""",
         '''def my_merge(a, b):
    """Merge states (m, l, acc) of two disjoint key blocks into the state of their union."""
    raise NotImplementedError  # delete this line and write your code'''),
    ]),
    "12_applications": ("the InfoNCE loss", [
        ("info_nce", """Write `my_info_nce(q, k, temperature)`: the InfoNCE loss of $N$ pairs, `q` and `k`
`(N, d)`, row $i$ of `k` the positive for row $i$ of `q` and the other rows its negatives:
$L = \\frac1N\\sum_i\\big[\\log\\sum_j e^{q_i\\cdot k_j/\\tau} - q_i\\cdot k_i/\\tau\\big]$. It must not
overflow for a small $\\tau$. The checker compares with `info_nce`.""",
         '''def my_info_nce(q, k, temperature):
    """Mean over i of logsumexp_j(q_i·k_j / τ) − q_i·k_i / τ, for q, k (N, d)."""
    raise NotImplementedError  # delete this line and write your code'''),
    ]),
}

INTRO = """## Write it yourself: {title}

Fill in the function below, in plain NumPy (it raises `NotImplementedError` until you do), then run the
check cell: it runs your function on a battery of cases against the package's own function and reports
the first case that fails in plain words, with a hint when the mistake is a common one."""


def _solutions(root: Path):
    spec = importlib.util.spec_from_file_location("exercise_solutions", root / "tests" / "exercise_solutions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SOLUTIONS


def _cell(kind, source, cell_id, tags):
    make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
    cell = make(source)
    cell["id"] = cell_id
    cell["metadata"] = {"tags": tags}
    return cell


def _new_cells(stem, solutions):
    title, items = EXERCISES[stem]
    cells = []
    for n, (name, task, stub) in enumerate(items):
        tags = [TAG, f"exercise-{name}"]
        fn = solutions[name]
        head = INTRO.format(title=title) + "\n\n" if n == 0 else ""
        imports = "import numpy as np\n\nfrom attention_from_scratch import exercises\n\n\n" if n == 0 else ""
        cells += [
            _cell("markdown", head + task, f"ex-{name}-task", tags),
            _cell("code", imports + stub, f"ex-{name}-stub", tags),
            _cell("code", f'verdict = exercises.check("{name}", {fn.__name__})  # verdict.passed: True once all pass',
                  f"ex-{name}-check", tags),
            _cell("markdown", "<details><summary>A worked solution (try it yourself first)</summary>\n\n```python\n"
                  + inspect.getsource(fn) + "```\n\n</details>", f"ex-{name}-solution", [*tags, "solution"]),
        ]
    return cells


def _anchor(cells, path):
    """Index of the first markdown cell holding a line that starts with '## Recap'; split the cell there if needed."""
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        lines = cell["source"].splitlines(keepends=True)
        for j, line in enumerate(lines):
            if line.startswith("## Recap"):
                if j == 0:
                    return i
                before, after = "".join(lines[:j]).rstrip("\n"), "".join(lines[j:])
                recap = copy.deepcopy(cell)
                cell["source"], recap["source"] = before, after
                recap["id"] = f"{cell.get('id', i)}-recap"[:64]
                cells.insert(i + 1, recap)
                return i + 1
    raise SystemExit(f"error: {path}: no markdown cell with a line starting with '## Recap'; cannot place the exercise")


def insert(path: Path, solutions) -> bool:
    """Insert (or refresh) the exercise cells of one notebook; True if the file changed."""
    nb = nbformat.read(path, as_version=4)
    before = nbformat.writes(nb) + "\n"  # Jupyter's own files end with a newline
    old = {c.get("id"): c for c in nb.cells if TAG in c.get("metadata", {}).get("tags", [])}
    cells = [c for c in nb.cells if TAG not in c.get("metadata", {}).get("tags", [])]
    at = _anchor(cells, path)
    new = []
    for cell in _new_cells(path.stem, solutions):
        kept = old.get(cell["id"])
        same = kept is not None and kept["source"] == cell["source"] and kept["metadata"] == cell["metadata"]
        new.append(kept if same else cell)  # unchanged: keep its stored outputs
    nb.cells = cells[:at] + new + cells[at:]
    after = nbformat.writes(nb) + "\n"
    if after != before:
        nbformat.validate(nb)
        path.write_text(after, encoding="utf-8")
        return True
    return False


def main(argv):
    root = Path(argv[0] if argv else ".").resolve()
    solutions = _solutions(root)
    missing = sorted(set(solutions) - {n for _, items in EXERCISES.values() for n, _, _ in items})
    if missing:
        raise SystemExit(f"error: solutions without a notebook here: {missing}")
    for stem in EXERCISES:
        path = root / "notebooks" / f"{stem}.ipynb"
        if not path.exists():
            raise SystemExit(f"error: {path} not found")
        print(f"{path.relative_to(root)}: {'updated' if insert(path, solutions) else 'unchanged'}")


if __name__ == "__main__":
    main(sys.argv[1:])
