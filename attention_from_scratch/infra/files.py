"""Files written whole or not at all: the text goes to a temporary name, which is then renamed over the target.

A reader never sees half a file, and a refused write (the caller serialises first) leaves the old file as it was.
The tokenizers' and the checkpoints' JSON files go through here.
"""

from __future__ import annotations

import os

__all__ = ["write_text_atomically"]


def write_text_atomically(path, text: str) -> None:
    """``text`` (UTF-8) at ``path``, through ``path + ".tmp"`` and one rename."""
    tmp = f"{os.fspath(path)}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
