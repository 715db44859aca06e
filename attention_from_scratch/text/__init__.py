"""Real text: corpora, tokenizers, n-gram baselines, training with held-out evaluation, sampling, checkpoints.

- :mod:`.corpora`: ``load_corpus("tang" | "song" | "devil" | path)``, cleaned, split by document.
- :mod:`.debian`: ``fetch_corpora()``, the corpora's Debian packages downloaded where apt-get cannot install them.
- :mod:`.tokenizers`, :mod:`.bpe`: byte-level ``CharTokenizer`` and ``BPETokenizer`` (exact round trips).
- :mod:`.ngrams`: add-k and interpolated Kneser-Ney n-gram models, the baselines.
- :mod:`.evaluate`: held-out loss per character (nats, bits), the one comparison of every model.
- :mod:`.data`: a corpus name -> split, tokenizer, token streams, baselines.
- :mod:`.trainer`, :mod:`.progress`, :mod:`.train_cli`: training on text (best checkpoint, resume, progress).
- :mod:`.checkpoints`: ``.npz`` + ``.json``, saved and loaded.
- :mod:`.decoding`, :mod:`.sampling`, :mod:`.generation`: KV-cached decoding, greedy/temperature/top-k/top-p,
  ``TextModel.generate(prompt, n_new)``.
- :mod:`.form`, :mod:`.heads`: the poems' form and what attention heads do, measured.
"""

from .bpe import BPETokenizer
from .checkpoints import load_checkpoint, save_checkpoint
from .corpora import CORPORA, Corpus, CorpusNotFoundError, load_corpus
from .data import TextData, baselines, prepare_text
from .debian import fetch_corpora
from .decoding import Decoder
from .evaluate import HeldOut, bits, held_out_stream, model_log_probs
from .form import definition_form, poem_form
from .generation import TextModel, generate_ids, generate_text
from .heads import HeadScores, attention_maps, head_scores
from .ngrams import AddK, KneserNey, NGramModel
from .sampling import sample_next, top_k_filter, top_p_filter
from .tokenizers import CharTokenizer, Tokenizer, load_tokenizer
from .trainer import TextRun, TrainOptions, train_on_text

__all__ = [
    "CORPORA",
    "AddK",
    "BPETokenizer",
    "CharTokenizer",
    "Corpus",
    "CorpusNotFoundError",
    "Decoder",
    "HeadScores",
    "HeldOut",
    "KneserNey",
    "NGramModel",
    "TextData",
    "TextModel",
    "TextRun",
    "Tokenizer",
    "TrainOptions",
    "attention_maps",
    "baselines",
    "bits",
    "definition_form",
    "fetch_corpora",
    "generate_ids",
    "generate_text",
    "head_scores",
    "held_out_stream",
    "load_checkpoint",
    "load_corpus",
    "load_tokenizer",
    "model_log_probs",
    "poem_form",
    "prepare_text",
    "sample_next",
    "save_checkpoint",
    "top_k_filter",
    "top_p_filter",
    "train_on_text",
]
