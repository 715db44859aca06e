"""The capstone Transformer's shape: ``TransformerConfig``, every field with the reason it is there.

Checked when built (positive sizes, heads that divide d_model, an even d_k for RoPE, known options), so a
model is never made from a shape it cannot run; :meth:`TransformerConfig.param_shapes` lists the
parameters the model draws.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..infra.attention_checks import check_heads
from ..infra.checks import check_flag, check_positive_int

__all__ = ["TransformerConfig"]


@dataclass(frozen=True)
class TransformerConfig:
    """The shape of the model; every field says why it is there."""

    vocab_size: int  # V: distinct tokens; the embedding has V rows and the logits V columns
    d_model: int  # width of the residual stream that every block reads and writes
    n_heads: int  # H attention heads per layer, each of width d_k = d_model / H
    n_layers: int  # blocks; an induction head needs 2 (one to look back, one to copy)
    d_ff: int  # MLP hidden width (4 · d_model in GPT-2)
    max_len: int  # longest sequence: the learned position table's rows, the limit for generate
    n_kv_heads: int | None = None  # key/value heads (GQA, notebook 08); None = n_heads (plain MHA)
    positions: str = "rope"  # "rope" (rotate q and k, no parameters) or "learned" (a table P added to x)
    attention: str = "sdpa"  # "sdpa" (attention.py) or "flash" (flash.py, tiled, same numbers)
    scale: bool = True  # divide scores by sqrt(d_k); False is the ablation of notebook 03's argument
    causal: bool = True  # mask the future; False lets a position read the token it must predict
    block_size: int | None = None  # FlashAttention's tile when attention="flash"; None = measured best

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_len"):
            check_positive_int(getattr(self, name), name)
        if self.block_size is not None:
            check_positive_int(self.block_size, "block_size")
        check_heads(self.d_model, self.n_heads, self.n_kv_heads)
        if self.positions == "rope" and (self.d_model // self.n_heads) % 2:
            raise ValueError(f"positions='rope' needs an even d_k, got d_k={self.d_model // self.n_heads}")
        for name, allowed in (("positions", ("rope", "learned")), ("attention", ("sdpa", "flash"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        check_flag(self.scale, "scale")
        check_flag(self.causal, "causal")

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    def param_shapes(self) -> dict:
        """Parameter name -> shape, in the ``x @ W`` layout."""
        c, kv = self, self.kv_heads * self.d_k
        shapes = {"embed": (c.vocab_size, c.d_model)}
        if c.positions == "learned":
            shapes["pos"] = (c.max_len, c.d_model)
        for i in range(c.n_layers):
            shapes |= {
                f"{i}.attn_norm": (c.d_model,), f"{i}.w_q": (c.d_model, c.d_model), f"{i}.w_k": (c.d_model, kv),
                f"{i}.w_v": (c.d_model, kv), f"{i}.w_o": (c.d_model, c.d_model), f"{i}.mlp_norm": (c.d_model,),
                f"{i}.w_1": (c.d_model, c.d_ff), f"{i}.w_2": (c.d_ff, c.d_model),
            }
        return shapes | {"final_norm": (c.d_model,), "unembed": (c.d_model, c.vocab_size)}
