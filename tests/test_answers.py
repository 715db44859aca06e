"""The end-of-notebook short answers: each expected value against an independent computation, the checker's
replies, and the notebooks' check cells, which name their exercise and show neither answer nor formula."""

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from attention_from_scratch.course import answers
from attention_from_scratch.course.answers import check_answer

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
# every notebook with short answers: the numbered ones ("08.1") and notebooks/next/ ones, named by their file's stem
# ("serving_at_scale.1"), so that renumbering the course rewrites only the numbered keys
ALL_NOTEBOOKS = sorted(NOTEBOOKS.glob("*.ipynb")) + sorted(NOTEBOOKS.glob("next/*.ipynb"))
KEY = r"(?:\d\d|[a-z][a-z_]*)\.\d"  # "08.1", "serving_at_scale.1"


def _notebook_of(key, path):
    """Whether exercise ``key`` belongs to notebook ``path``: its number, or (notebooks/next/) its stem."""
    prefix = key.rsplit(".", 1)[0]
    return prefix == (path.stem[:2] if path.parent == NOTEBOOKS else path.stem)
E = math.exp

# each value by hand (the closed forms of the notebooks' collapsed solutions) or by plain NumPy
INDEPENDENT = {
    "00.1": 1,  # scores 0, 2/√2, 1.4/√2 for the query (0, 2): book 1 (history) scores highest
    "00.2": E(1.4 / 2**0.5) / (2 * E(1 / 2**0.5) + E(1.4 / 2**0.5)),
    "00.3": 1 / 3,
    "01.1": 1 * 3 - 1 * 4 + 2 * 0,
    "01.2": 45.0,
    "01.3": 1.0,  # 6 - 6x = 0
    "02.1": -1.0,
    "02.2": 3**0.5,  # |a - b|² = 2 - 2 cos 120° = 3
    "02.3": 128_000_000,
    "03.1": 64 * 2 * 2,
    "03.2": E(6) / (E(2) + E(4) + E(6)),
    "03.3": 1 / 16,
    "04.1": 3 / 4,
    "04.2": math.log(4),
    "04.3": 1 / (2 * E(1) + 1),
    "05.1": 1 / 7,  # keys 0..6, equal scores 0
    "06.1": E(1 / 8**0.5) / (2 + E(1 / 8**0.5)),
    "06.2": E(4 / 2**0.5) / (E(4 / 2**0.5) + 1 + E(2 / 2**0.5)),
    "06.3": 5 * 7,
    "07.1": 1 + 2 + 3 + 4 + 5,
    "07.2": 10 - 3 + 1,
    "07.3": (1 + 2 + 2 + 2) + (1 + 2 + 3 + 4),
    "08.1": 80,
    "08.2": (7, 5),
    "08.3": 32 / 8,
    "15.1": 8 * (128 + 128) * 80 * 2,
    "15.2": 8 + 1,
    "15.3": 2**30 / (61 * (512 + 64) * 2),
    "16.1": 2 * math.pi / 10000 ** (-62 / 64),
    "16.2": 0.0,
    "17.1": (4 * (8 + 4)) * 64,
    "17.2": (64 * 16 * (32 + 32) + 16 * (48 + 32)) / (16 * (32 + 32)),
    "17.3": 5,  # token 0 attends to itself alone under the causal mask
    "21.1": 61 * (65536 * (128 + 4) + 2048 * 1152),  # every FP8 indexer key + its scale, 2048 BF16 latents
    "21.2": 2048 * 1152 // (1152 - 132) + 1,  # S · 132 + 2048 · 1152 < S · 1152 (and S > 2048)
    "18.1": 1 + E(-5.5),
    "18.2": 8192,  # 32 · n² · 4 <= 2^33
    "18.3": 128 * 128 * 4,
    "18.4": 0.0,
    "19.1": 32 * (4096 - 1),  # W - 1 positions back per layer
    "19.2": 2 + (21 - 2) % 4,  # n_sinks + (p - n_sinks) mod W
    "19.3": E(1) / (E(1) + E(1) + E(2) + E(0.5) + E(-1)),  # the sink's exponential over all five
    "24.3": 3,  # the ratings were made with rank 3
    "09.1": 1 / (1 + E(0.1) + E(0.2)),
    "25.1": 4.0,
    "10.1": 3 / 28,  # L(w) = mean((w s - y)²) has curvature c = 2 (1 + 4 + 9) / 3 = 28/3; one step lands when η c = 1
    "10.2": 0.0,  # dE = Aᵀ dZ, and that token's column of A is all zeros
    "10.3": 1 + max(range(100), key=lambda i: (1 - 0.9 ** (i + 1)) / (1 - 0.999 ** (i + 1)) ** 0.5),  # t = 12
    "11.1": 4 * 512 * 512 + 2 * 512 * 2048 + 2 * 512,
    "11.2": 0.0,  # no positions, no mask: attention is permutation-equivariant
    "11.3": 3 / ((9 + 16) / 2) ** 0.5,
    "12.1": 2,  # J = diag(y) − y yᵀ has rank n − 1 = 2: J 1 = 0
    "12.2": 8.0,  # √64: dQ = scale · dS K
    "12.3": 96,  # 16 sequences × 6 positions
    "12.4": 67_108_864,  # n² d = 1024² · 64 multiply-adds for the recomputed Q Kᵀ
    "25.2": 2.5,
    "26.1": 0.5 * math.log(25 / 9),  # 0.5 log(5/9) + 0.5 log(5): the two terms combined
    "25.4": 5,
    # one request of each length 1..4096 in blocks of 16: Σ 16·ceil(n/16) = 16 · 16 · (1 + … + 256) slots
    "20.1": 1 - (4096 * 4097 / 2) / (16 * 16 * 256 * 257 / 2),
    "20.2": 2 * 16 / (16 + 1),  # device r computes r + 1 blocks: N against (N + 1) / 2
    # static: 6 steps, then four one-step batches; continuous: request 0's 6 steps beside 2 slots for the other 12
    "20.3": (6 + 4 * 1) - max(6, math.ceil(12 / 2)),
}


