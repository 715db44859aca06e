"""attention_from_scratch: the attention mechanism from the dot product to MLA and FlashAttention.

Each module holds one concept (see README's course map); the most used names are re-exported here.
"""

from .attention import additive_attention, attention_backward, attention_loop, scaled_dot_product_attention
from .backend import get_namespace, gpu_available, to_numpy
from .caches import RollingKVCache
from .flash import flash_attention
from .flash_backward import flash_attention_backward
from .kv_cache import bytes_per_token, deepseek_v3_numbers, deepseek_v32_numbers
from .masking import apply_mask, causal_mask, combine_masks, padding_mask, sliding_window_mask
from .mla import LatentCache, MLAConfig, MultiHeadLatentAttention, rms_norm
from .model.transformer import Transformer, TransformerConfig
from .multihead import KVCache, MultiHeadAttention
from .paged import PagedKVCache, paged_attention
from .rope import apply_rope, rope_frequencies, rotate_half_rope
from .serving import flash_decode, merge_partials, ring_attention, ring_work
from .similarity import cosine_similarity, dot, euclidean_distance
from .softmax import log_softmax, logsumexp, naive_softmax, softmax, softmax_backward
from .sparse import fp8_e4m3, hadamard, index_scores, layer_norm, select_topk, topk_mask
from .sparse_training import attention_mass_recall, attention_target, indexer_loss_and_grads, train_indexer
from .text import BPETokenizer, CharTokenizer, Corpus, TextModel, load_checkpoint, load_corpus, sample_next

__version__ = "0.1.0"

__all__ = [
    "KVCache",
    "LatentCache",
    "MLAConfig",
    "MultiHeadAttention",
    "MultiHeadLatentAttention",
    "PagedKVCache",
    "RollingKVCache",
    "Transformer",
    "TransformerConfig",
    "additive_attention",
    "apply_mask",
    "apply_rope",
    "attention_backward",
    "attention_loop",
    "attention_mass_recall",
    "attention_target",
    "bytes_per_token",
    "causal_mask",
    "combine_masks",
    "cosine_similarity",
    "deepseek_v3_numbers",
    "deepseek_v32_numbers",
    "dot",
    "euclidean_distance",
    "flash_attention",
    "flash_attention_backward",
    "flash_decode",
    "fp8_e4m3",
    "get_namespace",
    "gpu_available",
    "hadamard",
    "index_scores",
    "indexer_loss_and_grads",
    "layer_norm",
    "log_softmax",
    "logsumexp",
    "merge_partials",
    "naive_softmax",
    "padding_mask",
    "paged_attention",
    "ring_attention",
    "ring_work",
    "rms_norm",
    "rope_frequencies",
    "rotate_half_rope",
    "scaled_dot_product_attention",
    "select_topk",
    "sliding_window_mask",
    "softmax",
    "softmax_backward",
    "to_numpy",
    "topk_mask",
    "train_indexer",
]
__all__ += [  # real text: attention_from_scratch.text
    "BPETokenizer",
    "CharTokenizer",
    "Corpus",
    "TextModel",
    "load_checkpoint",
    "load_corpus",
    "sample_next",
]
