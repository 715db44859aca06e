"""The coding exercises: every worked solution passes ``check``; the classic mistakes fail with their hint;
the notebooks show exactly the solutions tested here; the references agree with independent loops."""

import inspect
import json
import re
from pathlib import Path

import numpy as np
import pytest
from exercise_solutions import SOLUTIONS  # tests/ is on sys.path under pytest (no __init__.py)
from test_exercise_serving import merge_average, merge_no_guard  # its full battery is in that file

from attention_from_scratch.course import exercises
from attention_from_scratch.softmax import softmax

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def test_names_are_the_solutions_in_course_order():
    assert exercises.names() == list(SOLUTIONS)
    assert len(exercises.names()) >= 9


@pytest.mark.parametrize("name", list(SOLUTIONS))
def test_worked_solution_passes(name, capsys):
    verdict = exercises.check(name, SOLUTIONS[name])
    assert verdict.passed, verdict.report
    assert capsys.readouterr().out.startswith(f"{name}: all ")
    assert repr(verdict) == f"Verdict({name!r}, passed=True)"


# --- the classic mistakes, written as a student would -----------------------------------------------


def naive_softmax(x):
    return np.exp(x) / np.sum(np.exp(x), axis=-1, keepdims=True)


def softmax_axis0(x):
    e = np.exp(x - np.max(x, axis=0, keepdims=True))
    return e / np.sum(e, axis=0, keepdims=True)


def softmax_global_max(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e, axis=-1, keepdims=True)


def softmax_no_keepdims(x):
    e = np.exp(x - np.max(x, axis=-1))
    return e / np.sum(e, axis=-1)


def _attention(q, k, v, mask=None, scale=None, fill=-np.inf, axis=-1, transpose=lambda k: np.swapaxes(k, -1, -2)):
    scale = 1 / q.shape[-1] ** 0.5 if scale is None else scale
    scores = q @ transpose(k) * scale
    if mask is not None:
        scores = np.where(mask, scores, fill)
    e = np.exp(scores - np.max(scores, axis=axis, keepdims=True))
    weights = e / np.sum(e, axis=axis, keepdims=True)
    return weights @ v, weights


def attention_unscaled(q, k, v, mask=None):
    return _attention(q, k, v, mask, scale=1.0)


def attention_wrong_axis(q, k, v, mask=None):
    return _attention(q, k, v, mask, axis=-2)


def attention_fill_zero(q, k, v, mask=None):
    return _attention(q, k, v, mask, fill=0.0)


def attention_k_dot_t(q, k, v, mask=None):
    return _attention(q, k, v, mask, transpose=lambda k: k.T)


def attention_nan_rows(q, k, v, mask=None):
    return _attention(q, k, v, mask)  # right everywhere except a fully masked row: -inf - -inf = nan


def attention_float64_scale(q, k, v, mask=None):
    return _attention(q, k, v, mask, scale=1 / np.sqrt(q.shape[-1]))  # a NumPy float64 promotes float32


def mask_top_left(n_q, n_k):
    return np.tril(np.ones((n_q, n_k), dtype=bool))


def mask_inverted(n_q, n_k):
    return np.triu(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q + 1)


def mask_strict(n_q, n_k):
    return np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q - 1)


def mask_ints(n_q, n_k):
    return np.tril(np.ones((n_q, n_k)), k=n_k - n_q)