def _rotate(x, positions):
    """RoPE on consecutive pairs with explicit 2x2 rotation matrices."""
    d = x.shape[-1]
    out = np.empty_like(x)
    for t, m in enumerate(positions):
        for i in range(d // 2):
            a = m * 10000.0 ** (-2 * i / d)
            c, s = math.cos(a), math.sin(a)
            a0, a1 = x[t, 2 * i], x[t, 2 * i + 1]
            out[t, 2 * i], out[t, 2 * i + 1] = c * a0 - s * a1, s * a0 + c * a1
    return out


def _by_numpy(key):
    from attention_from_scratch.infra.backend import random_normal

    if key == "16.3":
        d_c, d_h, s, d_r = 16, 8, 6, 4
        w_uk = random_normal((d_c, d_h), seed=5, scale=d_c**-0.5)
        latents = random_normal((s, d_c), seed=6)
        q_c, q_r = random_normal((d_h,), seed=8), random_normal((d_r,), seed=9)
        k_r = random_normal((s, d_r), seed=10)
        q_rot = _rotate(q_r[None, :], [5])[0]
        scores = lambda pos: (latents @ w_uk) @ q_c + _rotate(k_r, pos) @ q_rot  # noqa: E731 (keys rebuilt)
        return float(np.abs(scores([3, 0, 5, 1, 4, 2]) - scores(range(6))).max())
    if key in ("05.2", "05.3"):  # a softmax over the 40 training points, term by term, shifted by the largest score
        from attention_from_scratch.course.examples import kernel_regression_data

        x_train, y_train = kernel_regression_data()
        if key == "05.2":
            s = [-((50.0 - xi) ** 2) / (2 * 0.4**2) for xi in x_train]
        else:
            s = [-abs(2.5 - xi) / 0.4 for xi in x_train]
        e = [math.exp(si - max(s)) for si in s]
        w = [ei / sum(e) for ei in e]
        return sum(wi * yi for wi, yi in zip(w, y_train, strict=True)) if key == "05.2" else max(w)
    if key == "24.2":
        rng = np.random.default_rng(0)
        x = rng.standard_normal((8, 16))
        q, k = (x + 0.5 * rng.standard_normal((8, 16)) for _ in range(2))
        q, k = q / np.linalg.norm(q, axis=1, keepdims=True), k / np.linalg.norm(k, axis=1, keepdims=True)
        logits = q @ k.T / 0.01
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        return float(np.linalg.norm((p - np.eye(8)) @ k / (8 * 0.01)))
    if key == "09.2":
        x = random_normal((5, 8), seed=10)

        def leaky(z):  # blocked scores 0, by loops
            out = np.zeros_like(z)
            for i in range(5):
                s = np.array([z[i] @ z[j] / math.sqrt(8) if j <= i else 0.0 for j in range(5)])
                w = np.exp(s - s.max())
                out[i] = (w / w.sum()) @ z
            return out

        changed = x.copy()
        changed[4] -= 20.0
        return float(np.abs(leaky(changed)[:4] - leaky(x)[:4]).max())
    if key == "24.1":
        from attention_from_scratch.applications import hashed_bag_of_words
        from attention_from_scratch.course.answer_values import _CORPUS

        docs = hashed_bag_of_words(_CORPUS, dim=1024)
        question = hashed_bag_of_words(["Why do we divide attention scores by the square root of d_k?"], dim=1024)[0]
        cos = sorted((float(d @ question) / (np.linalg.norm(d) * np.linalg.norm(question)) for d in docs), reverse=True)
        return cos[1]
    raise KeyError(key)


# per exercise: (answers from a classic shortcut, which must fail; answers rounded as the question asks, which pass)
SHORTCUTS = {
    # e^x ≈ 1 + x is 0.8% off; 4 decimals of 0.300610 rounded wrongly, and 3 decimals (0.301, 0.30: "30%")
    "09.1": ([1 / (1 + 1.1 + 1.2), 0.3005, 0.3007, 0.301, 0.30], [0.3006, 0.30061]),
    # ℓ ≈ 1 (the second score's e^(−5.5) left out); 4 decimals of 1.004087 truncated (1.0040, 3 decimals too) or
    # rounded up too far, and 1.005, which rtol 1e-3 took
    "18.1": ([1.0, 1.0040, 1.0042, 1.005], [1.0041, 1.00409, 1 + E(-5.5)]),
    # 10^9 bytes for a GiB; int()'s truncation and the other neighbour of the nearest token (15279.796 -> 15280)
    "15.3": ([1e9 / (2**30 / 15279.795992714025), 15279, 15281], [15280, 15279.8]),
    "25.2": ([64e6 / 25e9 * 1e3], [2.5]),  # MB and GB instead of MiB and GiB
    # θ_31 taken as 10000^(−1); the neighbours of the nearest token (47117.243 -> 47117), 4 significant figures
    # (47120) and 47130, which rtol 1e-3 took
    "16.1": ([2 * math.pi * 10000, 47116, 47118, 47120, 47130], [47117, 47117.24]),
    # "4 decimals" of 1.090778: the wrongly rounded neighbours and 1.091 (3 decimals), which rtol 1e-3 took
    "16.3": ([1.0907, 1.0909, 1.091], [1.0908, 1.09078]),
    "24.2": ([], [1.17e-7, 1.174e-7]),  # "3 significant figures"
    # the +10 answer; 4 decimals of 2.591644 rounded wrongly, and 3 (the −20 answer is twice the +10 one: linear in v_4)
    "09.2": ([1.2958, 2.5915, 2.5917, 2.592], [2 * 1.2958, 2.5916, 2.59164]),
    # softmax([1, 2, 3]); 4 significant figures of 0.866813 rounded wrongly (0.867: 3 figures)
    "03.2": ([float(np.max(np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum())), 0.8667, 0.8669, 0.867], [0.8668, 0.86681]),
    # a measured variance (the notebook's Monte Carlo, 20,000 pairs: about 1% off, within 0.1% in one run in 14);
    # σ² · d_k
    "03.1": ([255.9, 256.2, 257.5, 128], [256, 256.0, np.float32(256), 64 * 2.0**2]),
    "03.3": ([-1 / 16, 1 / 256, 1 / 8], [0.0625, 1 / 16]),  # c < 0 (the question asks c > 0); c²; Var = 64 (σ² = 1)
    "19.2": ([21 % 6, 2 + 21 % 4, 21 % 4, 6], [5]),  # the ring without the sinks' slots; 1-based
    "26.1": ([0.9 * math.log(1.8) + 0.1 * math.log(0.2), 0.5 * math.log2(25 / 9)], [0.5108, 0.511]),  # KL(q‖p); bits
    "05.1": ([1 / 8, 1 / 6], [0.1429, 0.143, 1 / 7]),  # T keys instead of the 7 visible ones; positions from 1
    # the waste over the tokens instead of over the memory; a percentage; ceil off by one (8.5 slots per request)
    # and 4 significant figures rounded wrongly (0.00364786 -> 0.003648)
    "20.1": ([7.5 / 2048.5, 0.3648, 8.5 / 2056.5, 0.003645, 0.003647, 0.003649, 0.003650, 0.003651],
             [0.003648, 0.0036479]),
    # the limit, pairs j <= p, N = 4; 4 significant figures rounded wrongly (1.88235 -> 1.882)
    "20.2": ([2.0, 31 / 16, 1.6, 1.881, 1.883, 1.884], [1.882, 1.8824]),
    "20.3": ([10, 6, 3, 5, 4.5], [4, 4.0]),  # the static or the continuous steps instead of the saving; off by one
    # 2/c, the edge of divergence; c itself; 4 decimals rounded wrongly
    "10.1": ([2 * 3 / 28, 3 / 14, 0.2143, 28 / 3, 0.1072, 0.1070], [0.1071, 0.10714]),
    "10.3": ([1, 100], [12]),  # the bias-corrected step (the same at every t); the last step tried
    "11.1": ([4 * 512 * 512 + 2 * 512 * 2048, 4 * 512 * 512 + 2 * 512 * 2048 + 512], [3_146_752]),  # 0 or 1 norm
    # x / |x| (the sum, not the mean); LayerNorm's; no √; 4 decimals rounded wrongly (0.848528 -> 0.8485), and 3
    "11.3": ([3 / 5, 1.0, 3 / 12.5, 0.8484, 0.8486, 0.849], [0.8485, 0.84853]),
    # questions that ask a precision: the neighbours of the answer rounded as asked fail (truncation among them)
    "00.2": ([0.3987, 0.3989], [0.3988, 0.39884]),  # 4 significant figures of 0.398839
    "00.3": ([0.33, 0.333, 0.3332, 0.3334], [0.3333, 1 / 3]),  # 4 significant figures of 1/3 (0.33 is 2)
    "04.2": ([1.3862, 1.3864, 1.386], [1.3863, 1.38629]),  # 4 decimals of ln 4 = 1.386294
    "04.3": ([0.1553, 0.1555, 0.155], [0.1554, 0.15536]),  # 4 significant figures of 1/(2e + 1) = 0.155362
    "05.2": ([2.690, 2.692], [2.691, 2.6914]),  # 4 significant figures of 2.691428
    "05.3": ([0.1489, 0.1491], [0.149, 0.1490, 0.14898]),  # 4 significant figures of 0.148977
    "19.3": ([0.1830, 0.1832, 0.1833], [0.1831, 0.18315]),  # 4 significant figures of 0.183145
    "02.2": ([3.0, 1.0, 2 ** 0.5, 1.7], [1.7321, 1.732, 1.73, 3**0.5]),  # the squared distance; 60° (or |cos|); 90°
    # naive MLA's rebuilding of K and V alone (d_c H (d_h + d_v) / H (d_k + d_v) = 64, its scores and weighted sum
    # left out); 65.25 (exact) to 3 significant figures, either way, and its 4-figure neighbours
    "17.2": ([64.0, 65.2, 65.3, 65.24, 65.26], [65.25, 66816 / 1024]),
    # the score with IDF; the dot product (metric="dot"); the third score; 4 significant figures of 0.160128 rounded
    # wrongly (0.1600 is the solution's 0.160 of before, 3 figures, too)
    "24.1": ([0.076, 2.0, 0.1538, 0.1600, 0.1602], [0.1601, 0.16013]),
    "06.1": ([0.4158, 0.4160, 0.416, 0.5035], [0.4159, 0.41591]),  # 4 significant figures of 0.415908; d_k = 2's
    "06.2": ([0.7678, 0.7680, 0.768], [0.7679, 0.76792]),  # 4 significant figures of 0.767918
    # dense MLA's bytes; one layer's; the indexer keys without their 4-byte scale; V3.2's FP8 latent rows (656 B)
    # instead of BF16's; the answer in MiB (the solution's "about 641 MiB")
    "21.1": ([61 * 65536 * 1152, 65536 * 132 + 2048 * 1152, 61 * (65536 * 128 + 2048 * 1152),
              61 * (65536 * 132 + 2048 * 656), 61 * (65536 * 132 + 2048 * 1152) / 2**20, 641],
             [671_612_928, 671_612_928.0]),
    # the crossing 2048 · 1152 / 1020 itself and rounded down; the work's crossing (2,178) and the FP8 cache's bytes
    # crossing (2,564), both printed in section 6; S = k and the token after it ("from a little above S = k")
    "21.2": ([2048 * 1152 / 1020, 2313, 2178, 2564, 2048, 2049], [2314, 2314.0]),
}


@pytest.mark.parametrize("key", list(SHORTCUTS))
def test_a_shortcut_fails_and_a_rounded_answer_passes(key):
    wrong, right = SHORTCUTS[key]
    for answer in wrong:
        assert not answers.judge(key, answer).passed, (key, answer)
    for answer in right:
        assert answers.judge(key, answer).passed, (key, answer)


@pytest.mark.parametrize("key", answers.keys())
def test_expected_value_is_independently_right(key):
    want = INDEPENDENT[key] if key in INDEPENDENT else _by_numpy(key)
    got = answers.expected(key)
    if isinstance(want, tuple):
        assert tuple(got) == want
    elif key in ("10.2", "11.2", "16.2", "18.4"):  # 0 up to rounding
        assert abs(got) < 1e-12
    else:
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-15), (key, got, want)


