"""Real text: the corpora, read where Debian installs them, cleaned, and split by document.

Three public-domain texts are one ``apt-get`` away on Debian and Ubuntu, and any UTF-8 file works too:

* ``tang``: *Three Hundred Tang Poems* (唐诗三百首), 313 documents, ~25k characters (verse only), in
  ``/usr/share/games/fortunes/tang300`` (Debian package ``fortunes-zh``);
* ``song``: Song poems (宋诗), 96 documents, ~7k characters (verse only), in ``/usr/share/games/fortunes/song100``
  (``fortunes-zh``);
* ``devil``: Bierce's *The Devil's Dictionary* (1911), in ``/usr/share/dictd/devil.dict.dz``
  (``dict-devil``).

Cleaning. The fortune files hold entries separated by a line ``%``; each entry's first line is the
title and its second the author, both wrapped in ANSI colour codes (``ESC[32m ... ESC[m``), which are
removed. With ``titles=False`` (the default) a poem is its verse lines only: the title and author
lines, blank lines and sub-headings (a line with no punctuation, e.g. ``其一``) are dropped and every
line is stripped. ``titles=True`` keeps the title and author lines (colour codes removed) above the
verse. The dictionary is dictd's format: a gzip file (``.dict.dz``) of all the entries, and an index
whose lines are ``headword TAB offset TAB length`` (offset and length in dictd's base-64 digits,
``A-Za-z0-9+/``); entries come from the index (a text shared by two headwords once), the
``00database*`` entries (the preface, the URL, the licence) are the dictionary's headers and are left
out, and trailing spaces are stripped. A text file of your own is split into documents at blank lines.
A file not in its reader's format (a plain text passed as ``path=`` of ``tang``), or one that holds no
document, is refused with the format expected (:data:`FORMATS`), never read as an empty corpus.

Held-out split. :meth:`Corpus.split` holds out whole documents (poems, dictionary entries,
paragraphs), drawn with ``numpy.random.default_rng(seed)``, so no poem has lines on both sides.
Identical documents are merged before the split (none occur in these three texts).

Texts are read from the machine, never stored in the repository. Where ``apt-get`` is not available (macOS,
Windows), ``python -m attention_from_scratch corpora`` downloads the two Debian packages and unpacks the corpus files
into a cache folder (:func:`corpus_cache`), where a named corpus is looked for after Debian's paths
(:mod:`.debian`).
"""

from __future__ import annotations

import gzip
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["CORPORA", "Corpus", "CorpusNotFoundError", "NamedCorpus", "corpus_cache", "load_corpus"]

ANSI_CODE = re.compile(r"\x1b\[[0-9;]*m")  # "ESC[32m" (green) ... "ESC[m" (reset)
DICTD_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"  # dictd's base 64
PUNCTUATION = set("，。？！；：、,.?!;:")  # a line holding none of these is a heading, not verse
FORMATS = {  # what each reader expects, said when a file is not that (a wrong format must not read as 0 documents)
    "fortunes": "a fortune file (fortunes-zh's format: poems separated by lines '%', each a title line, "
                "an author line, then the verse)",
    "dictd": "a dictd dictionary (NAME.dict.dz or NAME.dict beside NAME.index, whose lines are "
             "'headword TAB offset TAB length')",
    "text": "UTF-8 text, documents separated by blank lines",
}


class CorpusNotFoundError(FileNotFoundError):
    """A named corpus is not installed (the message says which Debian package installs it)."""


