"""Files written whole or not at all: the text goes to a temporary name, which is then renamed over the target.

A reader never sees half a file, and a refused write (the caller serialises first) leaves the old file as it was.
The tokenizers' and the checkpoints' JSON files go through here, and are read back by :func:`read_json`.
"""

from __future__ import annotations

import json
import os

__all__ = ["read_json", "write_text_atomically"]


def read_json(path):
    """The JSON value in ``path`` (UTF-8), or a ``ValueError`` naming the file when its text is not JSON."""
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except ValueError as e:  # json.JSONDecodeError, or UnicodeDecodeError: neither names the file
            raise ValueError(f"{os.fspath(path)} is not JSON (as the package's save functions write): {e}") from None


def write_text_atomically(path, text: str) -> None:
    """``text`` (UTF-8) at ``path``, through ``path + ".tmp"`` and one rename."""
    tmp = f"{os.fspath(path)}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