def test_every_answer_is_checked_by_exactly_one_notebook_cell():
    seen = {}
    for path in ALL_NOTEBOOKS:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            for key in re.findall(rf'check_answer\("({KEY})"', "".join(cell["source"])):
                assert _notebook_of(key, path), (path.name, key)
                seen[key] = seen.get(key, 0) + 1
    assert seen == {key: 1 for key in answers.keys()}


_ALLOWED = [
    r"from attention_from_scratch\.course\.answers import check_answer",
    r"answer_\d = None",
    rf'check_answer\("{KEY}", answer_\d\)',
    r"q6, k6 = random_normal\(\(6, 16\), seed=11\), random_normal\(\(6, 16\), seed=12\)",  # 10.2's inputs
]


def test_check_cells_hold_neither_answer_nor_formula():
    for path in ALL_NOTEBOOKS:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] != "code" or "check_answer(" not in source:
                continue
            rest = [line for line in source.splitlines() if line.strip()
                    and not any(re.fullmatch(pattern, line) for pattern in _ALLOWED)]
            assert not rest, (path.name, rest)


def _shown(value):
    """How a notebook would print this answer (integers >= 100 and non-integers; small counts are everywhere)."""
    if isinstance(value, tuple):
        return []
    v = round(float(value), 9) if abs(float(value)) >= 1e-3 else float(value)
    if v == round(v):
        return [f"{int(v)}", f"{int(v):,}"] if abs(v) >= 100 else []
    if abs(v) < 1e-3:
        return [f"{v:.2e}", f"{v:.3g}"]
    return [f"{v:.4f}", f"{v:.3f}", f"{v:.4g}"] if abs(v) < 1000 else [f"{v:,.0f}", f"{round(v)}"]


