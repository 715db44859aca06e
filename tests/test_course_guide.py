"""docs/guide/course.md's "Train it yourself" snippet, run as a reader would paste it: it prints what its comments
say (it was the one runnable block of the guide that no test ran)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _snippet() -> str:
    """The first Python block after the guide's "## Train it yourself" heading."""
    text = (REPO / "docs" / "guide" / "course.md").read_text(encoding="utf-8")
    section = text.split("## Train it yourself", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


def test_the_train_it_yourself_snippet_prints_what_its_comments_say():
    code = _snippet()
    printed = [line.split("#", 1)[1].strip() for line in code.splitlines() if line.startswith("print(")]
    assert len(printed) == 2, "each print of the snippet says its output in a comment"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "course.md", "exec"), {})  # the repository's own documentation
    lines = out.getvalue().splitlines()
    assert len(lines) == len(printed)
    for got, comment in zip(lines, printed, strict=True):
        assert comment.endswith(got), f"the snippet printed {got!r}; its comment says {comment!r}"
