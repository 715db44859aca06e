"""A paged KV cache (vLLM's PagedAttention, Kwon et al. 2023): fixed-size blocks in one pool.

A contiguous cache reserves ``max_len`` slots per sequence up front, and most of them stay empty: real
requests have widely spread lengths. A paged cache cuts memory into blocks of ``block_size`` tokens,
all in one pool ``(n_blocks, H_kv, block_size, d)``, and gives each sequence a **block table**: the list
of the blocks that hold its tokens, in order. Token t of a sequence lives in block
``table[t // block_size]`` at offset ``t % block_size``; a sequence wastes at most ``block_size - 1``
slots (its last block's tail) instead of ``max_len - length``.

* :meth:`PagedKVCache.allocate` starts a sequence (an empty table), :meth:`~PagedKVCache.append` writes
  tokens (taking a free block whenever the last one is full), :meth:`~PagedKVCache.free` gives its
  blocks back to the pool.
* :meth:`~PagedKVCache.fork` starts a sequence that shares every block of another (a common prompt
  prefix, parallel samples): blocks carry a reference count, and a shared block is copied the first
  time one of its owners writes into it (**copy on write**); full shared blocks are never copied.
* :func:`paged_attention` attends a batch of sequences of different lengths by reading the pool
  through their block tables, one block column at a time, each folded into FlashAttention's online-softmax
  state (``flash.online_softmax_update``): the dense ``(B, S, d)`` keys are never assembled.

Legend: B sequences, H query heads, H_kv key/value heads (H = H_kv unless grouped), T new tokens, S a
sequence's cached tokens, d feature width.
"""

from __future__ import annotations

import math

from .flash import empty_state, finish_state, online_softmax_update
from .infra.attention_checks import check_cache_entries
from .infra.backend import as_common_float, check_namespace, device_of, get_namespace, narrow, widen
from .infra.checks import check_float_dtype, check_positive_int, check_real, check_same_place
from .masking import masked_scores

__all__ = ["PagedKVCache", "contiguous_slots", "paged_attention", "paged_slots"]