# a number printed before an exercise that is another quantity, not the answer
_OTHER_QUANTITY = {"03.1": "256 is printed as d_k = 256 in the variance and gradient tables",
                   "03.3": "0.0625 is printed as the uniform weight 1/16 over 16 keys"}


def test_no_answer_is_printed_before_its_exercise():
    for path in ALL_NOTEBOOKS:
        printed = ""
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"])
            for key in re.findall(rf'check_answer\("({KEY})"', source):
                for text in ([] if key in _OTHER_QUANTITY else _shown(answers.expected(key))):
                    assert not re.search(rf"(?<![\d.]){re.escape(text)}(?![\d])", printed), (path.name, key, text)
            for out in cell.get("outputs", []):
                printed += "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))


def test_replies(capsys):
    check_answer("08.1", None)
    assert capsys.readouterr().out == "not answered yet: replace None with your answer and run the cell again\n"
    check_answer("08.1", 80)
    assert capsys.readouterr().out == "correct\n"
    check_answer("08.1", 64)
    reply = capsys.readouterr().out
    assert reply.startswith("64 is not right yet: ") and "Try again." in reply and "80" not in reply
    check_answer("08.1", 80.5)
    assert "not right yet" in capsys.readouterr().out  # a count is exact
    check_answer("00.2", round(answers.expected("00.2"), 4))  # 4 significant figures pass
    assert capsys.readouterr().out == "correct\n"
    check_answer("08.2", [7, 5])
    assert capsys.readouterr().out == "correct\n"
    check_answer("08.2", 35)
    assert "a shape is a tuple of whole numbers" in capsys.readouterr().out
    check_answer("03.2", "0.87")
    assert "give a number, not a str" in capsys.readouterr().out
    check_answer("03.2", True)
    assert "give a number, not a bool" in capsys.readouterr().out
    check_answer("03.2", float("nan"))
    assert "give a finite number" in capsys.readouterr().out
    check_answer("16.2", 1e-15)  # 0 up to rounding, on the scale of the weights
    assert capsys.readouterr().out == "correct\n"
    check_answer("21.1", np.float32(answers.expected("21.1")))  # 671612928 rounded to float32: not exact
    assert "a count is an exact whole number" in capsys.readouterr().out
    check_answer("21.1", np.float32(671612900))  # the same float32, typed as a nearby wrong count
    assert "a count is an exact whole number" in capsys.readouterr().out
    check_answer("21.1", float(answers.expected("21.1")))  # an integral float64 that is exactly the count
    assert capsys.readouterr().out == "correct\n"
    check_answer("21.1", answers.expected("21.1") + 1)
    assert "not right yet" in capsys.readouterr().out
    check_answer("21.1", 640.5)  # MiB
    assert "give bytes, not MiB" in capsys.readouterr().out
    check_answer("21.2", np.array([2314]))  # a one-entry array, as np.flatnonzero(...)[:1] + 1 gives
    assert "take its entry (x.item() or x[0])" in capsys.readouterr().out
    check_answer("21.2", [[2314.0]])
    assert "take its entry" in capsys.readouterr().out
    check_answer("21.2", [2314, 2315])
    assert "give a number, not a list." in capsys.readouterr().out
    check_answer("21.2", 2313)  # 2048 · 1152 / 1020 = 2313.03 rounded down: DSA still reads more there
    assert "the first whole S at which DSA reads fewer" in capsys.readouterr().out
    check_answer("08.1", np.array(80))  # a 0-d array is a number
    assert capsys.readouterr().out == "correct\n"
    check_answer("16.3", np.array(answers.expected("16.3")))
    assert capsys.readouterr().out == "correct\n"
    check_answer("16.3", -answers.expected("16.3"))  # a largest |difference| cannot be negative
    assert "is ≥ 0" in capsys.readouterr().out
    check_answer("09.2", -answers.expected("09.2"))
    assert "is ≥ 0" in capsys.readouterr().out


