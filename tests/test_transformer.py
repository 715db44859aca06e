"""The capstone Transformer: hand-written gradients against finite differences, the forward pass against
a second formulation built from the package's MultiHeadAttention, and cached generation against the
full pass."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import erf

from attention_from_scratch.model import layers
from attention_from_scratch.model.transformer import Transformer, TransformerConfig
from attention_from_scratch.multihead import MultiHeadAttention
from attention_from_scratch.norms import rms_norm

TINY = {"vocab_size": 7, "d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 12, "max_len": 10, "block_size": 3}
TOKENS = np.random.default_rng(0).integers(0, 7, (2, 8))  # (B, T + 1): next-token targets


def _finite_difference_check(model, tokens, targets=None, eps=1e-5, entries=0):
    """Relative error of the analytic gradient against central differences, per parameter tensor.

    For each tensor: the directional derivative along a random direction (every entry at once), and
    ``entries`` single entries (relative to the entry, or to 1e-3 of the tensor's largest gradient
    when the entry is tiny: a loss of ~2 rounds at 1e-16, i.e. ~1e-11 in a difference quotient).
    Central differences err by O(eps²) ~ 1e-10 here.
    """
    _, grads = model.loss_and_grads(tokens, targets)
    assert grads.keys() == model.params.keys()
    rng = np.random.default_rng(1)
    errors = {}
    for name, p in model.params.items():
        assert grads[name].shape == p.shape, name
        directions = [rng.standard_normal(p.shape)]
        for flat in rng.choice(p.size, size=min(entries, p.size), replace=False):
            e = np.zeros(p.size)
            e[flat] = 1.0
            directions.append(e.reshape(p.shape))
        worst = 0.0
        for u in directions:
            model.params[name] = p + eps * u
            up = model.loss_and_grads(tokens, targets)[0]
            model.params[name] = p - eps * u
            down = model.loss_and_grads(tokens, targets)[0]
            model.params[name] = p
            numeric, analytic = (up - down) / (2 * eps), float(np.sum(grads[name] * u))
            floor = 1e-3 * float(np.max(np.abs(grads[name])))
            worst = max(worst, abs(numeric - analytic) / max(abs(numeric), abs(analytic), floor))
        errors[name] = worst
    return errors


@pytest.mark.parametrize("attention", ["sdpa", "flash"])
@pytest.mark.parametrize("causal", [True, False])
def test_every_gradient_matches_finite_differences(attention, causal):
    model = Transformer(TransformerConfig(**TINY, attention=attention, causal=causal), seed=3)
    errors = _finite_difference_check(model, TOKENS, entries=3 if attention == "sdpa" else 0)
    assert len(errors) == 1 + 8 * 2 + 2  # embed, 8 per block, final norm and unembedding: all checked
    assert max(errors.values()) < 1e-6, errors


@pytest.mark.parametrize(
    "options", [{"positions": "learned", "n_kv_heads": 1}, {"scale": False, "attention": "flash", "n_kv_heads": 1}]
)
def test_gradients_with_learned_positions_gqa_and_no_scale(options):
    model = Transformer(TransformerConfig(**TINY, **options), seed=4)
    targets = np.array(TOKENS[:, 1:])
    targets[0, :3] = -1  # ignored positions: no loss there, and so no gradient from them
    errors = _finite_difference_check(model, TOKENS[:, :-1], targets)
    assert "pos" in errors or "positions" not in options
    assert max(errors.values()) < 1e-6, errors


def _reference_logits(model, tokens):
    """The forward pass again from other parts: MultiHeadAttention for attention, mla.rms_norm, exact GELU."""
    c, p = model.config, model.params
    x = p["embed"][tokens] + p["pos"][: tokens.shape[1]]  # a plain lookup, not a one-hot matmul
    for i in range(c.n_layers):
        mha = MultiHeadAttention(c.d_model, c.n_heads, n_kv_heads=c.n_kv_heads)
        mha.w_q, mha.w_k, mha.w_v, mha.w_o = (p[f"{i}.{n}"] for n in ("w_q", "w_k", "w_v", "w_o"))
        x = x + mha(rms_norm(x, p[f"{i}.attn_norm"]), causal=True)
        u = rms_norm(x, p[f"{i}.mlp_norm"]) @ p[f"{i}.w_1"]
        x = x + (0.5 * u * (1 + erf(u / math.sqrt(2)))) @ p[f"{i}.w_2"]  # exact GELU: tanh form within 1e-3
    return rms_norm(x, p["final_norm"]) @ p["unembed"]


@pytest.mark.parametrize("n_kv_heads", [None, 1])
def test_forward_equals_a_second_formulation(n_kv_heads):
    config = TransformerConfig(**(TINY | {"n_layers": 3}), positions="learned", n_kv_heads=n_kv_heads)
    model = Transformer(config, seed=5)
    np.testing.assert_allclose(model.logits(TOKENS), _reference_logits(model, TOKENS), atol=5e-3)


def test_attention_weights_of_the_first_layer_by_hand():
    config = TransformerConfig(**TINY, positions="learned")
    model = Transformer(config, seed=11)
    p = model.params
    x = rms_norm(p["embed"][TOKENS] + p["pos"][: TOKENS.shape[1]], p["0.attn_norm"])  # (B, T, d_model)
    q = (x @ p["0.w_q"]).reshape(2, 8, 2, 4).transpose(0, 2, 1, 3)  # (B, T, H·d_k) -> (B, H, T, d_k)
    k = (x @ p["0.w_k"]).reshape(2, 8, 2, 4).transpose(0, 2, 1, 3)
    scores = np.where(np.tril(np.ones((8, 8), bool)), q @ k.transpose(0, 1, 3, 2) / 2.0, -np.inf)  # sqrt(4) = 2
    expected = np.exp(scores - scores.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    weights = model.attention_weights(TOKENS)
    assert len(weights) == 2 and weights[1].shape == (2, 2, 8, 8)
    np.testing.assert_allclose(weights[0], expected, rtol=1e-12, atol=1e-15)


def test_loss_is_the_mean_negative_log_likelihood():
    model = Transformer(TransformerConfig(**TINY), seed=6)
    logits = model.logits(TOKENS[:, :-1])
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -np.mean(np.take_along_axis(log_p, TOKENS[:, 1:, None], axis=-1))
    assert model.loss_and_grads(TOKENS)[0] == pytest.approx(expected, rel=1e-12)


def test_causal_mask_hides_the_future():
    model = Transformer(TransformerConfig(**TINY), seed=7)
    changed = TOKENS.copy()
    changed[:, 5:] = (changed[:, 5:] + 1) % 7
    np.testing.assert_allclose(model.logits(changed)[:, :5], model.logits(TOKENS)[:, :5], rtol=1e-12)
    open_model = Transformer(TransformerConfig(**TINY, causal=False), seed=7)
    assert not np.allclose(open_model.logits(changed)[:, :5], open_model.logits(TOKENS)[:, :5])


@pytest.mark.parametrize("options", [{}, {"attention": "flash", "n_kv_heads": 1}, {"positions": "learned"}])
def test_cached_generation_equals_the_full_pass(options):
    model = Transformer(TransformerConfig(**TINY, **options), seed=8)
    prompt = TOKENS[:, :3]
    out = model.generate(prompt, 6)
    assert out.shape == (2, 9)
    np.testing.assert_array_equal(out[:, :3], prompt)
    expected = prompt
    for _ in range(6):  # greedy by re-running the whole sequence every step, no cache
        nxt = np.argmax(model.logits(expected)[:, -1], axis=-1)
        expected = np.concatenate([expected, nxt[:, None]], axis=1)
    np.testing.assert_array_equal(out, expected)


def test_flash_with_the_default_tile_equals_sdpa():
    assert TransformerConfig(**(TINY | {"block_size": None})).block_size is None  # the contract's default
    flash = Transformer(TransformerConfig(**(TINY | {"block_size": None}), attention="flash"), seed=2)
    sdpa = Transformer(TransformerConfig(**TINY), seed=2)
    np.testing.assert_allclose(flash.logits(TOKENS), sdpa.logits(TOKENS), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(flash.loss_and_grads(TOKENS)[0], sdpa.loss_and_grads(TOKENS)[0], rtol=1e-12)


def test_layer_backwards_match_finite_differences():
    rng = np.random.default_rng(9)
    x, g, dy = rng.standard_normal((3, 5)), rng.standard_normal(5), rng.standard_normal((3, 5))
    xp = np  # NumPy through the same functions
    dx, dg = layers.rms_norm_backward(layers.rms_norm_forward(x, g, xp)[1], dy, xp)
    eps = 1e-6
    e = np.zeros_like(x)
    e[1, 2] = eps
    f = lambda x_, g_: np.sum(layers.rms_norm_forward(x_, g_, xp)[0] * dy)  # noqa: E731
    assert (f(x + e, g) - f(x - e, g)) / (2 * eps) == pytest.approx(dx[1, 2], rel=1e-7)
    e5 = np.zeros(5)
    e5[3] = eps
    assert (f(x, g + e5) - f(x, g - e5)) / (2 * eps) == pytest.approx(dg[3], rel=1e-7)
    gelu = lambda x_: np.sum(layers.gelu_forward(x_, xp)[0] * dy)  # noqa: E731
    assert (gelu(x + e) - gelu(x - e)) / (2 * eps) == pytest.approx(
        layers.gelu_backward(layers.gelu_forward(x, xp)[1], dy, xp)[1, 2], rel=1e-7
    )


@pytest.mark.parametrize(("attention", "causal"), [("sdpa", True), ("sdpa", False), ("flash", True)])
def test_backends_agree(xp, attention, causal):
    """Loss, gradients and generation on every backend (and device) equal NumPy float64's."""
    config = TransformerConfig(**TINY, attention=attention, causal=causal, n_kv_heads=1)
    ref = Transformer(config, seed=10)
    model = Transformer(config, seed=10, xp=xp.ns, device=xp.device, dtype=xp.dtype)
    tokens = xp.asarray(TOKENS, dtype=np.int64)
    loss, grads = model.loss_and_grads(tokens)
    ref_loss, ref_grads = ref.loss_and_grads(TOKENS)
    rtol = 1e-4 if xp.dtype_name == "float32" else 1e-10
    assert loss == pytest.approx(ref_loss, rel=rtol)
    for name, g in grads.items():
        assert g.dtype == xp.dtype and g.shape == ref_grads[name].shape
        xp.assert_close(g, ref_grads[name], rtol=rtol * 10, atol=rtol)
    np.testing.assert_array_equal(xp.np(model.generate(tokens[:, :3], 4)), ref.generate(TOKENS[:, :3], 4))