def paged_slots(lengths, block_size: int) -> int:
    """Token slots a paged cache allocates for these sequence lengths: ``Σ ceil(L / block_size) · block_size``."""
    block_size = check_positive_int(block_size, "block_size")
    return sum(-(-check_positive_int(n, "lengths", minimum=0) // block_size) * block_size for n in lengths)


def contiguous_slots(lengths, max_len: int) -> int:
    """Token slots contiguous buffers allocate: ``max_len`` per sequence, whatever its length."""
    max_len = check_positive_int(max_len, "max_len")
    lengths = [check_positive_int(n, "lengths", minimum=0) for n in lengths]
    if any(n > max_len for n in lengths):
        raise ValueError(f"every length must be <= max_len={max_len}, got {max(lengths)}")
    return len(lengths) * max_len


class PagedKVCache:
    """One pool of ``n_blocks`` blocks of ``block_size`` tokens, and a block table per sequence.

    Pools ``k_pool (n_blocks, H_kv, block_size, d_k)`` and ``v_pool (n_blocks, H_kv, block_size, d_v)``
    live on ``xp``/``device`` with ``dtype`` (default float64). ``tables[seq]`` is a sequence's block
    list, ``lengths[seq]`` its token count, ``refs[b]`` how many sequences use block b.
    """

    def __init__(self, n_blocks, block_size, n_kv_heads, d_k, d_v=None, *, dtype=None, xp=None, device=None):
        self.n_blocks = check_positive_int(n_blocks, "n_blocks")
        self.block_size = check_positive_int(block_size, "block_size")
        self.n_kv_heads, self.d_k = check_positive_int(n_kv_heads, "n_kv_heads"), check_positive_int(d_k, "d_k")
        self.d_v = self.d_k if d_v is None else check_positive_int(d_v, "d_v")
        xp = get_namespace() if xp is None else check_namespace(xp)
        dtype = xp.float64 if dtype is None else dtype
        check_float_dtype(dtype, xp)  # an integer pool would truncate every key and value
        shape = (self.n_blocks, self.n_kv_heads, self.block_size)
        self.k_pool = xp.zeros((*shape, self.d_k), dtype=dtype, device=device)
        self.v_pool = xp.zeros((*shape, self.d_v), dtype=dtype, device=device)
        self.free_blocks = list(range(self.n_blocks - 1, -1, -1))  # pop() hands out block 0 first
        self.refs = [0] * self.n_blocks
        self.tables: dict[int, list[int]] = {}
        self.lengths: dict[int, int] = {}
        self._next_id = 0

    @property
    def block_nbytes(self) -> int:
        """Bytes of one block, keys and values."""
        xp = get_namespace(self.k_pool)
        per_slot = self.n_kv_heads * (self.d_k + self.d_v) * xp.finfo(self.k_pool.dtype).bits // 8
        return self.block_size * per_slot

    @property
    def blocks_in_use(self) -> int:
        return self.n_blocks - len(self.free_blocks)

    def _seq(self, seq):
        if seq not in self.tables:
            raise KeyError(f"no sequence {seq!r} in this cache (live sequences: {sorted(self.tables)})")
        return seq

    def allocate(self) -> int:
        """Start an empty sequence; return its id."""
        seq, self._next_id = self._next_id, self._next_id + 1
        self.tables[seq], self.lengths[seq] = [], 0
        return seq

    def fork(self, seq) -> int:
        """A new sequence sharing all of ``seq``'s blocks (its prefix); writes into a shared block copy it."""
        table = list(self.tables[self._seq(seq)])  # checked before anything is allocated
        new = self.allocate()
        self.tables[new], self.lengths[new] = table, self.lengths[seq]
        for b in self.tables[new]:
            self.refs[b] += 1
        return new

    def free(self, seq) -> None:
        """End ``seq``: every block no other sequence uses goes back to the pool."""
        for b in self.tables.pop(self._seq(seq)):
            self.refs[b] -= 1
            if self.refs[b] == 0:
                self.free_blocks.append(b)
        del self.lengths[seq]

    def _take_block(self) -> int:
        b = self.free_blocks.pop()
        self.refs[b] = 1
        return b

    def append(self, seq, k, v) -> None:
        """Write new tokens ``k (H_kv, T, d_k)``, ``v (H_kv, T, d_v)`` at the end of sequence ``seq``.

        Checked in full (shapes, dtype, device, free blocks) before anything is written.
        """
        self._seq(seq)
        shapes = {name: (("H_kv", self.n_kv_heads), ("T", None), (f"d_{name}", d))
                  for name, d in (("k", self.d_k), ("v", self.d_v))}
        check_cache_entries("PagedKVCache", {"k": k, "v": v}, shapes=shapes,
                            held={"k": self.k_pool[0, ...], "v": self.v_pool[0, ...]})  # a block: (H_kv, bs, d)
        table, start, n_new = self.tables[seq], self.lengths[seq], k.shape[1]
        need = -(-(start + n_new) // self.block_size) - len(table)  # new blocks
        cow = start % self.block_size != 0 and n_new > 0 and self.refs[table[-1]] > 1  # a shared, partial last block
        if need + cow > len(self.free_blocks):
            raise ValueError(
                f"the pool is full: {need + cow} more blocks are needed, {len(self.free_blocks)} are free "
                f"(free a finished sequence or make the cache with more n_blocks)"
            )
        if cow:  # copy on write: this sequence gets its own copy of the shared block before writing
            old, new = table[-1], self._take_block()
            self.k_pool[new, ...], self.v_pool[new, ...] = self.k_pool[old, ...], self.v_pool[old, ...]
            self.refs[old] -= 1
            table[-1] = new
        t = 0
        while t < n_new:  # fill the last block's tail, then whole new blocks
            pos = start + t
            if pos % self.block_size == 0:
                table.append(self._take_block())
            o0 = pos % self.block_size
            o1 = min(self.block_size, o0 + n_new - t)
            b = table[pos // self.block_size]
            self.k_pool[b, :, o0:o1, :] = k[:, t : t + o1 - o0, :]
            self.v_pool[b, :, o0:o1, :] = v[:, t : t + o1 - o0, :]
            t += o1 - o0
        self.lengths[seq] = start + n_new

    def gather(self, seq):
        """The dense keys and values of ``seq``: ``(H_kv, S, d_k)``, ``(H_kv, S, d_v)`` (for checking)."""
        xp = get_namespace(self.k_pool)
        table, n = self.tables[self._seq(seq)], self.lengths[seq]
        if not table:
            return self.k_pool[0, :, :0, :], self.v_pool[0, :, :0, :]
        # (n_b, H_kv, bs, d) -> (H_kv, n_b, bs, d) -> (H_kv, n_b·bs, d), cut to the sequence's length
        idx = xp.asarray(table, device=device_of(self.k_pool))
        k, v = (xp.permute_dims(xp.take(pool, idx, axis=0), (1, 0, 2, 3)) for pool in (self.k_pool, self.v_pool))
        return tuple(xp.reshape(x, (x.shape[0], -1, x.shape[-1]))[:, :n, :] for x in (k, v))


def paged_attention(q, cache: PagedKVCache, seqs, *, scale=None):
    """Attention of a batch of sequences through their block tables: ``out (B, H, T, d_v)``.

    q ``(B, H, T, d_k)`` holds the last T tokens of each of the B sequences ``seqs`` (already
    appended), attending causally, bottom-right aligned, to their cached tokens: the query i of
    sequence b sits at position ``L_b - T + i``. ``H`` is the cache's ``H_kv`` or a multiple of it
    (grouped-query attention: query head h reads key/value head ``h // (H / H_kv)``, as
    ``MultiHeadAttention``), so the pool holds only the H_kv heads. Equal to
    ``scaled_dot_product_attention(q_b, k_b, v_b, causal=True)`` for each sequence with its dense keys
    (repeated over each group), NaN and inf included. The pool is read one block column at a time
    (block ``tables[b][c]`` for every b), each column folded into the running online-softmax state.
    """
    xp = get_namespace(q, cache.k_pool)
    q, seqs, scale = _check_paged(xp, q, cache, seqs, scale)
    (n_b, n_heads, n_q, _), h_kv, on, bs, dtype = q.shape, cache.n_kv_heads, device_of(q), cache.block_size, q.dtype
    group, lengths = n_heads // h_kv, [cache.lengths[s] for s in seqs]
    # the G query heads of a key/value head as G·T rows: (B, H, T, d_k) -> (B, H_kv, G·T, d_k)
    q = xp.reshape(widen(q, xp) * scale, (n_b, h_kv, group * n_q, cache.d_k))  # half precision: float32
    n_cols = max(len(cache.tables[s]) for s in seqs)
    # (B, n_cols) block ids, padded with block 0: padded slots are masked by the lengths below
    table = xp.asarray([cache.tables[s] + [0] * (n_cols - len(cache.tables[s])) for s in seqs], device=on)
    length = xp.reshape(xp.asarray(lengths, device=on), (-1, 1, 1, 1))  # (B, 1, 1, 1)
    i = xp.reshape(xp.arange(group * n_q, device=on) % n_q, (1, 1, -1, 1))  # (1, 1, G·T, 1): row -> query
    state = empty_state(q.shape[:3], cache.d_v, xp, dtype=q.dtype, device=on)  # (m, l, acc) of (B, H_kv, G·T)
    for c in range(n_cols):
        ids = table[:, c]  # (B,)
        k_c = widen(xp.take(cache.k_pool, ids, axis=0), xp)  # (B, H_kv, bs, d_k)
        v_c = widen(xp.take(cache.v_pool, ids, axis=0), xp)  # (B, H_kv, bs, d_v)
        j = xp.reshape(xp.arange(c * bs, (c + 1) * bs, device=on), (1, 1, 1, -1))  # (1, 1, 1, bs)
        seen = (j < length) & (j <= length - n_q + i)  # (B, 1, G·T, bs): the sequence's own past only
        scores = masked_scores(q @ k_c.mT, seen)  # (B, H_kv, G·T, d_k) @ (B, H_kv, d_k, bs) -> (B, H_kv, G·T, bs)
        state = online_softmax_update(state, scores, v_c)
    out, _ = finish_state(state)  # (B, H_kv, G·T, d_v)
    return narrow(xp.reshape(out, (n_b, n_heads, n_q, cache.d_v)), dtype, xp)  # -> (B, H, T, d_v)


def _check_paged(xp, q, cache, seqs, scale):
    """paged_attention's boundary: q as a float array ``(B, H, T, d_k)`` beside the pool (H a multiple of H_kv),
    the sequences live and holding the T queries already, the scale a float (default ``1/sqrt(d_k)``)."""
    if not isinstance(cache, PagedKVCache):
        raise TypeError(f"cache must be a PagedKVCache, got {type(cache).__name__}")
    if hasattr(q, "dtype"):
        check_same_place(q, cache.k_pool, "q", "the block pool")
    q = as_common_float(xp, q, cache.k_pool, names=("q", "the block pool"))[0]  # integer q: the pool's dtype
    seqs, h_kv = [cache._seq(s) for s in seqs], cache.n_kv_heads
    if q.ndim != 4 or q.shape[0] != len(seqs) or q.shape[3] != cache.d_k or q.shape[1] % h_kv or not q.shape[1]:
        raise ValueError(
            f"q must be (B={len(seqs)}, H, T, d_k={cache.d_k}) with H a multiple of H_kv={h_kv} (the cache's "
            f"key/value heads), got {tuple(q.shape)}"
        )
    if not seqs or min(cache.lengths[s] for s in seqs) < q.shape[2]:
        raise ValueError(f"every sequence must hold the T={q.shape[2]} query tokens already; lengths "
                         f"{[cache.lengths[s] for s in seqs]} (and at least one sequence)")
    scale = 1.0 / math.sqrt(cache.d_k) if scale is None else check_real(scale, "scale")
    return q, seqs, scale