@dataclass(frozen=True)
class Corpus:
    """A text as a tuple of documents (poems, entries, paragraphs), joined by ``separator`` when trained on."""

    name: str
    documents: tuple[str, ...]
    source: str = ""  # the file it was read from
    separator: str = "\n\n"  # between documents in :attr:`text`: a blank line

    @property
    def text(self) -> str:
        """The documents joined by the separator: the character stream a model reads."""
        return self.separator.join(self.documents)

    def __len__(self) -> int:
        return len(self.documents)

    def split(self, held_out: float = 0.1, *, seed: int = 0) -> tuple[Corpus, Corpus]:
        """``(train, held)``: ``round(held_out · n)`` whole documents (at least 1) drawn by
        ``default_rng(seed)`` go to ``held``, the rest to ``train``; both keep the original order."""
        if not 0 < held_out < 1:
            raise ValueError(f"held_out must be a fraction in (0, 1), got {held_out!r}")
        if len(self.documents) < 2:
            raise ValueError(f"corpus {self.name!r} has {len(self.documents)} document(s): a split needs 2 or more")
        n = len(self.documents)
        n_held = min(n - 1, max(1, round(held_out * n)))
        held = set(np.random.default_rng(seed).permutation(n)[:n_held].tolist())
        parts = [tuple(d for i, d in enumerate(self.documents) if (i in held) == side) for side in (False, True)]
        return tuple(Corpus(f"{self.name}:{tag}", docs, self.source, self.separator)
                     for tag, docs in zip(("train", "held-out"), parts, strict=True))

    def __add__(self, other: Corpus) -> Corpus:
        """Both corpora's documents (e.g. Tang training poems plus the Song poems)."""
        return Corpus(f"{self.name}+{other.name}", self.documents + other.documents, self.source, self.separator)


@dataclass(frozen=True)
class NamedCorpus:
    """Where Debian installs a named corpus, which package does it, and how its file is read."""

    description: str
    paths: tuple[str, ...]  # tried in order
    package: str
    reader: str  # "fortunes" or "dictd"

    def installed(self, cache: str | os.PathLike | None = None) -> str | None:
        """The first of :attr:`paths` that is a file (where the package put it), else the first of their copies in
        ``cache`` (default :func:`corpus_cache`: where ``python -m attention_from_scratch corpora`` puts them), or
        None."""
        cache = corpus_cache() if cache is None else Path(cache)
        copies = (os.fspath(cache / p.lstrip("/")) for p in self.paths)
        return next((p for p in (*self.paths, *copies) if os.path.isfile(p)), None)


