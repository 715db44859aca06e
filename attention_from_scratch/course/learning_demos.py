"""The data and runs of notebooks 10 ("Learning from data") and 11 ("The Transformer block").

One source per demo: a notebook works each run out by hand, asserts that it equals the function here,
and passes the result to a figure (``course/plots/learning.py``, ``course/plots/block.py``), which only
draws. The runs are tiny and seeded, so they take milliseconds and give the same numbers every time.

* a real sentence and a tiny real text (the first two verses of *Mary Had a Little Lamb* as usually sung,
  a later wording of Sarah Josepha Hale's *Mary's Lamb*, 1830; in the public domain), split into word tokens;
* gradient descent on one parameter (a least-squares line through three points), at three learning rates;
* gradient descent with and without momentum on a long, narrow bowl;
* a bigram model (next token from the current one) trained by gradient descent and by Adam, its loss
  and gradient built from the capstone's layers (an embedding lookup and softmax cross-entropy);
* the gradient through a deep stack of layers, with and without residual connections;
* notebook 12's multi-head attention layer: its backward pass (projections, head split and merge) and a
  short training run on a task only attention solves (copy the previous token's content).
"""

from __future__ import annotations

import re

import numpy as np

from ..attention import attention_backward, scaled_dot_product_attention
from ..model.layers import cross_entropy_backward, cross_entropy_forward, embedding_backward, embedding_forward
from ..model.training import Adam
from ..multihead import MultiHeadAttention

__all__ = [
    "BOWL_CURVATURES",
    "LAMB",
    "LEARNING_RATES",
    "REGRESSION",
    "attention_layer_backward",
    "attention_layer_weights",
    "bigram_floor",
    "bigram_loss_and_grad",
    "bigram_pairs",
    "bowl_runs",
    "descend",
    "learning_results",
    "previous_token_batch",
    "regression_runs",
    "residual_gradient_norms",
    "train_attention_layer",
    "train_bigram",
    "word_tokens",
]

LAMB = ("Mary had a little lamb, its fleece was white as snow; and everywhere that Mary went, the lamb was sure "
        "to go. It followed her to school one day, which was against the rule; it made the children laugh and "
        "play, to see a lamb at school.")

# three points (s_n, y_n), close to the line y = 2 s; the model ŷ = θ s has one parameter θ (``w`` in the code)
REGRESSION = {"s": (1.0, 2.0, 3.0), "y": (2.1, 3.9, 6.2)}
# too small, about right, too large for the curvature 2 mean(s²) = 28/3 of that loss (stable below 2/(28/3))
LEARNING_RATES = (0.01, 0.1, 0.23)
# L(a, b) = (c_1 a² + c_2 b²) / 2: a bowl 100 times steeper across than along
BOWL_CURVATURES = (1.0, 0.01)


def word_tokens(text: str) -> list[str]:
    """Lower-case words and the punctuation marks . , ; as tokens, in order."""
    return re.findall(r"[a-z]+|[.,;]", text.lower())


def descend(grad, w0, lr: float, steps: int, *, beta: float = 0.0) -> np.ndarray:
    """The iterates ``θ_0 .. θ_steps`` (``w`` in the code) of gradient descent, with momentum if ``beta > 0``.

    ``m ← β m + (1 − β) ∇L(θ)``, ``θ ← θ − lr · m``: with β = 0 this is plain ``θ ← θ − lr ∇L(θ)``. This is
    momentum's averaging form (Adam's m); the velocity form of textbooks and PyTorch, ``u ← β u + ∇L(θ)``,
    ``θ ← θ − lr' · u``, takes the same steps with ``lr' = (1 − β) lr``.
    """
    w, m, path = np.asarray(w0, dtype=np.float64), 0.0, []
    path.append(w)
    for _ in range(steps):
        m = beta * m + (1.0 - beta) * grad(w)
        w = w - lr * m
        path.append(w)
    return np.stack(path)


def regression_runs(steps: int = 20) -> dict:
    """lr -> the iterates of gradient descent from θ = 0 on ``L(θ) = mean((θ s - y)²)``, one per LEARNING_RATES."""
    s, y = (np.asarray(REGRESSION[k]) for k in ("s", "y"))
    grad = lambda w: 2.0 * np.mean((w * s - y) * s)  # noqa: E731  L'(w)
    return {lr: descend(grad, 0.0, lr, steps) for lr in LEARNING_RATES}


def bowl_runs(steps: int = 300) -> dict:
    """name -> the path ``(steps + 1, 2)`` from (1, 1) on the bowl: gradient descent at lr 1.9 and momentum
    0.9 at lr 4, the best rates of the grids the learning notebook tries (it measures them again)."""
    c = np.asarray(BOWL_CURVATURES)
    grad = lambda w: c * w  # noqa: E731
    return {"gradient descent, lr 1.9": descend(grad, (1.0, 1.0), 1.9, steps),
            "momentum 0.9, lr 4": descend(grad, (1.0, 1.0), 4.0, steps, beta=0.9)}


