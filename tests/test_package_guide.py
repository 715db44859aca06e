"""docs/guide/package.md's table of modules against the package: every module it names exists and holds every
name it lists, and every module of the concepts, infra/, model/ and text/ has a row (the table had rows for
modules that had been renamed or merged, and none for a dozen that had been added)."""

from __future__ import annotations

import builtins
import dataclasses
import importlib
import inspect
import re
from pathlib import Path

import attention_from_scratch

REPO = Path(__file__).resolve().parents[1]
PACKAGE = Path(attention_from_scratch.__file__).parent
NAME = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")  # a backticked Python name (not `kind="dsa"`, not `x @ W`)


def _rows():
    """(modules named in the first cell, the second cell) of each row that names .py files, but the course's."""
    rows = []
    for line in (REPO / "docs" / "guide" / "package.md").read_text(encoding="utf-8").splitlines():
        cells = line.split(" | ")
        if line.startswith("| `") and len(cells) >= 2:
            modules = re.findall(r"`([\w/]+\.py)`", cells[0])
            if modules and not cells[0].startswith("| `course/"):  # the course's rows name files inside folders
                rows.append((modules, " | ".join(cells[1:])))
    return rows


def _module(path: str):
    return importlib.import_module("attention_from_scratch." + path.removesuffix(".py").replace("/", "."))


def _names(module) -> set[str]:
    """What a row may name of ``module``: its attributes (a function or a class only in the module that defines
    it, not where it is imported), the members and fields of its classes, the parameters of its functions and
    classes, the keys of its dicts (``__main__``'s sub-commands), and Python's builtins."""
    names = {name for name, value in vars(module).items()  # a function or class only where it is defined
             if not (inspect.isfunction(value) or inspect.isclass(value)) or value.__module__ == module.__name__}
    names |= set(dir(builtins))
    for value in vars(module).values():
        if isinstance(value, dict):
            names |= {k for k in value if isinstance(k, str)}
        if inspect.isclass(value):
            names |= set(dir(value)) | {f.name for f in dataclasses.fields(value)} if dataclasses.is_dataclass(value) \
                else set(dir(value))
        if callable(value):
            try:
                names |= set(inspect.signature(value).parameters)
            except (TypeError, ValueError):  # a builtin without a signature
                pass
    return names


def test_every_name_the_table_lists_is_in_its_modules():
    rows = _rows()
    assert len(rows) > 40, f"only {len(rows)} rows read: is the table's format changed?"
    missing = []
    for modules, text in rows:
        names = set().union(*(_names(_module(m)) for m in modules))
        missing += [f"{', '.join(modules)}: {name}" for name in NAME.findall(text) if name not in names]
    assert not missing, "names the table lists but its modules do not hold:\n" + "\n".join(missing)


def test_every_module_has_a_row():
    named = {m for modules, _ in _rows() for m in modules}
    modules = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
               if p.name != "__init__.py" and p.parts[len(PACKAGE.parts)] not in ("course",)}
    assert not modules - named, f"modules without a row in docs/guide/package.md: {sorted(modules - named)}"