@pytest.mark.parametrize("key", [k for k in answers.keys() if answers.ANSWERS[k].kind != "shape"])
def test_a_wrong_answer_gets_a_hint_without_the_value(key, capsys):
    value = answers.expected(key)
    wrong = 2 * float(value) + 3
    check_answer(key, wrong)
    reply = capsys.readouterr().out
    assert "is not right yet: " in reply and reply.rstrip().endswith("Try again.")
    hint = reply.split("is not right yet: ", 1)[1]
    for text in _shown(value):
        assert text not in hint, (key, text)


def test_unknown_key():
    with pytest.raises(ValueError, match=r"no short-answer exercise '08\.9'.*00\.1"):
        check_answer("08.9", 1)


def test_no_notebook_checks_a_short_answer_inline():
    """Every short-answer check goes through check_answer: no notebook computes an expected value in its cell."""
    for path in ALL_NOTEBOOKS:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code":
                assert not re.search(r"def check(_shape)?\(answer|\bcheck(_shape)?\(answer_", source), path.name


def test_an_answer_too_large_or_complex_gets_a_hint_not_a_crash(capsys):
    for answer, hint in ((10**400, "give a finite number"), (math.inf, "give a finite number"),
                         (np.complex128(64), "give a number, not a complex128")):
        check_answer("08.1", answer)
        assert hint in capsys.readouterr().out


