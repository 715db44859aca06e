"""Writing text: a prompt through the tokenizer, the model's next-token logits, a sampled token, repeat.

    ids = encode(separator + prompt)          the model saw a blank line before every document
    repeat n_new times:  z = logits of the next token;  w = sample_next(z);  ids += [w]
    text = prompt + decode(new ids)

With ``cache=True`` each step runs only the newest token against the cached keys and values
(:class:`decoding.Decoder`); ``cache=False`` re-runs ``model.logits`` on the whole window each step.
Both give the same tokens. When the window reaches the model's ``max_len``, generation continues from
the last ``max_len // 2`` tokens (the cache is rebuilt from them): the model never reads more than it
was trained on.

:class:`TextModel` bundles a model with its tokenizer: ``TextModel.load(path).generate("春", 40)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..infra.backend import to_numpy
from ..infra.blas import blas_thread_limit
from ..infra.checks import check_flag, check_positive_int, check_token_ids
from .checkpoints import load_checkpoint
from .decoding import Decoder
from .evaluate import THREADS, held_out_stream, model_log_probs
from .sampling import sample_next

__all__ = ["PRETRAINED", "TextModel", "generate_ids", "generate_text"]

PRETRAINED = Path(__file__).parent / "checkpoints"  # the committed checkpoints: tang.npz/.json, devil.npz/.json


def generate_ids(model, ids, n_new: int, *, seed: int = 0, cache: bool = True, threads: int | None = THREADS,
                 **sampling) -> list[int]:
    """``n_new`` token ids following ``ids`` (a non-empty list); ``sampling``: :func:`sample_next`'s options;
    ``seed``: an int >= 0; ``cache``: a bool; ``threads``: BLAS threads (``evaluate.THREADS``; None: as it is)."""
    ids, n_new = check_token_ids(ids, "ids").tolist(), check_positive_int(n_new, "n_new", minimum=0)
    seed, cache = check_positive_int(seed, "seed", minimum=0), check_flag(cache, "cache")
    if not ids:
        raise ValueError("ids must hold at least one token (e.g. the separator's)")
    rng, max_len, new = np.random.default_rng(seed), model.config.max_len, []
    context, decoder, fed = ids[-max_len:], None, 0  # fed: tokens of context already in the decoder's cache
    with blas_thread_limit(threads):
        for _ in range(n_new):
            if len(context) > max_len:  # full: go on from the last max_len // 2 tokens
                context, decoder = context[-(max_len // 2) :], None
            if not cache:
                logits = model.logits(np.asarray([context]))[0, -1]  # (V,): the whole window again
            else:
                if decoder is None:
                    decoder, fed = Decoder(model), 0
                logits = decoder.step(np.asarray([context[fed:]]))[0, -1]  # (V,): only the new tokens
                fed = len(context)
            w = sample_next(to_numpy(logits), rng, **sampling)
            new.append(w)
            context.append(w)
    return new


def generate_text(model, tokenizer, prompt: str = "", n_new: int = 100, *, separator: str = "\n\n",
                  seed: int = 0, cache: bool = True, threads: int | None = THREADS, **sampling) -> str:
    """``prompt`` and ``n_new`` more tokens, as text (see the module docstring)."""
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
    ids = tokenizer.encode(separator + prompt)
    new = generate_ids(model, ids, n_new, seed=seed, cache=cache, threads=threads, **sampling)
    return prompt + tokenizer.decode(new)


@dataclass
class TextModel:
    """A Transformer with its tokenizer and what made it (``meta``): generate text, score text."""

    model: object
    tokenizer: object
    meta: dict = field(default_factory=dict)

    @classmethod
    def load(cls, path) -> TextModel:
        """From a checkpoint (``NAME``, ``NAME.npz`` or ``NAME.json``), or a committed one: ``"tang"``, ``"devil"``."""
        if str(path) in ("tang", "devil"):
            path = PRETRAINED / str(path)
        return cls(*load_checkpoint(path))

    def generate(self, prompt: str = "", n_new: int = 100, *, seed: int = 0, temperature: float = 1.0,
                 top_k: int | None = None, top_p: float | None = None, cache: bool = True) -> str:
        """The prompt and ``n_new`` more tokens (``temperature=0``: greedy)."""
        return generate_text(self.model, self.tokenizer, prompt, n_new, seed=seed, cache=cache,
                             temperature=temperature, top_k=top_k, top_p=top_p)

    def nats_per_char(self, corpus) -> float:
        """The held-out loss of a :class:`Corpus` (e.g. the held-out side of the split), nats per character."""
        held = held_out_stream(self.tokenizer, corpus)
        return held.nats_per_char(model_log_probs(self.model, held.ids))
