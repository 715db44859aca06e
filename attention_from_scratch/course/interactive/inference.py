"""Interactive figures of efficient inference: RoPE's rotating pairs, the online softmax tile by tile, the KV cache.

They extend ``16_rope_relative_position.png``, ``18_flash_tiling.png`` and ``15_kv_cache_decoding.png``.
The numbers come from the package: ``apply_rope`` and ``dot``; FlashAttention's own engine
(``flash.softmax_state``, ``flash.online_softmax_merge``) checked against ``scaled_dot_product_attention``
and ``flash_attention``; ``MultiHeadAttention`` decoding with its ``KVCache``, checked against the full pass.
"""

from __future__ import annotations

import math

import numpy as np

from ... import MultiHeadAttention, apply_rope, dot, flash_attention, rope_frequencies, scaled_dot_product_attention
from ...flash import online_softmax_merge, softmax_state
from .kit import BLUE, GREY, ORANGE, PALE, RED, SEQUENCE, heat_cells, legend, panel_title, x_ticks, y_axis
from .player import Frame, InteractiveFigure, choice, slider, steps
from .scene import Bars, Cells, Circle, Line, Lines, Rect, Text, arrow

__all__ = ["kv_cache_steps", "online_softmax_steps", "rope_dials"]


# --- RoPE ----------------------------------------------------------------------------------------------

ROPE_D, ROPE_THETA, ROPE_SHIFTS, ROPE_DISTANCES = 8, 100.0, 12, 5