def test_every_folder_of_chinese_notebooks_replies_in_chinese():
    """Every folder of Chinese notebooks (notebooks/zh/, and notebooks/zh/next/ while chapters are staged there) names
    its language: a kernel starts in the notebook's own folder."""
    from attention_from_scratch.course import i18n

    folders = sorted({path.parent for path in (NOTEBOOKS / "zh").rglob("*.ipynb")})
    assert folders and all(i18n.folder_language(folder) == "zh" for folder in folders), folders


def test_a_float16_too_coarse_for_the_precision_asked_is_told_so(capsys):
    """np.float16(0.3988) is 0.39868 (float16's steps near 0.4 are 2.4e-4, five times the half unit of 4 significant
    figures): refused, and told that the type is too coarse, not sent back to a method that was right."""
    for key, answer in (("00.2", np.float16(0.3988)), ("00.2", np.array(0.3988, dtype=np.float16)),
                        ("03.2", np.float16(0.8668)), ("16.1", np.float16(47117)), ("09.1", np.float16(0.9))):
        check_answer(key, answer)
        reply = capsys.readouterr().out
        assert "a float16 keeps too few digits for the precision asked" in reply, (key, answer, reply)
        assert answers.ANSWERS[key].why not in reply
        check_answer(key, answer, lang="zh")
        assert "float16 的位数不够题目要求的精度" in capsys.readouterr().out
    for key, answer in (("04.1", np.float16(0.75)), ("01.2", np.float16(45)), ("00.2", np.float32(0.3988))):
        assert answers.judge(key, answer).passed, (key, answer)  # a float16 that holds the answer still passes
    check_answer("04.1", np.float16(0.7))  # 0.1% of 0.7 is wider than float16's steps there: the usual hint
    assert answers.ANSWERS["04.1"].why in capsys.readouterr().out


