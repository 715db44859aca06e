"""The built site and the headless browser, shared by ``test_site.py`` and ``test_site_interactive.py``.

``conftest.py`` registers the fixtures, so that the site is built ONCE per test session (it is the
slowest step of the suite) and both modules test the same build; each module gets its own browser.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
# README, "Read it as a website" (the output folder differs: a temporary one)
BUILD = [sys.executable, "-m", "sphinx", "-j", "auto", "-W", "--keep-going", "-b", "html", "docs"]


def skip_or_fail(reason: str) -> None:
    """Skip; but where CI promises the tools (REQUIRE_SITE_TEST=1, .ci/run's newest leg), fail instead."""
    if os.environ.get("REQUIRE_SITE_TEST") == "1":
        pytest.fail(f"REQUIRE_SITE_TEST=1 but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def need_docs() -> None:
    """The docs extra (Sphinx, myst-nb, the theme, MathJax), or a skip."""
    for module in ("sphinx", "myst_nb", "sphinx_book_theme", "sphinx-mathjax-offline"):
        if importlib.util.find_spec(module) is None:
            skip_or_fail(f"the docs extra is not installed ({module} missing): pip install -e '.[docs]'")


def need_a_browser() -> None:
    """The Chromium tests only: the static checks of the built site run without a browser."""
    if importlib.util.find_spec("selenium") is None:
        skip_or_fail("the docs extra is not installed (selenium missing): pip install -e '.[docs]'")
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        skip_or_fail(f"no {CHROMIUM} or {CHROMEDRIVER}: apt-get install chromium chromium-driver")


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The built site's folder: ``$SITE_DIR`` when set (already built), else README's command builds it
    into a temporary folder, once per session."""
    need_docs()
    if os.environ.get("SITE_DIR"):
        out = Path(os.environ["SITE_DIR"]).resolve()
        assert (out / "index.html").is_file(), f"SITE_DIR={out} holds no built site (no index.html)"
        return out
    out = tmp_path_factory.mktemp("site") / "html"
    done = subprocess.run([*BUILD, str(out)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"the site did not build:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Chromium, one per test module (a module's network settings stay its own)."""
    need_a_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # this machine's network is closed: no background connections, a fresh profile, no sandbox as root
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,1000",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    """The screenshots' folder: ``$SITE_SCREENSHOTS`` when set, else a temporary one."""
    folder = Path(os.environ["SITE_SCREENSHOTS"]) if os.environ.get("SITE_SCREENSHOTS") else None
    folder = folder or tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
