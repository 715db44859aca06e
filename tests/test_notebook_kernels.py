"""The root conftest.py starts a notebook's kernel a second time when the first did not start, and only then."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT_CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


@pytest.fixture(scope="module")
def root_conftest():
    """The repository's conftest.py as a module of its own name (``conftest`` is also tests/conftest.py's)."""
    spec = importlib.util.spec_from_file_location("root_conftest_under_test", ROOT_CONFTEST)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Starts:
    """A stand-in for nbval's setup: raises the given errors in turn, then starts."""

    def __init__(self, *errors):
        self.errors, self.calls = list(errors), 0

    def __call__(self):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)


def test_a_kernel_that_starts_is_started_once(root_conftest, recwarn):
    setup = Starts()
    root_conftest.start_kernel_again_once(setup, "01_x.ipynb")
    assert setup.calls == 1
    assert not recwarn.list


def test_a_kernel_that_died_at_start_is_started_once_more_with_a_warning(root_conftest):
    setup = Starts(RuntimeError("Kernel died before replying to kernel_info"))
    with pytest.warns(UserWarning, match=r"19_x\.ipynb: its kernel did not start \(Kernel died before replying"):
        root_conftest.start_kernel_again_once(setup, "19_x.ipynb")
    assert setup.calls == 2


def test_a_kernel_that_cannot_start_fails_with_the_second_error(root_conftest):
    setup = Starts(RuntimeError("first"), RuntimeError("second"))
    with pytest.warns(UserWarning, match="first"), pytest.raises(RuntimeError, match="second"):
        root_conftest.start_kernel_again_once(setup, "19_x.ipynb")
    assert setup.calls == 2


def test_other_errors_are_not_retried(root_conftest):
    setup = Starts(ValueError("a notebook that does not parse"))
    with pytest.raises(ValueError, match="does not parse"):
        root_conftest.start_kernel_again_once(setup, "19_x.ipynb")
    assert setup.calls == 1


def test_the_collected_notebooks_start_their_kernel_through_it(root_conftest, monkeypatch):
    """The collector conftest.py hands notebooks to is nbval's, with its setup going through the retry."""
    pytest.importorskip("nbval")
    cls = root_conftest.notebook_file_class()  # imports nbval's plugin as a collected notebook does
    from nbval.plugin import IPyNbFile

    assert issubclass(cls, IPyNbFile) and cls is root_conftest.notebook_file_class()  # made once
    setup = Starts(RuntimeError("Kernel died before replying to kernel_info"))
    monkeypatch.setattr(IPyNbFile, "setup", lambda self: setup())
    notebook = object.__new__(cls)  # no pytest session here: only the attribute the retry reads
    notebook.path = Path("notebooks/19_windows_and_sinks.ipynb")
    with pytest.warns(UserWarning, match="19_windows_and_sinks.ipynb: its kernel did not start"):
        notebook.setup()
    assert setup.calls == 2
    assert "nbval" in sys.modules
