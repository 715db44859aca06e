"""Where the course's files are: in the checkout, or the copies that a wheel ships.

In a git checkout (``pip install -e .``) the notebooks and the Chinese message catalogs are read where
they are maintained, ``notebooks/`` and ``translations/`` beside the package. An installed wheel has no
checkout around it: its build (``setup.py``) copies them into the package, under
``attention_from_scratch/course/data/`` (the notebooks without their outputs, which ``student`` clears
anyway), and this module finds them there.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CHECKOUT", "SHIPPED", "course_folder"]

CHECKOUT = Path(__file__).resolve().parents[2]  # the repository root, when the package sits in one
SHIPPED = Path(__file__).resolve().parent / "data"  # what a wheel's build copied into the package
FOLDERS = ("notebooks", "translations")


def course_folder(name: str) -> Path:
    """``notebooks`` or ``translations``: the checkout's folder when the package sits in a checkout, else the
    copy a wheel ships (which may be missing: the caller says what to do then)."""
    if name not in FOLDERS:
        raise ValueError(f"name must be one of {', '.join(FOLDERS)}, got {name!r}")
    in_checkout = (CHECKOUT / "pyproject.toml").is_file() and (CHECKOUT / name).is_dir()
    return CHECKOUT / name if in_checkout else SHIPPED / name