def bigram_pairs(text: str = LAMB):
    """``(vocab, inputs, targets)``: the sorted vocabulary of ``text``'s tokens, each token's id
    (all but the last) and the id of the token after it."""
    tokens = word_tokens(text)
    vocab = sorted(set(tokens))
    ids = np.array([vocab.index(w) for w in tokens])
    return vocab, ids[:-1], ids[1:]


def bigram_loss_and_grad(w, inputs, targets):
    """Mean cross-entropy of the bigram model and its gradient: logits of pair i = row ``inputs[i]`` of w.

    w ``(V, V)``, the notebook's table E; the logits are an embedding lookup (the capstone's
    ``embedding_forward``), the loss its ``cross_entropy_forward``, and the gradient
    ``dW = onehotᵀ (softmax − onehot(targets)) / N``.
    """
    tokens, targets = np.asarray(inputs)[None], np.asarray(targets)[None]  # (1, N): one sequence
    logits = embedding_forward(tokens, w, np)  # (1, N, V)
    loss, cache = cross_entropy_forward(logits, targets, np)
    return loss, embedding_backward(tokens, cross_entropy_backward(cache, np), w.shape[0], np)


def bigram_floor(inputs, targets, n_vocab: int) -> float:
    """The lowest loss any bigram model reaches on these pairs: −mean log(count(a, b) / count(a)).

    ``count(a, b)``: how often b follows a; ``count(a) = Σ_b count(a, b)``, the number of pairs whose input is a
    (not how often a occurs: the last token starts no pair). Reached by the log-frequency table, whose logit
    is −inf for a pair never seen; a table of finite logits stays above it (unless every token that starts a
    pair is followed, somewhere, by every token of the vocabulary).
    """
    counts = np.zeros((n_vocab, n_vocab))
    np.add.at(counts, (inputs, targets), 1.0)
    return float(-np.mean(np.log(counts[inputs, targets] / counts[inputs].sum(axis=1))))


def train_bigram(method: str, lr: float, steps: int, *, loss_scale: float = 1.0) -> list[float]:
    """The loss before each step of training the bigram model from W = 0 on :data:`LAMB`.

    ``method``: "gd" (``W ← W − lr dW``) or "adam" (the capstone's ``Adam``). ``loss_scale`` multiplies
    the loss (and so its gradient): the number the optimiser sees is ``loss_scale ·`` the mean loss,
    and the returned losses are divided back by it.
    """
    vocab, inputs, targets = bigram_pairs()
    params = {"w": np.zeros((len(vocab), len(vocab)))}
    optimizer = Adam(params, lr=lr) if method == "adam" else None
    losses = []
    for _ in range(steps):
        loss, grad = bigram_loss_and_grad(params["w"], inputs, targets)
        losses.append(loss)
        if optimizer is None:
            params["w"] = params["w"] - lr * (loss_scale * grad)
        else:
            optimizer.step({"w": loss_scale * grad})
    return losses


def residual_gradient_norms(depth: int = 50, d: int = 16, *, gain: float = 0.5, seed: int = 0) -> dict:
    """The norm of ``∂L/∂x_l`` at every layer l = depth .. 0 of a stack of ``f_l(x) = tanh(x W_l)``.

    ``W_l ~ N(0, gain²/d)``; ``L = g · x_depth`` with g of norm 1. "plain": ``x_(l+1) = f_l(x_l)``;
    "residual": ``x_(l+1) = x_l + f_l(x_l)``. The gradient goes back through each layer's Jacobian
    ``J_l = diag(1 − f_l²) W_lᵀ`` (plus the identity with the residual). Returns ``{"plain": norms,
    "residual": norms}``, each ``(depth + 1,)`` from the top layer down, and ``{"stream": ...}``, the
    norm of each residual-stream vector ``x_0 .. x_depth``.
    """
    rng = np.random.default_rng(seed)
    weights = [gain * rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(depth)]
    x0, g = rng.standard_normal(d), np.full(d, 1.0 / np.sqrt(d))
    out = {}
    for kind in ("plain", "residual"):
        xs = [x0]
        for w in weights:
            f = np.tanh(xs[-1] @ w)
            xs.append(xs[-1] + f if kind == "residual" else f)
        grad, norms = g, [np.linalg.norm(g)]
        for layer in reversed(range(depth)):
            f = np.tanh(xs[layer] @ weights[layer])
            through = ((1.0 - f**2) * grad) @ weights[layer].T  # Jᵀ g with J = diag(1 − f²) Wᵀ
            grad = grad + through if kind == "residual" else through
            norms.append(np.linalg.norm(grad))
        out[kind] = np.array(norms)
        if kind == "residual":
            out["stream"] = np.array([np.linalg.norm(x) for x in xs])
    return out


def previous_token_batch(rng, batch: int, length: int = 6, d_content: int = 4):
    """``(x, y)``, each ``(batch, length, d_content + length)``: x_i = (content c_i, one-hot of position i),
    y_i = (c_(i-1), 0), the previous position's content (position 0: its own). Only attention can move
    content between positions, and only the position features say which position is the previous one."""
    content = rng.standard_normal((batch, length, d_content))
    position = np.broadcast_to(np.eye(length), (batch, length, length))
    previous = np.concatenate([content[:, :1], content[:, :-1]], axis=1)  # (B, T, d_content): c_(i-1)
    return np.concatenate([content, position], axis=-1), np.concatenate([previous, np.zeros_like(position)], axis=-1)