def corpus_cache() -> Path:
    """Where :func:`~attention_from_scratch.text.debian.fetch_corpora` unpacks the corpora's Debian files (under the
    paths the packages install them at): ``$ATTENTION_FROM_SCRATCH_CACHE/debian``, else
    ``~/.cache/attention_from_scratch/debian`` (``$XDG_CACHE_HOME`` in place of ``~/.cache`` where it is set)."""
    root = os.environ.get("ATTENTION_FROM_SCRATCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "attention_from_scratch")
    return Path(root) / "debian"


CORPORA = {
    "tang": NamedCorpus("300 Tang poems", ("/usr/share/games/fortunes/tang300.u8",
                                           "/usr/share/games/fortunes/tang300"), "fortunes-zh", "fortunes"),
    "song": NamedCorpus("100 Song poems", ("/usr/share/games/fortunes/song100.u8",
                                           "/usr/share/games/fortunes/song100"), "fortunes-zh", "fortunes"),
    "devil": NamedCorpus("Ambrose Bierce's The Devil's Dictionary", ("/usr/share/dictd/devil.dict.dz",),
                         "dict-devil", "dictd"),
}


def load_corpus(name_or_path: str | os.PathLike, *, path: str | os.PathLike | None = None,
                titles: bool = False) -> Corpus:
    """A named corpus (``"tang"``, ``"song"``, ``"devil"``; ``path=`` overrides where its file is) or any
    UTF-8 text file (split into documents at blank lines). ``titles``: keep the poems' title and author
    lines (named poem corpora only). A missing named corpus raises :class:`CorpusNotFoundError`."""
    key = os.fspath(name_or_path)
    if key not in CORPORA:
        if path is not None:
            raise ValueError(f"path= is for the named corpora {sorted(CORPORA)}; got a file name {key!r} already")
        if not os.path.isfile(key):
            raise FileNotFoundError(f"no text file {key!r}; the named corpora are {', '.join(sorted(CORPORA))}")
        return Corpus(os.path.basename(key), _documents(_paragraphs(_read_utf8(key)), key, "text"), key)
    spec = CORPORA[key]
    candidates = spec.paths if path is None else (os.fspath(path),)
    found = spec.installed() if path is None else (candidates[0] if os.path.isfile(candidates[0]) else None)
    if found is None:
        raise CorpusNotFoundError(
            f"corpus {key!r} ({spec.description}) is not installed: no file at {', '.join(candidates)}. "
            f"Install it with `sudo apt-get install {spec.package}` (Debian, Ubuntu); on any system, "
            f"`python -m attention_from_scratch corpora` downloads Debian's package into {corpus_cache()}; or pass the "
            f"path of any UTF-8 text file instead of a name, e.g. load_corpus('my_text.txt')"
        )
    documents = read_dictd(found) if spec.reader == "dictd" else read_fortunes(found, titles=titles)
    return Corpus(key, _documents(documents, found, spec.reader), found)


def read_fortunes(path, *, titles: bool = False) -> list[str]:
    """The poems of a fortune file (``fortunes-zh``'s format, see the module docstring), cleaned."""
    text = ANSI_CODE.sub("", _read_utf8(path))
    entries = re.split(r"^%[ \t]*$", text, flags=re.MULTILINE)  # a line "%" (some with trailing spaces)
    if len(entries) < 2:  # a plain text's first two lines would be read as a title and an author
        raise ValueError(f"{os.fspath(path)!r} has no line '%': expected {FORMATS['fortunes']}")
    poems = []
    for entry in entries:
        lines = [line.strip() for line in entry.strip("\n").split("\n")]
        if not any(lines):
            continue
        head, verse = lines[:2], [line for line in lines[2:] if PUNCTUATION.intersection(line)]
        poems.append("\n".join(head + verse if titles else verse))
    return poems


def read_dictd(path) -> list[str]:
    """The entries of a dictd dictionary (``NAME.dict.dz`` beside ``NAME.index``), headers left out."""
    index = re.sub(r"\.dict(\.dz)?$", ".index", os.fspath(path))
    if index == os.fspath(path) or not os.path.isfile(index):
        why = "is not named NAME.dict[.dz]" if index == os.fspath(path) else f"has no index {index!r} beside it"
        raise ValueError(f"{os.fspath(path)!r} {why}: expected {FORMATS['dictd']}")
    with gzip.open(path) if os.fspath(path).endswith(".dz") else open(path, "rb") as f:
        data = f.read()
    spans = set()
    for n, line in enumerate(_read_utf8(index).splitlines(), 1):
        fields = line.split("\t")
        if len(fields) < 3 or not all(f and set(f) <= set(DICTD_DIGITS) for f in fields[1:3]):
            raise ValueError(f"{index!r} line {n}: {line!r} is not 'headword TAB offset TAB length' "
                             f"(dictd's base-64 digits): expected {FORMATS['dictd']}")
        if not fields[0].startswith("00database"):
            spans.add((_dictd_number(fields[1]), _dictd_number(fields[2])))
    entries = (data[start : start + length].decode("utf-8") for start, length in sorted(spans))
    return [re.sub(r"[ \t]+$", "", e, flags=re.MULTILINE).strip("\n") for e in entries]


def _dictd_number(digits: str) -> int:
    """dictd's base-64 number: ``"BdqM"`` -> 1·64³ + 29·64² + 42·64 + 12."""
    n = 0
    for digit in digits:
        n = 64 * n + DICTD_DIGITS.index(digit)
    return n


def _read_utf8(path) -> str:
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read().replace("\r\n", "\n")
    except UnicodeDecodeError as e:
        raise ValueError(f"{os.fspath(path)!r} is not UTF-8 text ({e.reason} at byte {e.start}); "
                         "convert it first, e.g. iconv -f GB18030 -t UTF-8") from None


def _paragraphs(text: str) -> list[str]:
    """A plain text's documents: its paragraphs, separated by blank lines, trailing spaces stripped."""
    paragraphs = (re.sub(r"[ \t]+$", "", p, flags=re.MULTILINE).strip("\n") for p in re.split(r"\n[ \t]*\n", text))
    return [p for p in paragraphs if p.strip()]


def _documents(documents, path, reader: str) -> tuple[str, ...]:
    """Documents in order, each identical one kept once (a copy on both sides of a split would leak); none is a
    ``ValueError`` saying the format expected (a file in another format can read as no document)."""
    unique = tuple(dict.fromkeys(d for d in documents if d))
    if not unique:
        raise ValueError(f"{os.fspath(path)!r} holds no document: expected {FORMATS[reader]}")
    return unique
