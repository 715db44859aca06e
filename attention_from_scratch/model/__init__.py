"""The capstone: a small decoder-only Transformer trained in NumPy with every gradient written by hand.

- :mod:`.layers`: each layer's forward beside its backward (embedding, RMSNorm, GELU, cross-entropy).
- :mod:`.tiled_attention`: the model's attention tile by tile, its weights kept for the backward.
- :mod:`.config`: ``TransformerConfig``, the model's shape.
- :mod:`.transformer`: ``Transformer`` (forward, ``loss_and_grads``, ``generate``); ``TransformerConfig`` again.
- :mod:`.training`: Adam, ``train``, ``fit`` and the training notebook's recipes.
- :mod:`.tasks`: copy / induction and reversal tasks, accuracy, and previous-token / induction head scores.
"""

from .transformer import Transformer, TransformerConfig

__all__ = ["Transformer", "TransformerConfig"]