def test_bad_inputs_are_refused_with_clear_messages():
    with pytest.raises(ValueError, match="divisible"):
        TransformerConfig(**(TINY | {"n_heads": 3}))
    with pytest.raises(ValueError, match="attention must be one of"):
        TransformerConfig(**TINY, attention="fast")
    with pytest.raises(TypeError, match="causal"):
        TransformerConfig(**TINY, causal="yes")
    model = Transformer(TransformerConfig(**TINY))
    with pytest.raises(ValueError, match=r"0\.\.vocab_size-1"):
        model.logits([[0, 7]])
    with pytest.raises(ValueError, match="integer"):
        model.logits(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="max_len"):
        model.generate([[1, 2, 3]], 8)
    with pytest.raises(TypeError, match="TransformerConfig"):
        Transformer({"vocab_size": 7})


def test_an_integer_dtype_is_refused():
    # astype(int) would truncate N(0, 1/fan_in) weights to zeros and train nothing, silently
    with pytest.raises(TypeError, match="real floating dtype"):
        Transformer(TransformerConfig(**TINY), dtype=np.int32)


def test_rope_tables_are_built_once_and_rebuilt_for_a_new_max_len():
    from dataclasses import replace

    from attention_from_scratch.rope import apply_rope

    model = Transformer(TransformerConfig(**TINY), seed=6)
    model.loss_and_grads(TOKENS)
    tables = model._rope_cache
    assert tables[0] == TINY["max_len"] and tables[1].shape == (TINY["max_len"], model.config.d_k // 2)
    model.loss_and_grads(TOKENS)
    assert model._rope_cache is tables  # not rebuilt by a second step
    x = np.random.default_rng(7).standard_normal((2, 4, 2, model.config.d_k))  # token-major (B, T, heads, d_k)
    for start, sign in ((0, 1), (3, 1), (2, -1)):  # the cached rows against apply_rope's own tables
        positions = sign * np.arange(start, start + 4)
        by_heads = apply_rope(x.transpose(0, 2, 1, 3), positions).transpose(0, 2, 1, 3)  # apply_rope: (..., T, d)
        np.testing.assert_allclose(model._rope(x, start, sign), by_heads, rtol=1e-14, atol=1e-15)
    model.config = replace(model.config, max_len=14)
    model.logits(np.zeros((1, 12), dtype=np.int64))
    assert model._rope_cache[0] == 14 and model._rope_cache[1].shape[0] == 14


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("ignored", [0, 3])
def test_cross_entropy_against_its_closed_form(dtype, ignored):
    """Loss and gradient against ``-log softmax(z)[y]`` and ``(softmax(z) - onehot(y)) / N`` written here in
    float64 (the layer computes the gradient in its forward and gathers z[y]); ignored targets (-1) add nothing
    and get a zero gradient."""
    rng = np.random.default_rng(9)
    logits, targets = (rng.standard_normal((2, 5, 6)) * 3).astype(dtype), rng.integers(0, 6, (2, 5))
    targets[0, :ignored] = -1
    z = logits.astype(np.float64)
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    counted, n = targets >= 0, np.sum(targets >= 0)
    picked = np.take_along_axis(p, np.maximum(targets, 0)[..., None], axis=-1)[..., 0]
    expected_grad = (p - np.eye(6)[np.maximum(targets, 0)]) * counted[..., None] / n
    loss, cache = layers.cross_entropy_forward(logits, targets, np)
    grad = layers.cross_entropy_backward(cache, np)
    tol = {np.float16: 2e-3, np.float32: 1e-6, np.float64: 1e-13}[dtype]
    assert loss == pytest.approx(-np.sum(np.log(picked) * counted) / n, rel=tol)
    assert grad.dtype == dtype and np.all(grad[0, :ignored] == 0)
    np.testing.assert_allclose(grad, expected_grad, rtol=tol, atol=tol / n)


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_an_ignored_position_gets_a_zero_gradient_whatever_its_logits(xp, bad):
    """A position whose target is -1 (padding) contributes 0 to the gradient even when its logits are inf or nan
    (a float16 model's logits overflow past 65,504): its row of exp(z - m) is nan, and nan times a zero factor is
    nan, so the zero is chosen, not multiplied; the counted rows keep the closed form."""
    rng = np.random.default_rng(5)
    logits, targets = rng.standard_normal((2, 3, 5)), np.array([[1, 4, -1], [0, -1, 2]])
    expected_rows = logits.copy()
    logits[0, 2, 1] = logits[1, 1, :] = bad
    z = expected_rows - expected_rows.max(-1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    counted = targets >= 0
    expected = (p - np.eye(5)[np.maximum(targets, 0)]) * counted[..., None] / counted.sum()
    with np.errstate(invalid="ignore"):  # inf - inf in the ignored rows' shift: nan there, by design
        loss, cache = layers.cross_entropy_forward(xp.asarray(logits), xp.asarray(targets), xp.ns)
    grad = xp.np(layers.cross_entropy_backward(cache, xp.ns))
    assert np.isfinite(loss) and np.all(grad[~counted] == 0)
    xp.assert_close(grad, expected)


def test_float16_loss_is_summed_in_float32():
    """float16 logits of 48,000 positions whose losses are ln 4 = 1.386 each: their sum, 66,542, lies past float16's
    largest number (65,504), so a float16 sum is inf; it is summed in float32, as the layer's other half-precision
    sums are, and the mean loss is ln 4 to float16's rounding."""
    logits = np.zeros((2, 24_000, 4), dtype=np.float16)  # every row uniform over V = 4: each loss is ln 4
    loss, grad = layers.cross_entropy_forward(logits, np.zeros((2, 24_000), dtype=np.int64), np)
    assert loss == pytest.approx(math.log(4), rel=1e-3)
    assert grad.dtype == np.float16


@pytest.mark.parametrize("n, n_rows", [(7, 40), (2098, 64), (5, 0)])
def test_scatter_add_rows_sums_each_index_rows_as_a_loop_does(xp, n, n_rows):
    """NumPy's sorted runs and the other backends' one-hot product, against a loop (repeated, absent, no rows)."""
    rng = np.random.default_rng(n + n_rows)
    indices = rng.integers(0, min(n, 9), n_rows)  # few distinct values: runs of repeats, most rows of out stay 0
    values = rng.standard_normal((n_rows, 3))
    expected = np.zeros((n, 3))
    for i, j in enumerate(indices):
        expected[j] += values[i]
    out = layers.scatter_add_rows(xp.asarray(indices), xp.asarray(values), n, xp.ns)
    assert out.shape == (n, 3) and out.dtype == xp.dtype
    xp.assert_close(out, expected)


def test_cross_entropy_gradient_is_the_same_on_every_backend(xp):
    """NumPy subtracts 1 at the counted targets in place; the others subtract a one-hot: the same gradient."""
    rng = np.random.default_rng(3)
    logits, targets = rng.standard_normal((2, 5, 11)), rng.integers(0, 11, (2, 5))
    targets[1, :2] = -1  # not counted
    z = logits - logits.max(-1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    expected = np.zeros_like(p)
    for b, t in zip(*np.nonzero(targets >= 0), strict=True):  # (softmax - onehot) / N at each counted position
        expected[b, t] = p[b, t]
        expected[b, t, targets[b, t]] -= 1
    expected /= np.sum(targets >= 0)
    cache = layers.cross_entropy_forward(xp.asarray(logits), xp.asarray(targets), xp.ns)[1]
    xp.assert_close(layers.cross_entropy_backward(cache, xp.ns), expected)


@pytest.mark.parametrize("rows", [1, 3, 4, 64])
def test_cross_entropy_in_blocks_of_rows_is_the_whole_arrays(xp, rows, monkeypatch):
    """The forward walks the (B·T, V) logits CE_ROWS rows at a time: blocks of 1, 3 (a short last block), 4 (an
    ignored row at a block's edge) and 64 (one block) give the loss and the gradient of the closed form."""
    monkeypatch.setattr(layers, "CE_ROWS", rows)
    rng = np.random.default_rng(rows)
    logits, targets = rng.standard_normal((3, 4, 7)) * 4, rng.integers(0, 7, (3, 4))
    targets[0, 3] = targets[2, 0] = -1  # rows 3 and 8 of 12: not counted
    z = logits - logits.max(-1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    counted, n = targets >= 0, np.sum(targets >= 0)
    onehot = np.eye(7)[np.maximum(targets, 0)]
    loss, cache = layers.cross_entropy_forward(xp.asarray(logits), xp.asarray(targets), xp.ns)
    assert loss == pytest.approx(-np.sum(np.log(np.sum(p * onehot, -1)) * counted) / n, rel=xp.rtol)
    xp.assert_close(layers.cross_entropy_backward(cache, xp.ns), (p - onehot) * counted[..., None] / n)


def test_embedding_gradient_is_a_scatter_add():
    rng = np.random.default_rng(8)
    tokens, dx = rng.integers(0, 5, (3, 7)), rng.standard_normal((3, 7, 4))
    expected = np.zeros((6, 4))  # token 5 never occurs: its row stays 0
    np.add.at(expected, tokens.ravel(), dx.reshape(-1, 4))
    np.testing.assert_allclose(layers.embedding_backward(tokens, dx, 6, np), expected, rtol=1e-14, atol=1e-15)
    e = rng.standard_normal((6, 4))
    np.testing.assert_array_equal(layers.embedding_forward(tokens, e, np), e[tokens])


def test_layers_leave_their_inputs_and_caches_unchanged():
    rng = np.random.default_rng(12)
    x, g, dy = rng.standard_normal((2, 3, 5)), rng.standard_normal(5), rng.standard_normal((2, 3, 5))
    arrays = [x, g, dy]
    copies = [a.copy() for a in arrays]
    for forward, backward, args in (
        (layers.rms_norm_forward, layers.rms_norm_backward, (x, g)),
        (layers.gelu_forward, layers.gelu_backward, (x,)),
    ):
        _, cache = forward(*args, np)
        kept = [c.copy() for c in cache]
        backward(cache, dy, np)
        backward(cache, dy, np)  # twice: the same answer from an untouched cache
        for c, k in zip(cache, kept, strict=True):
            np.testing.assert_array_equal(c, k)
    for a, c in zip(arrays, copies, strict=True):
        np.testing.assert_array_equal(a, c)


def test_token_ids_on_another_device_are_moved_to_the_model(xp):
    config = TransformerConfig(**TINY)
    model = Transformer(config, seed=3, xp=xp.ns, device=xp.device, dtype=xp.dtype)
    here = xp.asarray(TOKENS[:, :-1])  # on the model's device
    elsewhere = xp.ns.asarray(TOKENS[:, :-1])  # on the backend's default device
    xp.assert_close(model.logits(elsewhere), model.logits(here))
    xp.assert_close(model.logits(TOKENS[:, :-1].tolist()), model.logits(here))


def test_next_token_loss_reads_max_len_plus_one_tokens():
    config = TransformerConfig(**TINY)  # max_len 10
    model = Transformer(config, seed=2)
    tokens = np.random.default_rng(3).integers(0, 7, (2, 11))  # T = max_len + 1: inputs are tokens[:, :-1]
    loss, _ = model.loss_and_grads(tokens)
    want, _ = model.loss_and_grads(tokens[:, :-1], tokens[:, 1:])
    assert loss == want
    with pytest.raises(ValueError, match=r"tokens has T=12 > max_len=10 \+ 1"):
        model.loss_and_grads(np.zeros((1, 12), dtype=np.int64))
    with pytest.raises(ValueError, match=r"tokens has T=11 > max_len=10"):
        model.loss_and_grads(tokens, tokens)


def test_rms_norm_in_float16_is_computed_in_float32():
    """The capstone's RMSNorm is the package's (norms.rms_normalize), which widens half precision: in float16
    the sum of x² of a row with |x| ~ 300 overflows to inf and the output collapsed to 0 (issue 38)."""
    rng = np.random.default_rng(70)
    x = (300 * rng.standard_normal((2, 3, 16))).astype(np.float16)
    g = rng.standard_normal(16).astype(np.float16)
    y, cache = layers.rms_norm_forward(x, g, np)
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    want = x64 / np.sqrt(np.mean(x64**2, axis=-1, keepdims=True) + 1e-6) * g64
    assert y.dtype == np.float16 and np.abs(want).max() > 1
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=2e-3, atol=2e-3)
    dy = rng.standard_normal((2, 3, 16)).astype(np.float16)
    dx, dg = layers.rms_norm_backward(cache, dy, np)
    assert dx.dtype == dg.dtype == np.float16
    ref_dx, ref_dg = layers.rms_norm_backward(layers.rms_norm_forward(x64, g64, np)[1], dy.astype(np.float64), np)
    np.testing.assert_allclose(dx.astype(np.float64), ref_dx, rtol=1e-2, atol=1e-4)
    np.testing.assert_allclose(dg.astype(np.float64), ref_dg, rtol=1e-2, atol=1e-2)


def test_gelu_in_float16_is_computed_in_float32():
    """#38 class 1: float16's x³ overflowed, and dy/dx was inf · 0 = NaN at |x| ≈ 80-100; failed before
    the fix. Reference: the tanh-GELU and its derivative written out in float64."""
    x = np.array([[-100.0, -90.0, -80.0, -40.0, -3.0, -0.5, 0.0, 0.7, 2.0, 40.0, 80.0, 100.0]], np.float16)
    x64, c = x.astype(np.float64), math.sqrt(2 / math.pi)
    t = np.tanh(c * (x64 + 0.044715 * x64**3))
    want_y = 0.5 * x64 * (1 + t)
    want_dydx = 0.5 * (1 + t) + 0.5 * x64 * (1 - t * t) * c * (1 + 3 * 0.044715 * x64**2)
    y, cache = layers.gelu_forward(x, np)
    dx = layers.gelu_backward(cache, np.ones_like(x), np)
    assert y.dtype == dx.dtype == np.float16
    np.testing.assert_allclose(y.astype(np.float64), want_y, rtol=2**-10, atol=2**-14)
    np.testing.assert_allclose(dx.astype(np.float64), want_dydx, rtol=2**-10, atol=2**-14)
