"""DeepSeek-V4's attention: compress, then select -- sliding, CSA and HCA layers over one shared K=V head.

DeepSeek-V4 technical report §2.3 (reference: transformers' ``models/deepseek_v4/modeling_deepseek_v4.py``,
``DeepseekV4Attention``; DeepSeek's ``inference/model.py``). For the new token at position p with hidden
state h (legend below):

1. queries    c_Q = RMSNorm(W_DQ h);  q_i = RoPE_p(RMSNorm₀(W_UQ,i c_Q))     H heads of d; RMSNorm₀: no weight
2. key=value  kv = RoPE_p(RMSNorm(W_KV h))                                     ONE d-vector, read as key AND value
3. entries    (CSA/HCA) every m tokens become one entry: per channel, a softmax over the window's slots
              of the gates W_Z h + B (B: a learned bias per slot) weighs the projections W_C h; then
              RMSNorm and RoPE at the window's first position w·m. HCA: m' = 128 slots, one series.
              CSA: m = 4, two series a and b per token; entry w pools window w-1's a and window w's b
              (2m slots, stride m). Entry w is visible to the query at p iff its window is complete,
              (w+1)·m <= p+1.
4. selection  (CSA) a lightning indexer over the visible entries, I(p, w) = Σ_j ω_j ReLU(q^I_j · k^I_w / sqrt(d_I))
              with ω = W_w h / sqrt(H_I) (one weight per indexer head), q^I from c_Q and k^I from its own
              compressor at width d_I; each query keeps its min(index_topk, visible) best entries, ties to
              the lower index (``select_topk``).
5. attention  one softmax per head over [the last W tokens' kv | the selected (CSA) or all visible (HCA)
              entries] with a learned sink logit per head (``sinks.py``): o_i = Σ_s P_is kv_s.
6. output     the values carry RoPE (V = K), so o's rotated channels are turned back by -pθ; the H
              outputs are projected in g groups to o_lora_rank each (W_Oa), then mixed (W_Ob).

RoPE turns consecutive pairs of each vector's LAST r = int(head_dim · partial_rotary_factor) channels
([nope | rope]); sliding layers use ``rope_theta``, CSA/HCA layers ``compress_rope_theta`` with YaRN
(their q, window kv, entries, indexer q and k). Each query of a CSA layer reads at most W + k keys: there the
context's length enters only through the indexer, which scores 1/m of the tokens (an HCA layer reads all n/m'
entries).

Equal to transformers 5.24's ``DeepseekV4Attention`` (checked by hand, report of issue 33: random float64
layers of width 64, 4 heads of 32, window 6, CSA m = 4 with 16 indexer heads keeping 3, HCA m' = 8, 41
tokens, full pass and token by token): max relative difference 1.4e-7 (sliding), 1.0e-7 (CSA), 1.2e-7
(HCA) as shipped -- transformers computes RMSNorms, RoPE angles, the gate softmax and the index scores
in float32 even in a float64 model -- and below 9e-16 with those casts widened to float64. The full
pass, token-by-token decoding and uneven chunks agree to 1e-10 (``tests/test_deepseek_v4.py``).
DeepSeek's own ``inference/model.py`` also rounds, as its quantisation-aware training did, the non-RoPE
channels of the K=V rows and entries to FP8 (one scale per 64) and the indexer's q and keys to FP4 after a
Hadamard rotation (an orthogonal map applied to both, so it alone changes no score); transformers and this
package leave that out.

Legend: B batch, T new tokens, H heads, d head_dim, r rope width, m compression rate, E entries,
W sliding_window, k index_topk, n tokens so far (the context), H_I and d_I the indexer's heads and width.
Config: ``deepseek_v4_config.py``; compressor: ``deepseek_v4_compressor.py``; cache: ``deepseek_v4_cache.py``;
multiply-adds: ``deepseek_v4_costs.py``; cache bytes: ``cache_costs.py``.
"""

from __future__ import annotations

from collections.abc import Mapping

from .attention import scaled_dot_product_attention
from .deepseek_v4_cache import DeepSeekV4Cache
from .deepseek_v4_compressor import compress_windows, visible_entries
from .deepseek_v4_config import CSA, SLIDING, DeepSeekV4Config, deepseek_v4_weight_shapes
from .infra.backend import as_float, device_of, get_namespace, random_normal, to_device
from .infra.checks import check_float_dtype, check_param
from .norms import rms_norm
from .rope import rope_last
from .sparse import gather_rows, index_scores, indexer_weights, select_topk

