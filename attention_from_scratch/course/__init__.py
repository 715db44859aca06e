"""The course machinery: what serves the notebooks, not the concepts they teach.

- :mod:`.quiz` (with :mod:`.quiz_notes` and :mod:`.quiz_notes_articles`): the articles' ten questions and
  the course's own, with an explanation for every option.
- :mod:`.exercises`: ``check(name, fn)`` for the "Write it yourself" exercises, one module of cases per concept.
- :mod:`.student`: copies of the notebooks without solutions, answer keys or outputs.
- :mod:`.tour`: ``python -m attention_from_scratch``, one checked computation per concept.
- :mod:`.bench`: the quick versions of ``benchmarks/``.
- :mod:`.examples`: the hand-built examples that a notebook and its figure share.
- :mod:`.plots`: the figures (they only draw).
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["output_folder", "say"]


def say(*lines, file=None) -> None:
    """Print ``lines`` so that every character survives the terminal's encoding.

    On an ASCII terminal a path with Chinese characters would raise ``UnicodeEncodeError``; characters
    the stream cannot encode are written as ``\\uXXXX`` escapes instead.
    """
    stream = sys.stdout if file is None else file
    encoding = getattr(stream, "encoding", None) or "utf-8"
    text = "\n".join(map(str, lines)) + "\n"
    stream.write(text.encode(encoding, "backslashreplace").decode(encoding))


def output_folder(out, name: str = "OUTDIR") -> Path:
    """``out`` as a folder the command may write into, or a ``ValueError`` that says what is wrong with it.

    Refused: an empty name (it would mean the current folder), an existing file, and a path below a file.
    The folder itself may not exist yet (the command creates it).
    """
    if not str(out).strip():
        raise ValueError(f"{name} must name a folder, got an empty string (write . for the current folder)")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{name} {path} is a file, not a folder")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise ValueError(f"{name} {path} lies under {parent}, which is a file, not a folder")
    return path