def attention_layer_backward(x, w_q, w_k, w_v, w_o, n_heads, d_out, causal=False):
    """``(dx, dw_q, dw_k, dw_v, dw_o)`` of ``y = MultiHeadAttention(x)`` (no bias) given ``d_out = ∂L/∂y``.

    x ``(B, T, d_model)``, w_q, w_k, w_v ``(d_model, H·d_k)``, w_o ``(H·d_k, d_model)``. The forward's steps
    in reverse: W_O (a matrix product), the merge (its backward is a split), attention (``attention_backward``,
    every head at once), the split (its backward is a merge), the three projections, whose gradients
    with respect to x add up.
    """
    b, t, _ = x.shape
    split = lambda a: a.reshape(b, t, n_heads, -1).transpose(0, 2, 1, 3)  # noqa: E731  (B, T, H·d_k) -> (B, H, T, d_k)
    merge = lambda a: a.transpose(0, 2, 1, 3).reshape(b, t, -1)  # noqa: E731  (B, H, T, d_k) -> (B, T, H·d_k)
    flat = lambda a: a.reshape(b * t, -1)  # noqa: E731  (B, T, n) -> (B·T, n): every position is a row
    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)  # 1-2) project, split
    o, _ = scaled_dot_product_attention(q, k, v, causal=causal)  # 3) attend
    a = merge(o)  # 4) merge: (B, T, H·d_k)
    dw_o = flat(a).T @ flat(d_out)  # 5) y = a W_O: dW_O = aᵀ dy, da = dy W_Oᵀ
    da = d_out @ w_o.T
    dq, dk, dv = attention_backward(q, k, v, split(da), causal=causal)  # the merge's backward is a split
    dq, dk, dv = merge(dq), merge(dk), merge(dv)  # the split's backward is a merge
    dx = dq @ w_q.T + dk @ w_k.T + dv @ w_v.T  # x feeds three projections: their gradients add
    return dx, flat(x).T @ flat(dq), flat(x).T @ flat(dk), flat(x).T @ flat(dv), dw_o


def train_attention_layer(steps: int = 300, *, lr: float = 0.03, batch: int = 16, n_heads: int = 2, seed: int = 0):
    """Train ``MultiHeadAttention`` (causal) by hand on :func:`previous_token_batch` with Adam and the mean
    squared error: ``(losses, layer)``, the loss before each step and the trained layer."""
    length = 6
    layer = MultiHeadAttention(4 + length, n_heads, seed=seed)
    params = {name: getattr(layer, name) for name in ("w_q", "w_k", "w_v", "w_o")}
    optimizer, rng, losses = Adam(params, lr=lr), np.random.default_rng(seed + 1), []
    for _ in range(steps):
        x, y = previous_token_batch(rng, batch, length)
        for name, w in params.items():
            setattr(layer, name, w)
        residual = layer(x, causal=True) - y
        losses.append(float(np.mean(residual**2)))
        grads = attention_layer_backward(x, *params.values(), n_heads, 2 * residual / residual.size, causal=True)[1:]
        optimizer.step(dict(zip(params, grads, strict=True)))
    for name, w in params.items():
        setattr(layer, name, w)
    return losses, layer


def attention_layer_weights(layer, x, causal=True):
    """The attention weights ``(B, H, T, T)`` of ``layer`` (a ``MultiHeadAttention``) on x ``(B, T, d_model)``."""
    b, t, _ = x.shape
    q = (x @ layer.w_q).reshape(b, t, layer.n_heads, -1).transpose(0, 2, 1, 3)  # (B, H, T, d_k)
    k = (x @ layer.w_k).reshape(b, t, layer.n_heads, -1).transpose(0, 2, 1, 3)
    return scaled_dot_product_attention(q, k, k, causal=causal)[1]  # the values do not change the weights


def learning_results() -> dict:
    """Every run the learning notebook's, the block notebook's and notebook 12's figures draw, as plain lists:
    stored by ``tools/store_results.py`` in ``course/data/learning.json`` (see ``course/results.py``), so that
    the figures command draws them and trains nothing."""
    vocab, inputs, targets = bigram_pairs()
    losses, layer = train_attention_layer()
    probe = previous_token_batch(np.random.default_rng(7), 64)[0]
    return {
        "regression": {str(lr): path.tolist() for lr, path in regression_runs().items()},
        "bowl": {name: path.tolist() for name, path in bowl_runs().items()},
        "bigram": {"floor": bigram_floor(inputs, targets, len(vocab)),
                   "runs": [[method, lr, scale, train_bigram(method, lr, 100, loss_scale=scale)]
                            for method, lr in (("gd", 100.0), ("adam", 0.3)) for scale in (1.0, 0.1)]},
        "layer": {"losses": losses, "weights": attention_layer_weights(layer, probe).mean(axis=0).tolist()},
        "residual": {kind: norms.tolist() for kind, norms in residual_gradient_norms().items()},
    }