__all__ = ["DeepSeekV4Attention", "DeepSeekV4Cache", "DeepSeekV4Config"]


class DeepSeekV4Attention:
    """One DeepSeek-V4 attention layer: ``attn(x, *, cache=None) -> (B, T, hidden_size)``.

    The type (sliding, CSA, HCA) is ``config.layer_types[layer_idx]``. Weights live in ``attn.weights``
    under transformers' names, ``(out_features, in_features)`` (see
    :func:`~attention_from_scratch.deepseek_v4_config.deepseek_v4_weight_shapes`), and may be reassigned.
    Random init: linear weights N(0, 1/in_features) (transformers draws them N(0, 0.02²), its
    ``initializer_range``; 1/in_features keeps a small random layer's activations of order 1), norm weights 1,
    sinks and position biases 0 as in transformers; drawn on the host from ``seed``, then placed on
    ``xp``/``device`` in ``dtype``.
    """

    def __init__(self, config: DeepSeekV4Config, *, layer_idx: int, seed: int = 0, xp=None, dtype=None, device=None):
        shapes = deepseek_v4_weight_shapes(config, layer_idx)  # refuses anything but a DeepSeekV4Config
        host = get_namespace()
        self.config, self.layer_idx, self.weights = config, layer_idx, {}
        for i, (name, shape) in enumerate(shapes.items()):
            if name.endswith("norm.weight"):
                self.weights[name] = host.ones(shape, dtype=host.float64)
            elif len(shape) == 1 or name.endswith("position_bias"):  # sinks, position biases
                self.weights[name] = host.zeros(shape, dtype=host.float64)
            else:
                self.weights[name] = random_normal(shape, seed=(seed, i), scale=shape[1] ** -0.5)
        xp = get_namespace() if xp is None else xp
        self.to(xp, device, dtype=xp.float64 if dtype is None else dtype)

    @classmethod
    def from_state_dict(cls, config: DeepSeekV4Config, state, *, layer_idx: int, prefix: str = "", xp=None,
                        device=None):
        """The layer from one layer's weights under transformers' names, ``(out_features, in_features)``.

        ``prefix`` (e.g. ``"model.layers.2.self_attn."``) selects them from a whole model's dict. Arrays
        keep their dtype, backend and device unless ``xp``/``device`` is given; missing, unexpected
        (without a prefix) and mis-shaped weights raise ``ValueError`` naming them.
        """
        shapes = deepseek_v4_weight_shapes(config, layer_idx)
        if not isinstance(state, Mapping):
            raise TypeError(f"state must map transformers' weight names to arrays, got {type(state).__name__}")
        given = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
        missing = [f"{prefix}{k} {shape}" for k, shape in shapes.items() if k not in given]
        unexpected = [] if prefix else [k for k in given if k not in shapes]
        if missing or unexpected:
            raise ValueError(f"state dict of a {config.layer_types[layer_idx]} layer: missing {missing}, unexpected "
                             f"{unexpected}; expected exactly {list(shapes)}")
        layer = cls.__new__(cls)
        layer.config, layer.layer_idx, layer.weights = config, layer_idx, {}
        for name, shape in shapes.items():
            a = given[name] if xp is None else to_device(given[name], xp, device)
            a = as_float(a, get_namespace(a), prefix + name)
            if tuple(a.shape) != shape:
                raise ValueError(f"weight {prefix}{name} has shape {tuple(a.shape)}, expected {shape} (out, in)")
            layer.weights[name] = a
        for name, a in layer.weights.items():  # all on one backend and device
            check_param(a, name, shapes[name], layer.weights["kv_proj.weight"], "out_features, in_features")
        return layer.to(get_namespace(layer.weights["kv_proj.weight"]), device_of(layer.weights["kv_proj.weight"]))

    def to(self, xp, device=None, *, dtype=None):
        """Move every weight and the RoPE frequencies to backend ``xp`` on ``device`` (and ``dtype``); returns self."""
        if dtype is not None:
            check_float_dtype(dtype, xp)  # before any weight moves: an integer dtype would truncate them to zeros
        for name, w in self.weights.items():
            w = to_device(w, xp, device) if get_namespace(w) is not xp or device_of(w) != device else w
            self.weights[name] = w if dtype is None else xp.astype(w, dtype)
        self.layer_type = self.config.layer_type(self.layer_idx)
        self.rate = self.config.compress_rates.get(self.layer_type)  # m (None for a sliding layer)
        w = self.weights["kv_proj.weight"]
        self.freqs = self.config.rope_frequencies(self.layer_type, xp=xp, device=device_of(w))  # (r/2,) float64
        return self

    def state_dict(self) -> dict:
        """The weights under transformers' names, ``(out_features, in_features)``."""
        return dict(self.weights)

    def new_cache(self, batch_size: int) -> DeepSeekV4Cache:
        """An empty :class:`~attention_from_scratch.deepseek_v4_cache.DeepSeekV4Cache` for this layer."""
        return DeepSeekV4Cache(self.config, self.layer_idx, batch_size)

    # --- the forward pass, in the paper's order ------------------------------------------------------

    def __call__(self, x, *, cache: DeepSeekV4Cache | None = None):
        """Causal attention of the new tokens ``x (B, T, hidden_size)`` -> ``(B, T, hidden_size)``.

        Positions continue from ``cache`` (``len(cache)``), which is updated only once everything is
        computed. Half precision is computed in float32 and returned in x's dtype.
        """
        x, w, cache, out_dtype = self._check_call(x, cache)  # the one boundary check; x in the compute dtype
        xp, cfg, r, where = get_namespace(x), self.config, self.config.qk_rope_head_dim, device_of(x)
        b, t, _ = x.shape
        positions = list(range(cache.position, cache.position + t))
        # 1) queries: (B, T, dim) -> c_Q (B, T, d_c') -> (B, T, H, d) -> (B, H, T, d); RMSNorm₀ per head, RoPE
        c_q = rms_norm(x @ w["q_a_proj.weight"].mT, w["q_a_norm.weight"], cfg.rms_norm_eps)
        q = xp.reshape(c_q @ w["q_b_proj.weight"].mT, (b, t, cfg.num_attention_heads, cfg.head_dim))
        q = xp.permute_dims(q, (0, 2, 1, 3))
        q = rope_last(q / xp.sqrt(xp.mean(q * q, axis=-1, keepdims=True) + cfg.rms_norm_eps), r, positions, self.freqs)
        # 2) the shared key=value rows: the window's held rows + the new ones (B, held + T, d); 3) the entries
        #    of complete windows so far (B, E, d) and, for CSA, the indexer's compressed keys (B, E, d_I)
        window, entries, index_k, states = self._rows(x, w, cache)
        # 4) the rows each query reads: its last W tokens, then the selected (CSA) or visible (HCA) entries
        indices, valid = self._window_rows(window.shape[1] - t, t, xp, where)  # (1, T, W) each
        keys = gather_rows(window, xp.broadcast_to(indices, (b, *indices.shape[1:])))  # (B, T, W, d): K = V
        if self.layer_type != SLIDING:
            visible = visible_entries(positions, entries.shape[1], self.rate, xp=xp, device=where)  # (T, E)
            if self.layer_type == CSA:  # the indexer's best min(k, visible) entries per query: (B, T, K)
                picked, picked_ok = self._select(x, w, c_q, index_k, visible, positions)
            else:  # HCA: every entry, the visible ones valid: (1, T, E)
                picked = xp.broadcast_to(xp.arange(entries.shape[1], device=where), visible.shape)[None, ...]
                picked_ok = visible[None, ...]
            picked = xp.broadcast_to(xp.astype(picked, indices.dtype), (b, *picked.shape[1:]))
            keys = xp.concat([keys, gather_rows(entries, picked)], axis=2)  # (B, T, W + K or E, d)
            valid = xp.concat([xp.broadcast_to(v, (b, *v.shape[1:])) for v in (valid, picked_ok)], axis=-1)
        # 5) one softmax per head over its query's rows and the head's sink logit (heads as the query rows)
        valid = xp.broadcast_to(valid, (b, *valid.shape[1:]))[:, :, None, :]  # (B, T, 1, n): the same for each head
        o, _ = scaled_dot_product_attention(xp.permute_dims(q, (0, 2, 1, 3)), keys, keys, valid,
                                            scale=cfg.softmax_scale, sink_logits=w["sinks"])  # (B, T, H, d)
        # 6) turn the values' RoPE back (at -p), then the grouped low-rank output projection
        o = rope_last(xp.permute_dims(o, (0, 2, 1, 3)), r, [-p for p in positions], self.freqs)  # (B, H, T, d)
        out = self._output(xp.permute_dims(o, (0, 2, 1, 3)), w)  # (B, T, dim)
        cache.commit(window, states, t)
        return out if out.dtype == out_dtype else xp.astype(out, out_dtype)

    def fill_cache(self, x, *, cache: DeepSeekV4Cache | None = None) -> DeepSeekV4Cache:
        """Add the tokens ``x (B, T, hidden_size)`` to ``cache`` without attending: what a prefill leaves behind
        (their window rows, compressed entries and unfinished windows); a benchmark fills long contexts so."""
        x, w, cache, _ = self._check_call(x, cache)
        window, _, _, states = self._rows(x, w, cache)
        cache.commit(window, states, x.shape[1])
        return cache

    def _rows(self, x, w, cache):
        """Steps 2-3: the window rows ``(B, held + T, d)``, the entries ``(B, E, d)`` (None for a sliding layer),
        CSA's indexer keys ``(B, E, d_I)`` (else None) and the compressors' new states; nothing is written."""
        xp, cfg = get_namespace(x), self.config
        positions = list(range(cache.position, cache.position + x.shape[1]))
        kv = rms_norm(x @ w["kv_proj.weight"].mT, w["kv_norm.weight"], cfg.rms_norm_eps)  # (B, T, d), K = V
        kv = rope_last(kv, cfg.qk_rope_head_dim, positions, self.freqs)
        window = kv if cache.window is None else xp.concat([cache.window, kv], axis=1)
        entries = index_k = None
        states = {}
        if self.layer_type != SLIDING:
            entries, states["compressor"] = self._entries(x, w, cache, "compressor.")
        if self.layer_type == CSA:
            index_k, states["indexer"] = self._entries(x, w, cache, "compressor.indexer.")
        return window, entries, index_k, states

    def _entries(self, x, w, cache, prefix):
        """Step 3 for the compressor under ``prefix``: all entries so far ``(B, E, d)`` and its new state."""
        xp, cfg, rate = get_namespace(x), self.config, self.rate
        state = cache.compressors["indexer" if "indexer" in prefix else "compressor"]
        kv, gate = x @ w[prefix + "kv_proj.weight"].mT, x @ w[prefix + "gate_proj.weight"].mT  # (B, T, c·d)
        if state.kv is not None:  # the unfinished window's tokens come first
            kv, gate = xp.concat([state.kv, kv], axis=1), xp.concat([state.gate, gate], axis=1)
        n = kv.shape[1] // rate  # windows completed now
        new = {"kv": kv[:, n * rate:, :], "gate": gate[:, n * rate:, :]}
        entries = state.entries
        if n:
            prior = None if state.prior_kv is None else (state.prior_kv, state.prior_gate)
            closed = n * rate  # tokens of the completed windows
            pooled, prior = compress_windows(kv[:, :closed, :], gate[:, :closed, :], w[prefix + "position_bias"], rate,
                                             overlap=self.layer_type == CSA, prior=prior)  # (B, n, d)
            first = state.n_entries  # entry w is rotated at its window's first position w·m
            new_entries = rope_last(rms_norm(pooled, w[prefix + "kv_norm.weight"], cfg.rms_norm_eps),
                                    cfg.qk_rope_head_dim, [(first + i) * rate for i in range(n)], self.freqs)
            entries = new_entries if entries is None else xp.concat([entries, new_entries], axis=1)
            new["entries"] = entries
            if self.layer_type == CSA:
                new["prior_kv"], new["prior_gate"] = prior
        if entries is None:  # no window complete yet
            width = w[prefix + "kv_norm.weight"].shape[0]
            entries = xp.zeros((x.shape[0], 0, width), dtype=x.dtype, device=device_of(x))
        return entries, new

    def _window_rows(self, held: int, t: int, xp, where):
        """Query t (of T, after ``held`` rows) reads rows held+t-W+1 .. held+t: ``(1, T, W)`` indices, valid >= 0."""
        w = self.config.sliding_window
        rows = xp.arange(t, device=where)[:, None] + (held - w + 1) + xp.arange(w, device=where)[None, :]  # (T, W)
        return xp.where(rows >= 0, rows, 0)[None, ...], (rows >= 0)[None, ...]

    def _select(self, x, w, c_q, index_k, visible, positions):
        """Step 4 (CSA): each query's ``min(index_topk, visible)`` best entries by the lightning indexer.

        ``I(p, w) = Σ_j ω_j ReLU(q^I_j · k^I_w / sqrt(d_I))``, ``ω = W_w h / sqrt(H_I)``; ties go to
        the lower index. Returns indices and validity ``(B, T, K)``, K = min(index_topk, E).
        """
        xp, cfg = get_namespace(x), self.config
        b, t, _ = x.shape
        if index_k.shape[1] == 0:  # nothing compressed yet
            empty = xp.zeros((b, t, 0), dtype=xp.int64, device=device_of(x))
            return empty, empty == 0
        q = xp.reshape(c_q @ w["compressor.indexer.q_b_proj.weight"].mT, (b, t, cfg.index_n_heads, cfg.index_head_dim))
        q = rope_last(xp.permute_dims(q, (0, 2, 1, 3)), cfg.qk_rope_head_dim, positions, self.freqs)  # (B, H_I, T, d_I)
        head_weights = indexer_weights(x, w["compressor.indexer.scorer.weights_proj.weight"])  # (B, T, H_I)
        scores = index_scores(q, index_k, head_weights, causal=False)  # (B, T, E)
        return select_topk(xp.where(visible, scores, -xp.inf), cfg.index_topk)

    def _output(self, o, w):
        """Step 6: ``(B, T, H, d)`` -> g groups of H·d/g, each to o_lora_rank (W_Oa), mixed to dim (W_Ob)."""
        xp, cfg = get_namespace(o), self.config
        b, t, _, _ = o.shape
        g = cfg.o_groups
        o = xp.permute_dims(xp.reshape(o, (b * t, g, -1)), (1, 0, 2))  # (B, T, H, d) -> (g, B·T, H·d/g)
        w_a = xp.reshape(w["o_a_proj.weight"], (g, cfg.o_lora_rank, -1))  # (g·o_lora, H·d/g) -> (g, o_lora, H·d/g)
        o = xp.permute_dims(o @ w_a.mT, (1, 0, 2))  # (g, B·T, o_lora) -> (B·T, g, o_lora)
        return xp.reshape(o, (b, t, g * cfg.o_lora_rank)) @ w["o_b_proj.weight"].mT  # (B, T, dim)

    def _check_call(self, x, cache):
        """x as an array of the compute dtype ``(B, T, hidden_size)``, every weight checked and cast, the cache.

        Returns ``(x, weights, cache, out_dtype)``; a new cache when ``cache`` is None. Nothing is written.
        """
        cfg, w0 = self.config, self.weights["kv_proj.weight"]
        if not hasattr(x, "dtype") and hasattr(w0, "dtype"):  # a list is data: put it beside the weights
            x = to_device(x, get_namespace(w0), device_of(w0))
        xp = get_namespace(x)
        x = as_float(x, xp, "x")
        if x.ndim != 3 or x.shape[-1] != cfg.hidden_size or 0 in x.shape[:2]:
            raise ValueError(f"x must have shape (B, T, hidden_size={cfg.hidden_size}) with B, T >= 1, "
                             f"got {tuple(x.shape)}")
        out_dtype = x.dtype
        work = xp.float32 if xp.finfo(x.dtype).bits < 32 else x.dtype  # half precision: computed in float32
        x = xp.astype(x, work, copy=False)
        # every weight checked (it may have been reassigned) and cast; decoding reuses the last check's result
        # while the same arrays are in place (the memo holds them, so their ids cannot be reused)
        held = (xp.__name__, str(work), str(device_of(x)), *map(id, self.weights.values()))
        memo = getattr(self, "_checked", None)
        if memo is None or memo[0] != held:
            shapes = deepseek_v4_weight_shapes(cfg, self.layer_idx)
            w = {name: xp.astype(check_param(self.weights.get(name), name, shape, x, "out_features, in_features"),
                                 work, copy=False) for name, shape in shapes.items()}
            memo = self._checked = (held, w, list(self.weights.values()))
        w = memo[1]
        if cache is None:
            cache = self.new_cache(x.shape[0])
        elif not isinstance(cache, DeepSeekV4Cache):
            raise TypeError(f"cache must be a DeepSeekV4Cache (from attn.new_cache(batch_size)), got "
                            f"{type(cache).__name__}")
        cache.check(self, x, work)
        return x, w, cache, out_dtype
