"""attention_from_scratch: the attention mechanism from the dot product to MLA and FlashAttention.

Each module holds one concept (see README's course map); the most used names are re-exported here.
"""

from .attention import additive_attention, attention_backward, attention_loop, scaled_dot_product_attention
from .backend import get_namespace, gpu_available, to_numpy
from .flash import flash_attention
from .masking import apply_mask, causal_mask, combine_masks, padding_mask
from .similarity import cosine_similarity, dot, euclidean_distance
from .softmax import log_softmax, logsumexp, naive_softmax, softmax, softmax_backward

__version__ = "0.1.0"

__all__ = [
    "additive_attention",
    "apply_mask",
    "attention_backward",
    "attention_loop",
    "causal_mask",
    "combine_masks",
    "cosine_similarity",
    "dot",
    "euclidean_distance",
    "flash_attention",
    "get_namespace",
    "gpu_available",
    "log_softmax",
    "logsumexp",
    "naive_softmax",
    "padding_mask",
    "scaled_dot_product_attention",
    "softmax",
    "softmax_backward",
    "to_numpy",
]
