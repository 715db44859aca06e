"""attention_from_scratch: the attention mechanism from the dot product to MLA and FlashAttention.

Each module holds one concept (see README's course map); the most used names are re-exported here.
"""

from .attention import additive_attention, attention_backward, attention_loop, scaled_dot_product_attention
from .batching import batch_schedule, schedule_stats
from .cache_costs import hybrid_cache_bytes
from .deepseek_v4 import DeepSeekV4Attention, DeepSeekV4Cache, DeepSeekV4Config
from .delta_rule import gated_delta_rule, l2_normalize
from .flash import flash_attention
from .flash_backward import flash_attention_backward
from .gated_deltanet import GatedDeltaNet, GatedDeltaNetCache, GatedDeltaNetConfig
from .infra.backend import get_namespace, gpu_available, to_numpy
from .kv_cache import KVCache, bytes_per_token, deepseek_v3_numbers, deepseek_v32_numbers
from .linear import elu_feature_map, linear_attention, linear_attention_recurrent
from .masking import apply_mask, causal_mask, combine_masks, padding_mask
from .mla import MLAConfig, MultiHeadLatentAttention
from .mla_cache import LatentCache
from .model.transformer import Transformer, TransformerConfig
from .multihead import MultiHeadAttention
from .norms import layer_norm, rms_norm
from .paged import PagedKVCache, paged_attention
from .recall import associative_recall, overwrite_recall
from .rope import apply_rope, rope_frequencies, rotate_half_rope
from .serving import flash_decode, merge_partials, ring_attention, ring_work
from .similarity import cosine_similarity, dot, euclidean_distance
from .softmax import log_softmax, logsumexp, naive_softmax, softmax, softmax_backward
from .sparse import fp8_e4m3, hadamard, index_scores, select_topk, topk_mask
from .sparse_training import attention_mass_recall, attention_target, indexer_loss_and_grads, train_indexer
from .text import BPETokenizer, CharTokenizer, Corpus, TextModel, load_checkpoint, load_corpus, sample_next
from .windows import RollingKVCache, sliding_window_mask

__version__ = "0.1.0"

__all__ = [
    "DeepSeekV4Attention",
    "DeepSeekV4Cache",
    "DeepSeekV4Config",
    "GatedDeltaNet",
    "GatedDeltaNetCache",
    "GatedDeltaNetConfig",
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
    "associative_recall",
    "attention_backward",
    "attention_loop",
    "attention_mass_recall",
    "attention_target",
    "batch_schedule",
    "bytes_per_token",
    "causal_mask",
    "combine_masks",
    "cosine_similarity",
    "deepseek_v3_numbers",
    "deepseek_v32_numbers",
    "dot",
    "elu_feature_map",
    "euclidean_distance",
    "flash_attention",
    "flash_attention_backward",
    "flash_decode",
    "fp8_e4m3",
    "gated_delta_rule",
    "get_namespace",
    "gpu_available",
    "hadamard",
    "hybrid_cache_bytes",
    "index_scores",
    "indexer_loss_and_grads",
    "l2_normalize",
    "layer_norm",
    "linear_attention",
    "linear_attention_recurrent",
    "log_softmax",
    "logsumexp",
    "merge_partials",
    "naive_softmax",
    "overwrite_recall",
    "padding_mask",
    "paged_attention",
    "ring_attention",
    "ring_work",
    "rms_norm",
    "rope_frequencies",
    "rotate_half_rope",
    "scaled_dot_product_attention",
    "schedule_stats",
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
