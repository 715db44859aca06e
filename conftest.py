"""Notebooks are tests (nbval), but only where notebooks are collected.

nbval's plugin imports nbformat's schema validators and jupyter_client when it loads: seconds of imports
that every ``pytest`` call would pay, even for one unit-test file. So pyproject.toml's ``addopts`` keeps
the plugin off (``-p no:nbval``) and this hook hands a ``.ipynb`` file to nbval's collector, importing it
the first time a notebook is collected. ``pytest`` (README's test command: testpaths ``tests`` and
``notebooks``) and ``pytest notebooks/NN_x.ipynb`` re-execute notebooks as ``--nbval`` did;
``pytest tests/test_softmax.py`` never imports nbval.

The settings are what ``--nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg``
said: run each notebook in this environment's kernel, compare every output (but images) with the stored
one after the sanitizing rules. Someone who loads nbval itself (``pytest -p nbval --nbval ...``) keeps
nbval's own collection, options and values.

README's command, ``pytest -n auto``, runs the suite on every core (pytest-xdist), a file at a time
(``--dist loadfile`` in pyproject.toml: a notebook's cells run in order in one kernel). A core that finishes a
file takes the next, so the longest files go first and the short ones fill in around them: the browser tests of
the website (tens of seconds each; in a run of their own, ``-m website``, after the site's build: README, "Read
more"), then the notebooks (seconds each), then the unit tests' files (the longest two first:
``LONG_UNIT_FILES``), each kind in its own order (``--no-loadscope-reorder`` keeps this order; xdist's own puts
the files with most tests first).
The browser files whose tests share nothing but the browser (``APART``) are handed out a test at a time instead:
the layout check of every page, in the site's parts, would otherwise hold one core for a minute while the other
ran out of work.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from pathlib import Path

import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):
    # pytest -n auto: each worker has a core of its own, so it and the notebook kernels and subprocesses it starts
    # get one BLAS thread each (two workers at two BLAS threads each ran four threads on two cores: 152 s against
    # 173-180 s for the suite, measured on the 2-core machine). Set before NumPy loads; a count set by the user
    # is kept. The tests of the BLAS limits raise the count for themselves (tests/test_flash.py, blas_at_two).
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")

# nbval's option -> the value our runs use, set where nbval's own plugin is not loaded
NBVAL_SETTINGS = {
    "nbval_current_env": True,  # the kernel of the environment pytest runs in, not the notebook's kernelspec
    "nbval_sanitize_with": str(Path(__file__).resolve().parent / "tests" / "nbval_sanitize.cfg"),
    "nbval_lax": False,  # compare every output, not only the cells marked NBVAL_CHECK_OUTPUT
    "nbval_kernel_name": None,
    "nbval_cell_timeout": 2000.0,  # nbval's defaults (seconds)
    "nbval_kernel_startup_timeout": 60.0,
    "nbdime": False,
}


def pytest_collect_file(file_path, parent):
    if file_path.suffix != ".ipynb" or parent.config.pluginmanager.has_plugin("nbval"):
        return None
    option = parent.config.option
    for name, value in NBVAL_SETTINGS.items():
        if not hasattr(option, name):
            setattr(option, name, value)
    return notebook_file_class().from_parent(parent, path=file_path)


@functools.cache
def notebook_file_class():
    """nbval's collector of a notebook (imported here: the heavy import, paid only when a notebook is collected),
    whose kernel is started a second time if the first did not start (:func:`start_kernel_again_once`)."""
    # nbval reads notebooks with nbformat, whose validator imports jsonschema, which imports rfc3987_syntax where it
    # is installed (jupyterlab's dependencies bring it) to offer the "iri" string format; that import builds a Lark
    # grammar, 0.85 s of each pytest-xdist worker's start (nbval's import: 1.1 s with it, 0.25 s without). nbformat
    # checks no string format, so the run goes without it, as where it is not installed (jsonschema then leaves that
    # one format out: a test of ours that validated "iri" strings with jsonschema would have to import it first); a
    # process that already imported it keeps it
    sys.modules.setdefault("rfc3987_syntax", None)
    from nbval.plugin import IPyNbFile

    class NotebookFile(IPyNbFile):
        def setup(self):
            start_kernel_again_once(super().setup, self.path.name)

    return NotebookFile


def start_kernel_again_once(setup, name: str) -> None:
    """``setup()``, nbval's start of a notebook's kernel, and once more if it raised RuntimeError, with a warning.

    A kernel talks to nbval on five TCP ports that jupyter_client picks (each free at that moment) and the kernel
    binds a moment later, in another process: on ``pytest -n auto`` another worker's kernel, browser or server can
    take one in between. A kernel given a port that another socket holds dies with "Address already in use", and
    nbval sees "Kernel died before replying to kernel_info" (tried by hand): the error with which CI once lost
    notebook 19's 14 cells (2026-12-05; the kernel's stderr goes nowhere, so its cause there is not known; the
    next run of the same commit passed). The second start picks new ports. A notebook whose kernel cannot start
    fails as before, with the second start's error; the first one is in pytest's warnings summary.
    """
    try:
        setup()
    except RuntimeError as error:
        warnings.warn(f"{name}: its kernel did not start ({error}); started once more", stacklevel=2)
        setup()


# the website's test files (all but test_site.py drive a browser), the longest first; those whose tests are handed
# out one at a time: each test opens its own pages, and only the browser (a second to start) is shared
BROWSER_FILES = ("test_site_layout.py", "test_site.py", "test_site_interactive.py", "test_site_search.py")
APART = {"test_site_layout.py", "test_site_interactive.py", "test_site_search.py"}
# the unit tests' longest files (8-17 s and 4-7 s of a core), before the others: the last files handed out are then
# short ones, and the two cores finish together
LONG_UNIT_FILES = ("test_plotting.py", "test_translations.py")


# the notebooks that read the real-text corpora, Debian/Ubuntu packages that macOS and Windows do not have: there
# they are skipped, naming the packages, unless REQUIRE_CORPORA=1 (.ci/run, which installs them) asks them to run
NEEDS_CORPORA = {"14_real_text.ipynb": ("tang", "song", "devil")}


def _missing_corpora(names) -> str:
    """The Debian packages that would install the corpora ``names`` not found here ('' when all are)."""
    from attention_from_scratch.text.corpora import CORPORA

    return " ".join(sorted({CORPORA[name].package for name in names if CORPORA[name].installed() is None}))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The browser tests first, then the notebooks, then the rest (see the docstring above); stable within each.
    A notebook of ``NEEDS_CORPORA`` is skipped where its corpora are not installed (and REQUIRE_CORPORA is not 1).
    A test that reads the built website (the ``site`` fixture) or drives Chromium (``browser``) is marked
    ``website``, which README's test command leaves out (pyproject.toml) and ``-m website`` runs (README, "Read
    more"); it runs before pytest's ``-m`` selects (tryfirst)."""
    for item in items:
        if {"site", "browser"} & set(getattr(item, "fixturenames", ())):  # a notebook's cells have none
            item.add_marker(pytest.mark.website)
    if os.environ.get("REQUIRE_CORPORA") != "1":
        missing = {name: _missing_corpora(names) for name, names in NEEDS_CORPORA.items()
                   if any(item.path.name == name for item in items)}
        for item in items:
            if missing.get(item.path.name):
                item.add_marker(pytest.mark.skip(
                    reason=f"its corpora are not installed (Debian/Ubuntu: sudo apt install "
                           f"{missing[item.path.name]}; REQUIRE_CORPORA=1 makes this a failure)"))

    def rank(item):
        name = item.path.name
        if name in BROWSER_FILES:
            return BROWSER_FILES.index(name)
        if item.path.suffix == ".ipynb":
            return 10
        return 11 + LONG_UNIT_FILES.index(name) if name in LONG_UNIT_FILES else 20

    items.sort(key=rank)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's: unknown where it is not installed
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``, but each test of an ``APART`` file is a work unit of its own."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FilesAndApartTests(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = super()._split_scope(nodeid)
            return nodeid if file.rsplit("/", 1)[-1] in APART else file

    return FilesAndApartTests(config, log)