def split_reshape_only(x, n_heads):
    b, t, d = x.shape
    return x.reshape(b, n_heads, t, d // n_heads)


def split_interleaved(x, n_heads):
    b, t, d = x.shape
    return x.reshape(b, t, d // n_heads, n_heads).transpose(0, 3, 1, 2)


def merge_reshape_only(x):
    b, h, t, d_k = x.shape
    return x.reshape(b, t, h * d_k)


def merge_interleaved(x):
    b, h, t, d_k = x.shape
    return x.transpose(0, 2, 3, 1).reshape(b, t, h * d_k)


def _decode(q, k_new, v_new, k_cache, v_cache, order="append", attend_new=True, axis=-2):
    old_first = order != "prepend"
    parts_k = [k_cache, k_new] if old_first else [k_new, k_cache]
    parts_v = [v_cache, v_new] if old_first else [v_new, v_cache]
    k, v = np.concatenate(parts_k, axis=axis), np.concatenate(parts_v, axis=axis)
    k_att, v_att = (k, v) if attend_new else (k_cache, v_cache)
    out, _ = _attention(q, k_att, v_att)
    return out, k, v


def decode_attend_before_append(q, k_new, v_new, k_cache, v_cache):
    return _decode(q, k_new, v_new, k_cache, v_cache, attend_new=False)


def decode_prepend(q, k_new, v_new, k_cache, v_cache):
    return _decode(q, k_new, v_new, k_cache, v_cache, order="prepend")


def decode_batch_axis(q, k_new, v_new, k_cache, v_cache):
    return _decode(q, k_new, v_new, k_cache, v_cache, axis=0)


def _rope(x, positions, halves=False, sign=1.0, cast=True):
    d = x.shape[-1]
    theta = 10000.0 ** (-2.0 * np.arange(d // 2) / d)
    angles = sign * positions[:, None] * theta[None, :]
    cos, sin = np.cos(angles), np.sin(angles)
    if cast:
        cos, sin = cos.astype(x.dtype), sin.astype(x.dtype)
    a, b = (x[..., : d // 2], x[..., d // 2 :]) if halves else (x[..., 0::2], x[..., 1::2])
    y0, y1 = a * cos - b * sin, a * sin + b * cos
    if halves:
        return np.concatenate([y0, y1], axis=-1)
    return np.stack([y0, y1], axis=-1).reshape(np.broadcast_shapes(x.shape, (*y0.shape[:-1], d)))


def rope_rotate_half(x, positions):
    return _rope(x, positions, halves=True)


def rope_wrong_sign(x, positions):
    return _rope(x, positions, sign=-1.0)


def rope_float64(x, positions):
    return _rope(x, positions, cast=False)


def mla_no_rope(q_nope, q_pe, c_kv, k_pe, w_uk):
    return (q_nope @ w_uk) @ np.swapaxes(c_kv, -1, -2)[:, None]


def mla_first_head(q_nope, q_pe, c_kv, k_pe, w_uk):
    return (q_nope @ w_uk[0]) @ np.swapaxes(c_kv, -1, -2)[:, None] + q_pe @ np.swapaxes(k_pe, -1, -2)[:, None]


def mla_scaled(q_nope, q_pe, c_kv, k_pe, w_uk):
    scale = 1 / (q_nope.shape[-1] + q_pe.shape[-1]) ** 0.5
    return scale * ((q_nope @ w_uk) @ np.swapaxes(c_kv, -1, -2)[:, None] + q_pe @ np.swapaxes(k_pe, -1, -2)[:, None])


def merge_not_rescaled(a, b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    return np.maximum(m_a, m_b), l_a + l_b, acc_a + acc_b


def merge_no_empty_guard(a, b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    alpha, beta = np.exp(m_a - m), np.exp(m_b - m)
    return m, alpha * l_a + beta * l_b, alpha * acc_a + beta * acc_b


def merge_overflow(a, b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    alpha, beta = np.exp(m_a) / np.exp(m), np.exp(m_b) / np.exp(m)
    return m, alpha * l_a + beta * l_b, alpha * acc_a + beta * acc_b


def _info_nce(q, k, t, axis=-1, reduce=np.mean, naive=False):
    logits = q @ k.T / t
    if naive:
        lse = np.log(np.sum(np.exp(logits), axis=axis))
    else:
        m = np.max(logits, axis=axis, keepdims=True)
        lse = np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(logits - m), axis=axis))
    return reduce(lse - np.diagonal(logits))


def info_nce_no_temperature(q, k, t):
    return _info_nce(q, k, 1.0)


def info_nce_columns(q, k, t):
    return _info_nce(q, k, t, axis=0)


def info_nce_sum(q, k, t):
    return _info_nce(q, k, t, reduce=np.sum)


def info_nce_naive(q, k, t):
    return _info_nce(q, k, t, naive=True)


WRONG = [
    ("softmax", naive_softmax, "subtract the row max"),
    ("softmax", softmax_axis0, "wrong axis"),
    ("softmax", softmax_global_max, "each row needs its own max"),
    ("softmax", softmax_no_keepdims, "keepdims=True"),
    ("attention", attention_unscaled, "not divided by √d_k"),
    ("attention", attention_wrong_axis, "wrong axis"),
    ("attention", attention_fill_zero, "with −∞"),
    ("attention", attention_k_dot_t, "np.swapaxes"),
    ("attention", attention_nan_rows, "fully masked row came back as nan"),
    ("attention", attention_float64_scale, "float32 in, float32 out"),
    ("causal_mask", mask_top_left, "top-left aligned: query i sits at position S − T + i"),
    ("causal_mask", mask_inverted, "True and False swapped"),
    ("causal_mask", mask_strict, "the diagonal is blocked"),
    ("causal_mask", mask_ints, "boolean array"),
    ("split_heads", split_reshape_only, "heads mixed: reshape without transpose?"),
    ("split_heads", split_interleaved, "features interleaved"),
    ("merge_heads", merge_reshape_only, "heads mixed: reshape without transpose?"),
    ("merge_heads", merge_interleaved, "features interleaved"),
    ("kv_decode_step", decode_attend_before_append, "the new token was left out"),
    ("kv_decode_step", decode_prepend, "go at the end of the cache"),
    ("kv_decode_step", decode_batch_axis, "axis=-2"),
    ("rope", rope_rotate_half, "rotate-half"),
    ("rope", rope_wrong_sign, "rotated the wrong way"),
    ("rope", rope_float64, "float32 in, float32 out"),
    ("mla_absorbed_scores", mla_no_rope, "the RoPE part is missing"),
    ("mla_absorbed_scores", mla_first_head, "every head has its own W_UK"),
    ("mla_absorbed_scores", mla_scaled, "return the raw scores"),
    ("online_softmax_merge", merge_not_rescaled, "sums not rescaled"),
    ("online_softmax_merge", merge_no_empty_guard, "an empty state must be neutral"),
    ("online_softmax_merge", merge_overflow, "one exponent"),
    ("merge_partials", merge_average, "not equal partners"),
    ("merge_partials", merge_no_guard, "Guard each row on its own"),
    ("info_nce", info_nce_no_temperature, "the temperature is ignored"),
    ("info_nce", info_nce_columns, "each query q_i picks its positive"),
    ("info_nce", info_nce_sum, "sum instead of mean"),
    ("info_nce", info_nce_naive, "overflow"),
]


@pytest.mark.parametrize(("name", "wrong", "hint"), WRONG, ids=[w[1].__name__ for w in WRONG])
def test_classic_mistake_fails_with_its_hint(name, wrong, hint):
    verdict = exercises.check(name, wrong, quiet=True)
    assert not verdict.passed
    assert f"{name}: FAILED on case" in verdict.report
    assert "hint: " + hint in verdict.report or hint in verdict.report.split("hint: ", 1)[-1], verdict.report
    assert "Traceback" not in verdict.report and " at 0x" not in verdict.report


def test_every_exercise_has_two_mistakes_tested():
    counts = {name: sum(w[0] == name for w in WRONG) for name in exercises.names()}
    assert min(counts.values()) >= 2, counts


def test_stub_says_not_implemented(capsys):
    def my_softmax(x):
        raise NotImplementedError

    verdict = exercises.check("softmax", my_softmax)
    expected = "softmax: not implemented yet: write `my_softmax` above, then run this cell"
    assert capsys.readouterr().out == expected + "\n"
    assert not verdict.passed and str(verdict) == expected and repr(verdict) == "Verdict('softmax', passed=False)"


def test_an_exception_is_one_line_not_a_traceback():
    def my_attention(q, k, v, mask=None):
        raise ValueError("boom\nsecond line")

    report = exercises.check("attention", my_attention, quiet=True).report
    assert "  my_attention raised ValueError: boom" in report.splitlines()
    assert "second line" not in report and "Traceback" not in report
    assert "case 1 of" in report and "q float64 (3, 4)" in report


def test_report_shows_expected_and_got_in_plain_words():
    report = exercises.check("causal_mask", mask_top_left, quiet=True).report
    assert "case 2 of 5 (one new token against S = 6 keys (decoding))" in report
    assert "inputs: n_q=1, n_k=6" in report
    assert "expected [[1 1 1 1 1 1]]" in report and "got      [[1 0 0 0 0 0]]" in report


def test_forgotten_return_and_wrong_signature():
    def my_softmax(x):
        np.exp(x)

    report = exercises.check("softmax", my_softmax, quiet=True).report
    assert "got None: did you forget to `return` the result?" in report

    def my_attention(q, k, v):
        return q, q

    report = exercises.check("attention", my_attention, quiet=True).report
    assert "my_attention raised TypeError" in report
    assert "hint: check the signature: the checker calls my_attention(q, k, v, mask)" in report


def test_float64_must_stay_float64():
    report = exercises.check("softmax", lambda x: softmax_via_logsumexp(x).astype(np.float32), quiet=True).report
    assert "case 1 of 8" in report and "expected dtype float64, got float32" in report
    assert "hint: float64 in, float64 out" in report


def test_odd_answers_are_reported_not_raised():
    report = exercises.check("rope", lambda x, p: x + 0j, quiet=True).report
    assert "\n  expected real numbers (float64), got an array of dtype complex128" in report
    report = exercises.check("softmax", lambda x: "weights", quiet=True).report
    assert "FAILED on case 1 of 8" in report and "expected shape (3,), got shape ()" in report


def test_wrong_output_structure_is_reported():
    report = exercises.check("attention", lambda q, k, v, mask=None: q, quiet=True).report
    assert "expected a tuple (out, weights), got an array of shape (3, 4)" in report


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"no exercise named 'sofmax'.*softmax"):
        exercises.check("sofmax", naive_softmax)
    with pytest.raises(TypeError, match="fn must be your function"):
        exercises.check("softmax", None)


def test_mistake_models_all_differ_from_the_reference():
    """Every mistake the checker knows must be wrong on at least one case, or its hint could never show."""
    from attention_from_scratch.course.exercises import EXERCISES, _close, _parts, _rtol

    for ex in EXERCISES.values():
        for hint, wrong in ex.mistakes:
            differs = False
            for case in ex.cases():
                with np.errstate(all="ignore"):
                    try:
                        got = _parts(ex, wrong(*case.args))
                    except Exception:
                        differs = True
                        break
                expected = _parts(ex, ex.reference(*case.args))
                if not all(_close(e, g, _rtol(case)) for e, g in zip(expected, got, strict=True)):
                    differs = True
                    break
            assert differs, (ex.name, hint)


# --- the references, against loops ---------------------------------------------------------------


def test_split_and_merge_references_against_a_loop():
    from attention_from_scratch._exercise_cases import _merge_reference, _split_reference

    x = np.random.default_rng(0).standard_normal((2, 3, 12))
    heads = _split_reference(x, 3)
    for b, h, t, j in np.ndindex(heads.shape):
        assert heads[b, h, t, j] == x[b, t, h * 4 + j]
    np.testing.assert_array_equal(_merge_reference(heads), x)


def test_mla_reference_against_a_loop():
    from attention_from_scratch._exercise_cases_late import _mla_cases, _mla_reference

    q_nope, q_pe, c_kv, k_pe, w_uk = _mla_cases()[0].args
    scores = _mla_reference(q_nope, q_pe, c_kv, k_pe, w_uk)
    for b, h, t, s in np.ndindex(scores.shape):
        k_c = w_uk[h] @ c_kv[b, s]  # this head's key, rebuilt from the latent
        want = q_nope[b, h, t] @ k_c + q_pe[b, h, t] @ k_pe[b, s]
        assert abs(scores[b, h, t, s] - want) < 1e-12


def test_decode_reference_equals_full_causal_attention():
    """The step's output is the last row of causal attention over cache + new token."""
    from attention_from_scratch._exercise_cases_late import _decode_cases, _decode_reference

    q, k_new, v_new, k_cache, v_cache = _decode_cases()[0].args
    out, k, v = _decode_reference(q, k_new, v_new, k_cache, v_cache)
    scores = q @ np.swapaxes(k, -1, -2) / 2.0  # d_k = 4
    np.testing.assert_allclose(out, softmax(scores) @ v, rtol=1e-12)
    assert k.shape[-2] == k_cache.shape[-2] + 1


# --- the notebooks show what is tested -------------------------------------------------------------


def _solution_blocks():
    blocks = {}
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            tags = cell.get("metadata", {}).get("tags", [])
            names = [t.removeprefix("exercise-") for t in tags if t.startswith("exercise-")]
            if "solution" in tags and names:
                blocks[names[0]] = (path.stem, "".join(cell["source"]))
    return blocks


@pytest.mark.parametrize("name", list(SOLUTIONS))
def test_notebook_solution_block_is_the_tested_solution(name):
    blocks = _solution_blocks()
    assert name in blocks, f"no solution cell tagged exercise-{name}: run python tools/insert_exercises.py"
    notebook, source = blocks[name]
    assert notebook == exercises.EXERCISES[name].notebook
    assert source.startswith("<details>") and source.rstrip().endswith("</details>")
    code = re.search(r"```python\n(.*?)```", source, re.S).group(1)
    assert code == inspect.getsource(SOLUTIONS[name]), (
        f"{notebook}: the solution of {name} differs from tests/ (run python tools/insert_exercises.py)"
    )


def test_solutions_use_numpy_only():
    """A worked solution that called the package would test nothing: the solutions import NumPy alone."""
    import ast

    import exercise_solutions

    tree = ast.parse(inspect.getsource(exercise_solutions))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported == {"numpy"}


# --- other correct formulations pass too (the tolerance is not tuned to one way of computing) ---------


def softmax_via_logsumexp(x):
    m = np.max(x, axis=-1, keepdims=True)
    return np.exp(x - (m + np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))))


def attention_einsum(q, k, v, mask=None):
    scores = np.einsum("...td,...sd->...ts", q, k) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    m = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(m), m, 0))
    total = e.sum(axis=-1, keepdims=True)
    weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return np.einsum("...ts,...sd->...td", weights, v), weights


def rope_complex(x, positions):
    """DeepSeek's reference: pairs as complex numbers times e^(i m θ)."""
    d = x.shape[-1]
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)
    rotation = np.exp(1j * np.outer(positions, theta)).astype(np.complex64 if x.dtype == np.float32 else np.complex128)
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * rotation
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape).astype(x.dtype)


def merge_via_logsumexp(a, b):
    """Through the log-sum-exp of each state: lse = m + log l, then l = e^(lse - m)."""
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    safe = np.where(np.isneginf(m), 0.0, m)
    with np.errstate(divide="ignore"):
        w_a, w_b = np.exp(m_a + np.log(l_a) - safe), np.exp(m_b + np.log(l_b) - safe)
    scale_a = np.divide(w_a, l_a, out=np.zeros_like(w_a), where=l_a > 0)
    scale_b = np.divide(w_b, l_b, out=np.zeros_like(w_b), where=l_b > 0)
    return m, w_a + w_b, scale_a * acc_a + scale_b * acc_b


def info_nce_log_softmax(q, k, t):
    logits = q @ k.T / t
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -np.trace(log_probs) / len(q)


@pytest.mark.parametrize(
    ("name", "fn"),
    [("softmax", softmax_via_logsumexp), ("attention", attention_einsum), ("rope", rope_complex),
     ("online_softmax_merge", merge_via_logsumexp), ("info_nce", info_nce_log_softmax)],
)
def test_other_correct_formulations_pass(name, fn):
    verdict = exercises.check(name, fn, quiet=True)
    assert verdict.passed, verdict.report