def test_a_wrongly_rounded_answer_hears_about_the_precision_asked(capsys):
    """18.1 asks 4 decimals of 1.004087: a truncated 1.0040 (or 3 decimals, 1.004) gets the method's hint AND the
    reminder that the question sets a precision; an exercise that asks none (01.2) gets the method's hint alone."""
    for answer in (1.0040, 1.004):
        check_answer("18.1", answer)
        reply = capsys.readouterr().out
        assert answers.ANSWERS["18.1"].why in reply and "the question asks for a set precision" in reply, reply
        check_answer("18.1", answer, lang="zh")
        assert "题目规定了精度" in capsys.readouterr().out
    check_answer("01.2", 44)
    reply = capsys.readouterr().out
    assert answers.ANSWERS["01.2"].why in reply and "precision" not in reply



def test_a_percentage_for_a_fraction_is_told_so(capsys):
    """00.2 asks a weight (0.3988): 39.88, the same number as a percentage, is refused with a hint that says so, in
    both languages; a wrong number of that size, and a percentage where the answer is not a fraction, get the usual
    hint."""
    right = float(answers.ANSWERS["00.2"].compute())
    assert 0 < right < 1
    check_answer("00.2", round(100 * right, 2))
    reply = capsys.readouterr().out
    assert "not right yet" in reply and "not a percentage" in reply and answers.ANSWERS["00.2"].why not in reply
    check_answer("00.2", round(100 * right, 2), lang="zh")
    assert "不是百分数" in capsys.readouterr().out
    check_answer("00.2", 45.0)  # not 100 times the answer: the usual hint
    assert "percentage" not in capsys.readouterr().out
    check_answer("01.2", 100 * 45.0)  # 01.2's answer, 45 (degrees), is no fraction
    assert "percentage" not in capsys.readouterr().out