def rope_dials() -> InteractiveFigure:
    """Rotate q (at m) and k (at n) pair by pair: shifting both positions turns both arrows, q·k stays put."""
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal(ROPE_D), rng.standard_normal(ROPE_D)
    freqs = rope_frequencies(ROPE_D, theta=ROPE_THETA)  # θ_r = 100^(-2r/d): every pair turns visibly
    n_pos = ROPE_SHIFTS + ROPE_DISTANCES - 1
    qs = np.asarray(apply_rope(np.tile(q, (n_pos, 1)), range(n_pos), freqs=freqs))  # (P, d): q at every position
    ks = np.asarray(apply_rope(np.tile(k, (n_pos, 1)), range(n_pos), freqs=freqs))
    pair_q, pair_k = qs.reshape(n_pos, -1, 2), ks.reshape(n_pos, -1, 2)  # (P, d/2, 2): the pairs
    scores = np.asarray(dot(qs[:, None, :], ks[None, :, :]))  # (P, P): q_m · k_n
    contrib = np.asarray(dot(pair_q[:, None], pair_k[None, :]))  # (P, P, d/2): each pair's share of q_m · k_n
    radius = max(np.linalg.norm(pair_q[0], axis=-1).max(), np.linalg.norm(pair_k[0], axis=-1).max())
    centres = [(85 + 150 * (i % 2), 95 + 140 * (i // 2)) for i in range(ROPE_D // 2)]
    hx, hy, cell = 350.0, 44.0, 150.0 / n_pos
    c_max = float(np.abs(contrib).max())
    base = 292.0  # the zero line of the pairs' shares

    def draw(s, delta):
        m, n = s + delta, s
        dials = []
        for i, (cx, cy) in enumerate(centres):
            for vec, colour in ((pair_q[m, i], BLUE), (pair_k[n, i], ORANGE)):
                x, y = cx + 52 * vec[0] / radius, cy - 52 * vec[1] / radius  # y up on the dial
                dials += arrow(cx, cy, x, y, colour, 2.2, 8)
        bars_x = [380 + 40 * i for i in range(ROPE_D // 2)]
        share = contrib[m, n]
        parts = {
            "dials": dials,
            "marker": [Rect(hx + cell * n, hy + cell * m, cell, cell, "none", "#111", 2.5)],
            "score": [Text(540, 70, f"m = {m}, n = {n}", 13), Text(540, 92, f"m − n = {delta}", 13),
                      Text(540, 122, f"q_m·k_n = {scores[m, n]:.3f}", 14, bold=True)],
            "shares": [Bars(tuple(bars_x), tuple(base - 40 * float(v) / c_max for v in share), base, 22, BLUE),
                       *(Text(x, base - 40 * float(v) / c_max + (13 if v < 0 else -4), f"{v:.2f}", 10, "middle")
                         for x, v in zip(bars_x, share, strict=True))],
        }
        caption = (f"The query sits at position m = {m}, the key at n = {n}: pair r of each is turned by "
                   f"its position times θ_r = 100^(−2r/d) (base 100 here, so that every pair turns visibly; "
                   "models use 10,000).",
                   f"The angle between them in pair r is their unturned angle plus (m − n)·θ_r, so q·k = "
                   f"{scores[m, n]:.3f} depends on m − n = {delta} only: move the shift and both arrows turn "
                   "together while the score stays put.")
        return Frame(parts, caption)

    static = [*(Circle(cx, cy, 52, "none", "#bbb") for cx, cy in centres),
              *(Text(cx, cy - 60, f"pair {i}: θ = {float(freqs[i]):.3g}", 10, "middle") for i, (cx, cy)
                in enumerate(centres)),
              *legend(20, 325, [("q, rotated by m·θ_r", BLUE, None), ("k, rotated by n·θ_r", ORANGE, None)]),
              *heat_cells(scores, float(scores.min()), float(scores.max()), (hx, hy), cell),
              Text(hx, hy - 10, "q_m·k_n: constant along diagonals", 11, bold=True),
              Text(hx - 4, hy + 75, "m", 11, "end"), Text(hx + 75, hy + 166, "n", 11, "middle"),
              panel_title(350, 222, "each pair's share of q·k", 11),
              *x_ticks(base + 66, [(380 + 40 * i, f"pair {i}") for i in range(ROPE_D // 2)], 9),
              Line(((360, base), (530, base)), GREY, 1)]
    controls = [slider("shift", "shift both positions by", range(ROPE_SHIFTS), 0),
                slider("delta", "distance m − n", range(ROPE_DISTANCES), 2)]
    return InteractiveFigure("rope_dials", "RoPE turns each pair of q and k by its position: q·k depends on m − n",
                             controls, lambda s, d: draw(s, d).layered(static), width=680, height=365,
                             png="16_interactive_rope.png", twin=[(0, 2), (7, 2)])


# --- the online softmax (FlashAttention), one query block tile by tile ----------------------------------

FLASH_T, FLASH_S, FLASH_D, FLASH_BLOCKS = 4, 16, 4, (2, 4, 8)


def _online_states(seed=0):
    """For each key-tile size: the state (m, l, acc) of the query block after each tile, and the exact output."""
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((FLASH_T, FLASH_D)), rng.standard_normal((FLASH_S, FLASH_D))
    v = rng.standard_normal((FLASH_S, 2))  # d_v = 2: each output is a point in the plane
    exact = scaled_dot_product_attention(q, k, v)[0]
    scale = 1 / math.sqrt(FLASH_D)
    scores = (q * scale) @ k.T  # (T, S): drawn as the tiles; each tile's state comes from the engine below
    runs = {}
    for block in FLASH_BLOCKS:
        state = (np.full((FLASH_T, 1), -np.inf), np.zeros((FLASH_T, 1)), np.zeros((FLASH_T, 2)))  # empty: neutral
        history = [state]
        for j0 in range(0, FLASH_S, block):
            state = online_softmax_merge(state, softmax_state(scores[:, j0:j0 + block], v[j0:j0 + block]))
            history.append(state)
        final = history[-1][2] / history[-1][1]
        np.testing.assert_allclose(final, exact, rtol=1e-12)  # the tiles' result is the exact attention
        np.testing.assert_allclose(flash_attention(q, k, v, block_size=(FLASH_T, block)), exact, rtol=1e-12)
        runs[block] = history
    return scores, np.asarray(exact), runs


def online_softmax_steps() -> InteractiveFigure:
    """Step through the key tiles of one query block: running max m, sum l, accumulator acc, output acc / l."""
    scores, exact, runs = _online_states()
    gx, gy, cell = 40.0, 50.0, 20.0
    px, py, half = 530.0, 150.0, 95.0  # the output plane: centre and half-width
    lim = max(float(np.abs(exact).max()),
              max(float(np.abs(h[2] / h[1]).max()) for run in runs.values() for h in run[1:])) * 1.1
    n_steps = FLASH_S // min(FLASH_BLOCKS) + 1

    def plane(xy):
        return px + half * xy[0] / lim, py - half * xy[1] / lim

    def draw(b, step):
        block = FLASH_BLOCKS[b]
        history = runs[block]
        seen = step * block
        m, l, acc = history[step]
        parts = {
            # keys not read yet: their scores are not computed, so they are hidden (and labelled)
            "unseen": [Cells(((seen, 0, FLASH_S - seen, FLASH_T),), PALE, origin=(gx, gy), unit=cell),
                       Text(gx + cell * (seen + FLASH_S) / 2, gy + cell * FLASH_T / 2 + 4, "not read yet", 10,
                            "middle", "#666")] if seen < FLASH_S else [],
            "tiles": [Lines(tuple((gx + cell * j, gy - 6, gx + cell * j, gy + cell * FLASH_T + 6)
                                  for j in range(0, FLASH_S + 1, block)), "#111", 1.5)],
            "current": [Rect(gx + cell * (seen - block), gy - 4, cell * block, cell * FLASH_T + 8, "none", RED, 3)]
            if step else [],
        }
        table = [Text(gx, 190, "row  m (max)  l (sum)   acc            acc / l", 11, mono=True, bold=True)]
        for r in range(FLASH_T):
            if step:
                out = acc[r] / l[r, 0]
                line = (f"q{r}  {m[r, 0]:7.3f}  {l[r, 0]:7.3f}   ({acc[r, 0]:5.2f}, {acc[r, 1]:5.2f})"
                        f"  ({out[0]:6.3f}, {out[1]:6.3f})")
            else:
                line = f"q{r}     -inf    0.000   ( 0.00,  0.00)  not defined (0 / 0)"
            table.append(Text(gx, 210 + 18 * r, line, 11, fill=SEQUENCE[r], mono=True))
        trail = []
        for r in range(FLASH_T):
            pts = [plane(h[2][r] / h[1][r, 0]) for h in history[1:step + 1]]
            if len(pts) > 1:
                trail.append(Line(tuple(pts), SEQUENCE[r], 1.5))
            trail += [Circle(x, y, 3, SEQUENCE[r]) for x, y in pts]
        parts["table"], parts["trail"] = table, trail
        if step == 0:
            caption = (f"Key tiles of {block}: before the first tile, each row's state is m = -inf, l = 0, acc = 0.",
                       "Step forward: each tile's scores update the running max, rescale the old sum and "
                       "accumulator by exp(m_old − m_new), and add the tile's share.")
        else:
            err = float(np.abs(acc / l - exact).max())
            done = seen >= FLASH_S
            caption = (f"Key tiles of {block}: {seen} of {FLASH_S} keys seen after {step} tile(s).",
                       "All tiles seen: acc / l equals the attention output, up to rounding, for every tile size."
                       if done else f"The estimate acc / l is still {err:.3f} away from the exact output (the rings).")
        return Frame(parts, caption)

    lo, hi = float(scores.min()), float(scores.max())
    static = [
        panel_title(gx, 22, "scores of one query block (4 rows) against 16 keys"),
        *heat_cells(scores, lo, hi, (gx, gy), cell),
        Lines(tuple((gx, gy + cell * r, gx + cell * FLASH_S, gy + cell * r) for r in range(FLASH_T + 1)), "#fff", 1),
        *(Text(gx - 6, gy + cell * (r + 0.6), f"q{r}", 11, "end", SEQUENCE[r], True) for r in range(FLASH_T)),
        *x_ticks(gy + cell * FLASH_T + 18, [(gx + cell * (j + 0.5), str(j)) for j in range(0, FLASH_S, 2)]),
        Text(px - half, py - half - 10, "output acc / l (d_v = 2)", 11, bold=True),
        Rect(px - half, py - half, 2 * half, 2 * half, "none", "#bbb", 1),
        Lines(((px - half, py, px + half, py), (px, py - half, px, py + half)), "#ddd", 1),
        *(Circle(*plane(exact[r]), 8, "none", SEQUENCE[r]) for r in range(FLASH_T)),
        Rect(gx, 300, 24, 12, "none", RED, 3), Text(gx + 32, 310, "the tile just read", 10),
        Text(px - half, py + half + 16, "rings: the exact outputs", 10, fill="#444"),
    ]
    controls = [choice("block", "key tile size", FLASH_BLOCKS, 1),
                steps("step", "tiles read", range(n_steps), 0)]
    return InteractiveFigure("online_softmax_steps", "The online softmax: one query block, one key tile at a time",
                             controls, lambda b, s: draw(b, s).layered(static), width=640, height=330,
                             png="18_interactive_online_softmax.png", twin=[(1, 2), (1, 4)],
                             last={"step": lambda b, s: FLASH_S // FLASH_BLOCKS[b]})


# --- the KV cache, token by token ---------------------------------------------------------------------

WORDS = ("the", "cat", "sat", "on", "the", "warm", "mat", ".")
KV_D, KV_HEADS = 8, 2


def _decoding(seed=0):
    """Decode WORDS one token at a time with a KVCache; each step's cache and its weights (checked vs the full pass)."""
    mha = MultiHeadAttention(KV_D, KV_HEADS, seed=seed)
    x = np.random.default_rng(seed + 1).standard_normal((1, len(WORDS), KV_D))  # (B, T, d_model): the embeddings
    full = mha(x, causal=True)
    cache, d_head, out = mha.new_cache(), KV_D // KV_HEADS, []
    for t in range(len(WORDS)):
        y = mha(x[:, t:t + 1], causal=True, cache=cache)  # one new token: its q, k, v projected, the rest read
        np.testing.assert_allclose(y[0, 0], full[0, t], rtol=1e-10, atol=1e-12)  # = the full pass, row t
        q = (x[:, t:t + 1] @ mha.w_q).reshape(1, 1, KV_HEADS, d_head).transpose(0, 2, 1, 3)  # (B, H, 1, d_head)
        weights = np.asarray(scaled_dot_product_attention(q, cache.k, cache.v)[1])[0, :, 0]  # (H, t+1)
        out.append((len(cache), cache.nbytes, weights))
    return out


def kv_cache_steps() -> InteractiveFigure:
    """Step through decoding: the cache grows by one row; with no cache, every row is projected again."""
    run = _decoding()
    n = len(WORDS)
    cx, cy, row_h = 150.0, 66.0, 30.0
    bx = 420.0

    def draw(mode, t):
        length, nbytes, weights = run[t]
        cached = mode == 0
        new = [(0, t, 2, 1)] if cached else [(0, 0, 2, t + 1)]
        kept = [(0, 0, 2, t)] if cached and t else []
        parts = {
            "rows": [Cells(tuple(kept), "#a1d99b", origin=(cx, cy), unit=row_h),
                     Cells(tuple(new), "#fc9272", hatch="#a50f15", origin=(cx, cy), unit=row_h)],
            "now": [*arrow(cx - 48, cy + row_h * (t + 0.5), cx - 8, cy + row_h * (t + 0.5), "#111"),
                    Text(cx - 54, cy + row_h * (t + 0.5) + 4, f"new: {WORDS[t]!r}", 11, "end", bold=True)],
            "weights": [Bars(tuple(bx + 20 + 22 * j + 9 * h for j in range(t + 1)),
                             tuple(cy + row_h * n - 160 * float(w) for w in weights[h]), cy + row_h * n, 8,
                             (BLUE, ORANGE)[h]) for h in range(KV_HEADS)],
        }
        total = t + 1 if cached else (t + 1) * (t + 2) // 2
        how = "one per token" if cached else "a triangle: 1 + 2 + ... + t + 1"
        caption = (f"Step {t}: token {WORDS[t]!r} attends to {t + 1} key(s).",
                   (f"With the cache: 1 new row of k and v is projected and appended; the cache holds {length} "
                    f"token(s), {nbytes} bytes (float64, {KV_HEADS} heads of {KV_D // KV_HEADS}).") if cached else
                   f"With no cache: all {t + 1} rows of k and v are projected again, and nothing is kept.",
                   f"Rows projected so far: {total} ({how}).")
        return Frame(parts, caption)

    static = [
        panel_title(cx, 24, "keys and values of each token"),
        Text(cx + row_h, cy - 10, "K", 11, "middle", bold=True), Text(cx + row_h * 1.5, cy - 10, "V", 11, "middle",
                                                                     bold=True),
        *(Text(cx + 2 * row_h + 8, cy + row_h * (r + 0.65), f"{r}: {w}", 11) for r, w in enumerate(WORDS)),
        panel_title(bx - 10, 24, "the new query's weights"),
        *y_axis(bx, cy + row_h * n - 160, cy + row_h * n, [(cy + row_h * n - 160, "1"), (cy + row_h * n, "0")]),
        *x_ticks(cy + row_h * n + 16, [(bx + 24 + 22 * j, str(j)) for j in range(n)]),
        *legend(20, cy + row_h * n + 44, [("read from the cache", "#a1d99b", None),
                                          ("projected this step", "#fc9272", "#a50f15"),
                                          ("head 0", BLUE, None), ("head 1", ORANGE, None)]),
    ]
    grid = [Lines(tuple((cx, cy + row_h * r, cx + 2 * row_h, cy + row_h * r) for r in range(n + 1))
                  + tuple((cx + row_h * c, cy, cx + row_h * c, cy + row_h * n) for c in range(3)), "#999", 1)]
    controls = [choice("mode", "decoding", ("with a KV cache", "no cache: recompute the prefix"), 0),
                steps("t", "token", range(n), 0)]
    return InteractiveFigure("kv_cache_steps", "The KV cache during decoding: one new row per token",
                             controls, lambda a, b: draw(a, b).layered(static, grid), width=640, height=370,
                             png="15_interactive_kv_cache.png", twin=[(0, 5), (1, 5)])
