"""Interactive figures of serving: the paged KV cache step by step, ring attention rotation by rotation.

They extend ``serving_paged_blocks.png`` and ``serving_ring.png``. The paged figure runs a script of requests on the
package's :class:`PagedKVCache` and draws its block tables, reference counts and the pool's contents
(each token's position is written into the pool, and read back from it). The ring figure runs the ring
with the package's online-softmax engine (``flash.softmax_state``, ``flash.online_softmax_merge``) round
by round, and checks its outputs, bytes sent and work per device against ``ring_attention`` and
``ring_work``.
"""

from __future__ import annotations

import math

import numpy as np

from ... import PagedKVCache, causal_mask, ring_attention, ring_work, scaled_dot_product_attention
from ...flash import online_softmax_merge, softmax_state
from .kit import GREY, PALE, SEQUENCE, legend, panel_title
from .player import Frame, InteractiveFigure, choice, steps
from .scene import Cells, Lines, Rect, Text, arrow, mask_rects

__all__ = ["paged_cache_steps", "ring_steps"]

# --- the paged KV cache -------------------------------------------------------------------------------

N_BLOCKS, BLOCK = 12, 4
# (what happens, operation): "new" starts a sequence and appends n tokens, "append" n more, "fork" shares
# a sequence's blocks, "free" ends one. Sequences are numbered as the cache hands out their ids.
SCRIPT = (
    ("an empty pool", None),
    ("request s0 arrives: its 6-token prompt is cached", ("new", 6)),
    ("request s1 arrives with 3 tokens", ("new", 3)),
    ("s0 decodes 1 token", ("append", 0, 1)),
    ("s2 = fork(s0): a second sample of the same prompt shares s0's blocks (reference count 2)", ("fork", 0)),
    ("s2 decodes 1 token: its last block is shared and partly full, so it is copied first (copy on write)",
     ("append", 2, 1)),
    ("s0 decodes 2 tokens: its last block fills, a new block is taken from the pool", ("append", 0, 2)),
    ("s1 decodes 6 tokens", ("append", 1, 6)),
    ("s1 is finished and freed: its blocks go back to the pool", ("free", 1)),
    ("request s3 arrives with 5 tokens and reuses the freed blocks", ("new", 5)),
    ("s0 is freed: block 0 stays, s2 still reads it (its reference count drops to 1)", ("free", 0)),
    ("s2 decodes 4 tokens", ("append", 2, 4)),
)


def _paged_snapshots():
    """Run SCRIPT on a PagedKVCache; after each step: tables, lengths, refs and each slot's stored position."""
    cache = PagedKVCache(N_BLOCKS, BLOCK, 1, 1)

    def write(seq, n):  # token positions as the keys, so the pool shows which token each slot holds
        start = cache.lengths[seq]
        k = np.arange(start, start + n, dtype=float).reshape(1, n, 1)  # (H_kv, T, d_k)
        cache.append(seq, k, k)

    snapshots = []
    for _, op in SCRIPT:
        if op is not None and op[0] == "new":
            write(cache.allocate(), op[1])
        elif op is not None and op[0] == "append":
            write(op[1], op[2])
        elif op is not None and op[0] == "fork":
            cache.fork(op[1])
        elif op is not None:
            cache.free(op[1])
        for seq in cache.tables:  # the pool holds what was written, read back through the block table
            np.testing.assert_array_equal(np.asarray(cache.gather(seq)[0])[0, :, 0], np.arange(cache.lengths[seq]))
        snapshots.append(({s: list(t) for s, t in cache.tables.items()}, dict(cache.lengths), list(cache.refs),
                          np.asarray(cache.k_pool)[:, 0, :, 0].copy(), cache.blocks_in_use))
    return snapshots


