"""Docstrings written as plain text for ``help()``, made safe for reST (autodoc's input); used by conf.py.

The package's docstrings read well in a terminal, but reST would misread three habits of theirs:

* ``|a|`` (a norm) is reST's substitution syntax: the bars are escaped.
* An indented display after a line ending in ":" (a formula, a layout) is shown as written: the ":"
  becomes reST's "::", which makes the display a literal block.
* A hanging indent (a line indented under the line above, no blank line between) continues that
  paragraph or list item: it is aligned with it. A line that comes back out, and a bulleted list
  ("* ", "- ") right under a paragraph line, get the blank line before them that reST needs.

Literal blocks, doctest lines, directives, fields and ``inline literals`` are left alone. The hook runs
after napoleon, whose output is reST already.
"""

from __future__ import annotations

import re

_LEAVE = (".. ", ":", ">>>", "...")
_BULLET = re.compile(r"^([*+-] +|\d+[.)] +)")


def _escape_bars(line: str) -> str:
    parts = line.split("``")
    return "``".join(p if i % 2 else p.replace("|", "\\|") for i, p in enumerate(parts))


def plain_text_docstring(app, what, name, obj, options, lines: list[str]) -> None:
    """Sphinx's ``autodoc-process-docstring`` hook: rewrite ``lines`` in place (see the module docstring)."""
    out, literal_indent, prev = [], None, None  # prev: index in out of the last non-blank line
    list_indent = None  # the indent of the bullets of the list we are in, if any
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if not line.strip() or (literal_indent is not None and indent > literal_indent):
            out.append(line)  # a blank line, or a line inside a literal block
            continue
        literal_indent = None
        if prev is not None:
            above = out[prev].rstrip()
            above_indent = len(above) - len(above.lstrip())
            leave = above.lstrip().startswith(_LEAVE)
            if indent > above_indent and above.endswith(":") and not above.endswith("::") and not leave:
                out[prev] = above + ":"  # "...:" then an indented display: a literal block
                if out[-1].strip():
                    out.append("")
                out.append(line)
                literal_indent = above_indent
                continue
            if out[-1].strip() and not leave:
                bullet = _BULLET.match(above.lstrip())
                column = above_indent + (len(bullet.group(1)) if bullet else 0)
                if indent > column:
                    line, indent = " " * column + line.lstrip(), column  # a hanging indent
            if out[-1].strip() and indent < above_indent:
                out.append("")  # back out of an indented block or a list
            elif out[-1].strip() and line.lstrip().startswith(("* ", "- ")) and list_indent != indent \
                    and not leave:
                out.append("")  # a list right under a paragraph line: reST needs a blank line between
        list_indent = indent if line.lstrip().startswith(("* ", "- ")) else (
            None if list_indent is None or indent <= list_indent else list_indent)
        stripped = line.strip()
        out.append(line if stripped.startswith((">>>", "...")) else _escape_bars(line))
        prev = len(out) - 1
        if stripped.endswith("::"):
            literal_indent = indent
    lines[:] = out
