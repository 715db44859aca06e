"""Text -> token ids -> text: what every tokenizer shares, and the character tokenizer.

Every tokenizer here is *byte-level*: each token stands for a fixed string of bytes, ids 0..255 are the
256 single bytes, and

    decode(ids) = UTF-8 decoding of  token_bytes[ids[0]] + token_bytes[ids[1]] + ...

So any string can be encoded (at worst one token per byte) and decodes back exactly: no "unknown"
token, even for text the tokenizer never saw. The tokenizers differ only in the larger tokens they add
above the bytes: whole characters (:class:`CharTokenizer`), or merged byte pairs (``bpe.BPETokenizer``).

"Any string" means any Python ``str``, including lone surrogates (``"\\ud800"``, which strict UTF-8
refuses): strings are encoded with ``errors="surrogatepass"`` (a surrogate becomes its 3-byte form),
so ``decode(encode(s)) == s`` for every ``str``. A list of ids that is not the encoding of a string (a
model's sample may cut a character's bytes) still decodes: each invalid byte becomes U+FFFD.
"""

from __future__ import annotations

import codecs
import json
from collections import Counter

from ..infra.checks import check_fields, check_token_ids
from ..infra.files import read_json, write_text_atomically

__all__ = ["BYTES", "CharTokenizer", "Tokenizer", "load_tokenizer", "tokenizer_from_dict", "utf8"]

BYTES = [bytes([b]) for b in range(256)]  # ids 0..255: the single bytes


def utf8(text: str) -> bytes:
    """``text`` as UTF-8 bytes, lone surrogates included (``surrogatepass``)."""
    return text.encode("utf-8", errors="surrogatepass")


def _surrogatepass_or_replace(error: UnicodeDecodeError):
    """Decoding error handler: a surrogate's 3 bytes give the surrogate back, any other invalid byte U+FFFD."""
    try:
        return codecs.lookup_error("surrogatepass")(error)
    except UnicodeDecodeError:
        return "\ufffd", error.start + 1


codecs.register_error("attention_from_scratch.surrogatepass_or_replace", _surrogatepass_or_replace)


class Tokenizer:
    """A byte-level tokenizer: ``token_bytes[i]`` is the bytes token ``i`` stands for (ids 0..255: one byte)."""

    kind = ""

    def __init__(self, token_bytes: list[bytes]):
        if [bytes(t) for t in token_bytes[:256]] != BYTES:
            raise ValueError("token_bytes must start with the 256 single bytes, in order (ids 0..255)")
        self.token_bytes = list(token_bytes)

    @property
    def vocab_size(self) -> int:
        return len(self.token_bytes)

    def decode(self, ids) -> str:
        """Token ids (1-D integers) -> the string they spell (invalid UTF-8, possible in samples only: U+FFFD)."""
        ids = check_token_ids(ids, "ids").tolist()  # int(65.7) would have read 65, 'A'
        outside = [i for i in ids if not 0 <= i < self.vocab_size]
        if outside:
            raise ValueError(f"ids must lie in 0..{self.vocab_size - 1} (the vocabulary), got {outside[0]}")
        data = b"".join(self.token_bytes[i] for i in ids)
        return data.decode("utf-8", errors="attention_from_scratch.surrogatepass_or_replace")

    def token_text(self, i: int) -> str:
        """What token ``i`` looks like on its own (a byte that is part of a character shows as U+FFFD)."""
        return self.decode([i])

    def encode(self, text: str) -> list[int]:
        raise NotImplementedError

    def to_dict(self) -> dict:
        raise NotImplementedError

    def save(self, path) -> None:
        """Write the tokenizer as JSON (read back by :func:`load_tokenizer`)."""
        write_text_atomically(path, json.dumps(self.to_dict(), ensure_ascii=True))  # serialised before the file opens

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.token_bytes == other.token_bytes

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={self.vocab_size})"


class CharTokenizer(Tokenizer):
    """One token per character seen at least ``min_count`` times in training; other characters are
    spelled in their UTF-8 bytes. A character of one byte (ASCII) *is* its byte token, so an English
    text's vocabulary is the 256 bytes; each longer character (e.g. Chinese, 3 bytes) gets an id from
    256 on, most frequent first. ``min_count=2`` spells the characters seen once in bytes, so the
    model learns what a rare character costs (held-out text always has characters training never saw).
    """

    kind = "char"

    def __init__(self, chars: list[str]):
        self.chars = list(chars)
        if any(len(c) != 1 or len(utf8(c)) == 1 for c in self.chars) or len(set(self.chars)) != len(self.chars):
            raise ValueError("chars must be distinct single characters of 2 or more UTF-8 bytes (ASCII are bytes)")
        super().__init__(BYTES + [utf8(c) for c in self.chars])
        self.ids = {c: 256 + i for i, c in enumerate(self.chars)}

    @classmethod
    def train(cls, text: str, *, min_count: int = 1) -> CharTokenizer:
        """The characters of ``text`` with ``count >= min_count`` (ties: by code point) as tokens above the bytes."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
            raise ValueError(f"min_count must be a positive integer, got {min_count!r}")
        counts = Counter(text)
        chars = sorted((c for c, n in counts.items() if n >= min_count and len(utf8(c)) > 1),
                       key=lambda c: (-counts[c], c))
        return cls(chars)

    def encode(self, text: str) -> list[int]:
        """A character with its own token -> that id, any other -> its UTF-8 bytes (ids 0..255)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        ids = []
        for c in text:
            i = self.ids.get(c)
            if i is None:
                ids.extend(utf8(c))
            else:
                ids.append(i)
        return ids

    def to_dict(self) -> dict:
        return {"kind": self.kind, "chars": "".join(self.chars)}


def tokenizer_from_dict(d: dict, where: str = "the tokenizer's dict") -> Tokenizer:
    """A tokenizer from its ``to_dict()`` (what :meth:`Tokenizer.save` writes); a malformed one is a ``ValueError``
    naming ``where`` (its file) and what is missing or wrong."""
    from .bpe import BPETokenizer  # bpe builds on this module

    fields = {CharTokenizer.kind: {"chars": str}, BPETokenizer.kind: {"merges": list, "pattern": str | None}}
    kind = check_fields(d, where, {"kind": str})["kind"]
    if kind not in fields:
        raise ValueError(f"{where}: unknown tokenizer kind {kind!r}; expected one of {sorted(fields)}")
    check_fields(d, where, {"kind": str} | fields[kind], optional=["pattern"])  # None: GPT-2's pattern
    try:
        if kind == CharTokenizer.kind:
            return CharTokenizer(list(d["chars"]))
        return BPETokenizer(d["merges"], pattern=d.get("pattern"))
    except (TypeError, ValueError) as e:  # what the tokenizer refuses, said of the file
        raise ValueError(f"{where}: {e}") from None


def load_tokenizer(path) -> Tokenizer:
    """The tokenizer :meth:`Tokenizer.save` wrote to ``path``."""
    return tokenizer_from_dict(read_json(path), str(path))