def paged_cache_steps() -> InteractiveFigure:
    """Append, fork (copy on write) and free: the block tables and the pool after each request."""
    snapshots = _paged_snapshots()
    slot, bw, bh = 22.0, 88.0, 34.0

    def corner(b):
        return 20 + (b % 6) * 106, 56 + (b // 6) * 86

    def draw(step):
        tables, lengths, refs, pool, in_use = snapshots[step]
        owners = {}
        for seq, table in tables.items():
            for c, b in enumerate(table):
                owners.setdefault(b, []).append((seq, c))
        shapes = []
        for b in range(N_BLOCKS):
            x, y = corner(b)
            users = owners.get(b, [])
            if not users:
                shapes += [Text(x + bw / 2, y + bh / 2 + 4, "free", 10, "middle", GREY)]
                continue
            filled = max(min(BLOCK, lengths[s] - c * BLOCK) for s, c in users)  # slots holding tokens
            colour = SEQUENCE[users[0][0]]
            shapes += [Rect(x, y, slot * filled, bh, colour, hatch="#fff" if refs[b] > 1 else None),
                       *(Text(x + slot * (o + 0.5), y + bh / 2 + 4, str(int(pool[b, o])), 11, "middle", "#fff", True)
                         for o in range(filled)),
                       Text(x, y + bh + 14, " ".join(f"s{s}[{c}]" for s, c in users)
                            + (f"  refs {refs[b]}" if refs[b] > 1 else ""), 10)]
        table_lines = [Text(20, 250, "block tables (sequence: blocks in order)", 11, bold=True)]
        for row, seq in enumerate(sorted(tables)):
            table_lines.append(Text(20, 270 + 17 * row, f"s{seq}: {tables[seq]}   {lengths[seq]} tokens", 11,
                                    fill=SEQUENCE[seq], mono=True))
        tokens = sum(lengths.values())
        caption = (f"Step {step}: {SCRIPT[step][0]}.",
                   f"{in_use} of {N_BLOCKS} blocks in use, holding {tokens} token(s) of {len(tables)} live "
                   f"sequence(s); token t of a sequence lives in block table[t // {BLOCK}], slot t % {BLOCK}.")
        return Frame({"pool": shapes, "tables": table_lines}, caption)

    static = [panel_title(20, 24, f"one pool of {N_BLOCKS} blocks of {BLOCK} token slots (numbers: token positions)")]
    for b in range(N_BLOCKS):
        x, y = corner(b)
        static += [Text(x, y - 5, f"block {b}", 10, fill="#444"),
                   Lines(tuple((x + slot * o, y, x + slot * o, y + bh) for o in range(1, BLOCK)), "#ddd", 1)]
    frames = [Rect(*corner(b), bw, bh, "none", "#666", 1) for b in range(N_BLOCKS)]
    static += legend(330, 250, [(f"s{s}", SEQUENCE[s], None) for s in range(4)], gap=40)
    static += legend(330, 272, [("shared by two sequences", SEQUENCE[0], "#fff")])
    controls = [steps("step", "request", range(len(SCRIPT)), 0)]
    return InteractiveFigure(
        "paged_cache_steps", "A paged KV cache: block tables, copy on write and freed blocks", controls,
        lambda step: draw(step).layered(static, frames),
        width=660, height=345, png="20_interactive_paged.png", twin=[(5,), (10,)])


# --- ring attention -----------------------------------------------------------------------------------

RING_N, RING_DEVICES, RING_D = 16, 4, 4


def _chunks(zigzag):
    """Each device's chunks of positions: chunk r of N, or chunks r and 2N - 1 - r of 2N (ring_attention's rule)."""
    parts = 2 * RING_DEVICES if zigzag else RING_DEVICES
    size = RING_N // parts
    spans = [(c * size, (c + 1) * size) for c in range(parts)]
    if not zigzag:
        return [[spans[r]] for r in range(RING_DEVICES)]
    return [[spans[r], spans[parts - 1 - r]] for r in range(RING_DEVICES)]


def _ring_rounds(causal, zigzag, seed=0):
    """Run the ring round by round: after each round, the pairs computed, each query row's output estimate
    and the bytes sent; checked against ring_attention, ring_work and sdpa."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((RING_N, RING_D)) for _ in range(3))
    exact = np.asarray(scaled_dot_product_attention(q, k, v, causal=causal)[0])
    out_ring, bytes_ring = ring_attention(q, k, v, n_devices=RING_DEVICES, causal=causal, zigzag=zigzag)
    np.testing.assert_allclose(out_ring, exact, rtol=1e-12, atol=1e-14)
    allowed = np.asarray(causal_mask(RING_N)) if causal else np.ones((RING_N, RING_N), dtype=bool)
    scale, place = 1 / math.sqrt(RING_D), _chunks(zigzag)
    empty = (np.full((RING_N, 1), -np.inf), np.zeros((RING_N, 1)), np.zeros((RING_N, RING_D)))
    m, l, acc = (a.copy() for a in empty)
    work, sent, rounds = [0] * RING_DEVICES, 0, [([], None, 0)]
    for step in range(RING_DEVICES):
        pairs = []
        for r in range(RING_DEVICES):
            held = place[(r - step) % RING_DEVICES]  # the key/value chunks device r holds in this round
            for i0, i1 in place[r]:
                for j0, j1 in held:
                    tile = allowed[i0:i1, j0:j1]
                    if not tile.any():  # wholly in the future: skipped, as ring_attention skips it
                        pairs.append((r, (i0, i1), (j0, j1), False))
                        continue
                    scores = np.where(tile, (q[i0:i1] * scale) @ k[j0:j1].T, -np.inf)  # (T_r, S_b)
                    state = (m[i0:i1], l[i0:i1], acc[i0:i1])
                    m[i0:i1], l[i0:i1], acc[i0:i1] = online_softmax_merge(state, softmax_state(scores, v[j0:j1]))
                    work[r] += (i1 - i0) * (j1 - j0)
                    pairs.append((r, (i0, i1), (j0, j1), True))
        if step < RING_DEVICES - 1:  # every device sends its key and value chunks on to the next one
            sent += k.nbytes + v.nbytes
        with np.errstate(invalid="ignore", divide="ignore"):
            estimate = np.where(l > 0, acc / np.where(l > 0, l, 1), np.nan)
        rounds.append((pairs, estimate, sent))
    np.testing.assert_allclose(rounds[-1][1], exact, rtol=1e-12, atol=1e-14)
    assert sent == bytes_ring, (sent, bytes_ring)
    assert work == ring_work(RING_N, RING_N, RING_DEVICES, causal=causal, zigzag=zigzag), work
    return rounds, exact


def ring_steps() -> InteractiveFigure:
    """Step through the rotations: which device holds which key chunk, the pairs computed, the bytes sent."""
    runs = {(c, z): _ring_rounds(bool(c), bool(z)) for c in (0, 1) for z in (0, 1)}
    allowed = {0: np.ones((RING_N, RING_N), dtype=bool), 1: np.asarray(causal_mask(RING_N))}  # drawn: pairs' cells
    gx, gy, unit = 60.0, 60.0, 12.0  # the (query position, key position) grid: 16 x 16 cells of 12
    dev_xy = [(450, 60), (570, 150), (450, 240), (330, 150)]  # the ring, clockwise, clear of the grid (x <= 252)

    def draw(causal, zigzag, step):
        rounds, exact = runs[causal, zigzag]
        place = _chunks(bool(zigzag))
        cells, frames, skipped = {}, [], []  # device -> its computed (query, key) cells; this round's pairs
        for done, (pairs, _, _) in enumerate(rounds[1:step + 1], start=1):
            for r, (i0, i1), (j0, j1), computed in pairs:
                if not computed:
                    skipped.append((j0, i0, j1 - j0, i1 - i0))
                    continue
                tile = allowed[causal][i0:i1, j0:j1]  # the cells of the pair a causal mask keeps
                cells.setdefault(r, []).extend((j0 + x, i0 + y, w, h) for x, y, w, h in mask_rects(tile))
                if done == step:
                    frames.append((j0, i0, j1 - j0, i1 - i0))
        shapes = [*(Cells(tuple(cells[r]), SEQUENCE[r], origin=(gx, gy), unit=unit) for r in sorted(cells)),
                  Cells(tuple(skipped), PALE, hatch=GREY, origin=(gx, gy), unit=unit),
                  Cells(tuple(frames), "none", "#111", 2, origin=(gx, gy), unit=unit)]
        _, estimate, sent = rounds[step]
        devices = []
        for r, (x, y) in enumerate(dev_xy):
            held = place[(r - step + 1) % RING_DEVICES] if step else place[r]
            q_text = " ".join(f"{i0}-{i1 - 1}" for i0, i1 in place[r])
            k_text = " ".join(f"{j0}-{j1 - 1}" for j0, j1 in held)
            rows = [i for i0, i1 in place[r] for i in range(i0, i1)]
            if step == 0:
                err = "output: not started"
            else:
                e = np.abs(estimate[rows] - exact[rows])
                err = "output: exact" if np.nanmax(e) < 1e-9 else f"output off by {np.nanmax(e):.2f}"
            devices += [Rect(x - 62, y - 26, 124, 58, "#fff", SEQUENCE[r], 2.5),
                        Text(x, y - 10, f"device {r}", 11, "middle", SEQUENCE[r], True),
                        Text(x, y + 5, f"queries {q_text}", 10, "middle"),
                        Text(x, y + 18, f"holds K,V {k_text}", 10, "middle", bold=True),
                        Text(x, y + 44, err, 10, "middle", "#444")]
        caption = (("Before the first round: each device holds its own queries and its own key/value chunk."
                    if step == 0 else
                    f"Round {step}: each device attends its queries to the key/value chunk it holds and folds the "
                    "result into their running (max, sum, accumulator)."),
                   f"Bytes sent so far: {sent} (each round but the last, every device passes its K and V chunks "
                   "to the next).",
                   ("Causal: pairs wholly in the future are skipped (grey);" if causal else "Not causal: every pair "
                    "is computed;") + (" zigzag placement balances the work." if zigzag else
                                       " contiguous placement."))
        return Frame({"pairs": shapes, "devices": devices}, caption)

    ring_arrows = []
    for r in range(RING_DEVICES):
        (x0, y0), (x1, y1) = dev_xy[r], dev_xy[(r + 1) % RING_DEVICES]
        dx, dy = x1 - x0, y1 - y0
        norm = math.hypot(dx, dy)
        ring_arrows += arrow(x0 + dx / norm * 70, y0 + dy / norm * 45, x1 - dx / norm * 70, y1 - dy / norm * 45,
                             GREY, 1.5, 8)
    static = [panel_title(gx - 40, 24, "(query, key) pairs: colour = device"),
              Text(gx + 8 * unit, gy - 8, "key position", 10, "middle", "#444"),
              Text(gx - 6, gy + 8 * unit, "query", 10, "end", "#444"),
              Rect(gx, gy, RING_N * unit, RING_N * unit, "none", "#999", 1),
              *legend(gx - 40, 280, [("computed this round (framed)", SEQUENCE[0], None),
                                     ("skipped (future)", PALE, GREY)]),
              *ring_arrows, Text(450, 154, "K, V pass on", 10, "middle", GREY)]
    controls = [choice("causal", "mask", ("none", "causal"), 1),
                choice("zigzag", "placement", ("contiguous", "zigzag"), 0),
                steps("step", "round", range(RING_DEVICES + 1), 0)]
    return InteractiveFigure(
        "ring_steps", f"Ring attention over {RING_DEVICES} devices, round by round", controls,
        lambda c, z, s: draw(c, z, s).layered(static),
        width=660, height=320, png="20_interactive_ring.png", twin=[(1, 0, 2), (1, 1, 4)])
