"""The form of a text, measured: what a bigram cannot keep and a Transformer can.

Most Tang poems have a strict shape: lines of two clauses (in Chinese prosody each clause is a 句 and a
line of two is a couplet, 联), each of 5 characters (五言) or 7 (七言), the same length throughout the poem;
regulated verse (近体诗: 绝句, 律诗) must, old-style verse (古体诗, 乐府, 歌行 such as 蜀道难) need not, and in
the ``tang`` file 291 of the 313 poems have every clause of one length, 5 or 7. The editors' punctuation
puts a comma (，) between the clauses and a full stop (。) or another end mark (？！) at the end of the line:

    兰叶春葳蕤，桂华秋皎洁。
    欣欣此生意，自尔为佳节。

A bigram model sees one character back: it writes punctuation at about the right rate, but not after
exactly 5 or 7 characters, and cannot keep the length from one line to the next. :func:`poem_form`
measures each of these on any text (real poems, a model's samples, a bigram's samples) so they can be
compared side by side; :func:`definition_form` does the same for dictionary entries ("WORD, n.  ...").
:func:`distinct_ngrams` and :func:`repeated_ngrams` measure what the sampling knobs change: diversity
and repetition.

Clauses are the runs of non-punctuation characters between punctuation marks or line ends.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

__all__ = ["CLAUSE_MARKS", "END_MARKS", "clauses", "definition_form", "distinct_ngrams", "poem_form", "repeated_ngrams"]

CLAUSE_MARKS = "，、；："  # inside a line
END_MARKS = "。？！"  # at the end of a line
_SPLIT = re.compile(f"[{CLAUSE_MARKS}{END_MARKS}]")
# "ABASEMENT, n." / "ABATIS, n." / "ADORE, v.t." / "BEG, v." : a capitalised headword, a comma, a part of speech
HEADWORD = re.compile(r"^[A-Z][A-Z'\- ]*[A-Z], [a-z.]+\.")


def clauses(line: str) -> list[str]:
    """The clauses of a line: the text between its punctuation marks (empty pieces dropped)."""
    return [c for c in _SPLIT.split(line.strip()) if c]


def poem_form(text: str) -> dict[str, float]:
    """Form statistics of the poems in ``text`` (poems separated by blank lines), each a fraction in [0, 1]:

    ``clause_5_or_7``      clauses of exactly 5 or 7 characters
    ``two_equal_clauses``  lines made of exactly two clauses of equal length
    ``marks_in_place``     lines of the shape  clause ， clause (。|？|！)
    ``poem_regular``       poems whose clauses all have one length, 5 or 7 (at least one full line)

    plus ``clause_length`` (the mean) and ``lines`` (how many lines were measured).
    """
    poems = [[line.strip() for line in p.split("\n") if line.strip()] for p in re.split(r"\n\s*\n", text)]
    poems = [p for p in poems if p]
    lines = [line for p in poems for line in p]
    lengths = [len(c) for line in lines for c in clauses(line)]
    shape = re.compile(f"^[^{CLAUSE_MARKS}{END_MARKS}]+，[^{CLAUSE_MARKS}{END_MARKS}]+[{END_MARKS}]$")

    def regular(poem):
        sizes = {len(c) for line in poem for c in clauses(line)}
        return len(sizes) == 1 and sizes <= {5, 7} and any(shape.match(line) for line in poem)

    def two_equal(line):
        parts = clauses(line)
        return len(parts) == 2 and len(parts[0]) == len(parts[1])

    return {
        "clause_5_or_7": _mean([n in (5, 7) for n in lengths]),
        "two_equal_clauses": _mean([two_equal(line) for line in lines]),
        "marks_in_place": _mean([bool(shape.match(line)) for line in lines]),
        "poem_regular": _mean([regular(p) for p in poems]),
        "clause_length": _mean(lengths),
        "lines": float(len(lines)),
    }


def definition_form(text: str) -> dict[str, float]:
    """Form statistics of the paragraphs of ``text`` (separated by blank lines), as for the Devil's
    Dictionary: ``headword`` (entries opening like ``WORD, n.``), ``known_pos`` (of those, a part of
    speech the real dictionary uses: n., v., v.t., v.i., adj., adv., pp., p., x.), ``words_per_entry``."""
    entries = [e.strip() for e in re.split(r"\n\s*\n", text) if e.strip()]
    heads = [HEADWORD.match(e) for e in entries]
    pos = Counter(h.group(0).split(", ")[-1] for h in heads if h)
    known = sum(n for p, n in pos.items() if p in {"n.", "v.", "v.t.", "v.i.", "adj.", "adv.", "pp.", "p.", "x."})
    return {
        "headword": _mean([h is not None for h in heads]),
        "known_pos": known / max(1, sum(pos.values())),
        "words_per_entry": _mean([len(e.split()) for e in entries]),
    }


def distinct_ngrams(text: str, n: int = 2) -> float:
    """Diversity: distinct character n-grams / all character n-grams of ``text`` (1 = nothing repeats)."""
    grams = [text[i : i + n] for i in range(len(text) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 0.0


def repeated_ngrams(text: str, n: int = 4) -> float:
    """Repetition: the fraction of character n-grams that already occurred earlier in ``text`` (greedy
    decoding's loops push it towards 1)."""
    seen, repeats, total = set(), 0, 0
    for i in range(len(text) - n + 1):
        gram = text[i : i + n]
        repeats, total = repeats + (gram in seen), total + 1
        seen.add(gram)
    return repeats / total if total else 0.0


def _mean(values) -> float:
    return float(np.mean(values)) if len(values) else 0.0