def test_a_hint_names_the_form_the_question_asks(capsys):
    """03.3 asks the positive c: −1/16 also makes c² Var = 1, so its hint must say which one is asked; 08.3 asks by
    what factor the cache is smaller: 1/4 (GQA's over MHA's) is told the factor is MHA's over GQA's, above 1."""
    check_answer("03.3", -1 / 16)
    assert "the question asks for the positive one" in capsys.readouterr().out
    check_answer("08.3", 1 / 4)
    assert "a factor above 1" in capsys.readouterr().out
    check_answer("08.3", 1 / 4, lang="zh")
    assert "大于 1 的倍数" in capsys.readouterr().out


def test_notebook_10_solution_3_quotes_the_closed_form_at_every_t_it_names():
    """Solution 3 quotes the uncorrected Adam step under a constant gradient, η (1 − β₁ᵗ)/√(1 − β₂ᵗ), at t = 12 (the
    answer, which the key checks), 100 and 1000: each number, in both languages, is that closed form to 2 decimals."""
    def step(t, b1=0.9, b2=0.999):  # in units of η
        return (1 - b1**t) / (1 - b2**t) ** 0.5

    quoted = {12: "6.57", 100: "3.24", 1000: "1.26"}
    assert {t: f"{step(t):.2f}" for t in quoted} == quoted
    for folder in (NOTEBOOKS, NOTEBOOKS / "zh"):
        cells = json.loads((folder / "10_learning_from_data.ipynb").read_text(encoding="utf-8"))["cells"]
        solution = next("".join(c["source"]) for c in cells
                        if c["cell_type"] == "markdown" and "6.57" in "".join(c["source"]))
        for t, value in quoted.items():
            assert f"{value}\\,\\eta" in solution and f"t = {t}$" in solution, (folder.name, t)


def test_notebook_24_solutions_quote_the_numbers_they_compute():
    """Solutions 1 and 3 quote numbers beyond the answers the key checks: document 0's lead over the runner-up with
    and without IDF (7x, 4x), the RMSE of ranks 1 and 6 on the unseen ratings (0.70, 0.47), rank 6's training loss
    below rank 3's, its (30 + 20) x 6 = 300 factor parameters and the 185 observed ratings: each is recomputed here
    and found, in both languages, in the solution cell."""
    from attention_from_scratch.applications import hashed_bag_of_words, idf_weights, top_k
    from attention_from_scratch.course.answer_values import _CORPUS
    from attention_from_scratch.recommender import fit_matrix_factorization, synthetic_ratings

    docs = hashed_bag_of_words(_CORPUS, dim=1024)
    question = hashed_bag_of_words(["Why do we divide attention scores by the square root of d_k?"], dim=1024)[0]
    idf = idf_weights(docs)
    lead = {name: (lambda s: s[0] / s[1])(top_k(q, d, k=2, metric="cosine")[1])
            for name, q, d in (("idf", question * idf, docs * idf), ("none", question, docs))}
    ratings, observed, truth = synthetic_ratings(30, 20, rank=3, density=0.3, noise=0.1, seed=0)
    fits = {r: fit_matrix_factorization(ratings, observed, rank=r, steps=300, lr=0.1, l2=1e-3, seed=0)
            for r in (1, 3, 6)}
    rmse = {r: float(np.sqrt(np.mean((m.predict() - truth)[~observed] ** 2))) for r, m in fits.items()}
    assert (round(lead["idf"]), round(lead["none"])) == (7, 4)
    assert f"{rmse[1]:.2f}" == "0.70" and f"{rmse[6]:.2f}" == "0.47" and f"{rmse[3]:.2f}" == "0.31"
    assert fits[6].losses[-1] < fits[3].losses[-1] and rmse[6] > rmse[3]  # overfitting: lower training loss, worse RMSE
    assert int(observed.sum()) == 185 and (ratings.shape[0] + ratings.shape[1]) * 6 == 300
    for folder in (NOTEBOOKS, NOTEBOOKS / "zh"):
        cells = json.loads((folder / "24_applications.ipynb").read_text(encoding="utf-8"))["cells"]
        solution = next("".join(c["source"]) for c in cells if c.get("id") == "x12005")
        for quoted in ("$7\\times$", "$4\\times$", "$0.31$", "$0.70$", "$0.47$", "= 300$", "185"):
            assert quoted in solution, (folder.name, quoted)
