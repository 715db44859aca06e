"""The notation page's resolved clashes hold in the notebooks, English and Chinese.

``docs/guide/notation.md`` ("Clashes found, and how they are resolved") retires a symbol from the notebooks where it
clashed; here, each retired form appears nowhere in those notebooks' markdown (the notation notebook, whose table
quotes the old forms, aside), and KL is explained where the sparse-attention notebook first names it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
# the temperature written T: x/T, z/T, $T>0$, $T=1$, T\to0, "**temperature** $T$" (English or Chinese)
TEMPERATURE_AS_T = r"/T\b|\$T\s*[<>=]|T\\to|(?:temperature|温度)\*\* \$T\$|(?:temperature|温度) \$T\b"
RETIRED = [  # (notebooks: a stem, or None for every one; the retired form; what the page resolved)
    (None, r"\\mathrm\{LSE\}", "the log-sum-exp is written lse everywhere"),
    (None, r"\\ell_(?!i\b)", "ℓ is always the running sum (ℓ_i a row's), never a log nor a logit"),
    ("11_transformer_block", r"\\gamma", "a norm's gain and shift are g and b"),
    ("19_windows_and_sinks", r"\\sigma", "the sink's share of a row is p^sink_i; σ alone is a standard deviation"),
    ("22_deepseek_v4", r"P_\{hj\}|\b[qo]_h\b", "DeepSeek's h_t is a hidden state; V4's heads are numbered i"),
    ("08_multi_head_attention", r"head\}?_\{?1\b|\\sum_\{h=1\}", "heads count from 0, as in the code"),
    ("10_learning_from_data", r"w_\{?1\}?,\s*\\dots|\\sum_\{[ib]=1\}", "positions and tokens count from 0"),
    ("11_transformer_block", r"w_\{?1\}?,\s*\\dots|\\sum_\{[ib]=1\}", "positions and tokens count from 0"),
    ("13_training", r"w_\{?1\}?,\s*\\dots|\\sum_\{[ib]=1\}", "positions and tokens count from 0"),
    ("16_rope", r"\\theta_i\b|_\{2i\b|\[m, 2i\b|\b[Pp]air \$i\$|第 \$i\$ 对",
     "RoPE's pair index is r (θ_r, x_2r): i is a query's index, upright i the imaginary unit"),
    ("10_learning_from_data", r"\$O\$|O\^\\top|X = O|O_\{ik",
     "the one-hot rows are A (X = AE): a matrix O is attention's output"),
    ("10_learning_from_data", r"\$[mv]\$|\\hat [mv](?![_\w])|\\sqrt\{[mv]\}|\\beta\^t",
     "Adam's averages are m_t, v_t at step t (hats: bias-corrected), its decay rates β_1, β_2"),
    ("20_serving_at_scale", r"\\mathrm\{lse\}_\{?[ab]\b|\\in a\b|\bo_\{?[ab]\b",
     "a split of the keys is the set J of their indices (o_J, lse_J): a is notebook 18's output sum"),
    ("04_softmax", TEMPERATURE_AS_T, "the temperature is τ (softmax(x/τ)): T is the number of queries"),
    ("14_real_text", TEMPERATURE_AS_T, "sampling's temperature is τ (softmax(z/τ)): T is the number of queries"),
    ("18_flash_attention", r"\\varepsilon(?!_\\text\{mach\})",
     "the machine epsilon is ε_mach: ε alone is a finite difference's step (notebooks 10, 12)"),
    ("03_scaling_by_sqrt_dk", r"[Dd]ividing by a constant \$c\$|除以常数 \$c\$|[+-]c\}",
     "notebook 03's c is the scale that multiplies the scores; a constant added to them is a"),
]


def _markdown(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]


def _notebooks(stem: str | None) -> list[Path]:
    found = [p for folder in (NOTEBOOKS, NOTEBOOKS / "zh") for p in sorted(folder.glob("*.ipynb"))
             if (stem is None or p.stem == stem) and p.stem != "26_notation_and_glossary"]
    assert found, f"no notebook {stem}"
    return found


@pytest.mark.parametrize(("stem", "form", "resolution"), RETIRED, ids=[r[2] for r in RETIRED])
def test_a_retired_symbol_is_gone(stem, form, resolution):
    left = [f"{p.relative_to(NOTEBOOKS)} cell {i}" for p in _notebooks(stem) for i, text in enumerate(_markdown(p))
            if re.search(form, text)]
    assert not left, f"{resolution}, but {form} is still in {left}"


def test_kl_is_explained_where_first_named():
    for path in _notebooks("21_sparse_attention"):
        first = next(text for text in _markdown(path) if re.search(r"\bKL\b", text))
        assert "Kullback" in first, f"{path.relative_to(NOTEBOOKS)}: KL named before it is explained"

