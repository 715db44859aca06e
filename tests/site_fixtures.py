"""The built site, its server and the headless browser, shared by the ``test_site*.py`` files.

``conftest.py`` registers the fixtures. The site is the one built by README's command and named by ``$SITE_DIR``
(every module tests that build); each module gets its own browser.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Debian's chromium-headless-shell (Chromium's own browser for automation: the same Blink, without the desktop
# browser around it) where it is installed, else Debian's chromium in its headless mode; $CHROMIUM overrides. The
# shell lays out the same pages for about a quarter less CPU (the browser tests: 175 against 135 CPU-seconds,
# measured on the 2-core machine), and the browser's work is almost all of the website tests' time
CHROMIUM = os.environ.get("CHROMIUM") or next(
    (path for path in ("/usr/lib/chromium/chromium-headless-shell", "/usr/bin/chromium") if os.access(path, os.X_OK)),
    "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track",
             "wbr"}  # HTML tags with no end tag
# in a page, once MathJax has typeset every formula (done(true)), or at once where the page has no math
WAIT_FOR_MATH = """
const done = arguments[arguments.length - 1];
const wait = () => (window.MathJax && MathJax.startup && MathJax.startup.promise)
    ? MathJax.startup.promise.then(() => done(true), () => done(false)) : done(null);
if (document.querySelector('.math') && !window.MathJax) { setTimeout(wait, 2000); } else { wait(); }
"""
# README, "Read it as a website" (the output folder differs: a temporary one)


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
        skip_or_fail(f"no {CHROMIUM} or {CHROMEDRIVER}: apt-get install chromium chromium-driver "
                     "(and chromium-headless-shell, which the tests prefer)")


@pytest.fixture(scope="session")
def site():
    """The built site's folder, ``$SITE_DIR``: the site as README's "Read more" builds it, tested after that build
    as CI does (its own step), not built again here. Without ``SITE_DIR`` the tests that read the site skip,
    so README's test command (the suite) does not pay a build and the browser (a minute and more of its time)."""
    need_docs()
    if not os.environ.get("SITE_DIR"):
        skip_or_fail("the website's tests read a built site: build it (README, 'Read more'), then "
                     "SITE_DIR=docs/_build/html pytest -n auto -m website tests")
    out = Path(os.environ["SITE_DIR"]).resolve()
    assert (out / "index.html").is_file(), f"SITE_DIR={out} holds no built site (no index.html)"
    return out


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (``CHROMIUM``), one per test module (a module's network settings stay its own)."""
    need_a_browser()
    from selenium import webdriver
    from selenium.common.exceptions import SessionNotCreatedException
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # this machine's network is closed: no background connections; no sandbox as root; the profile is the fresh
    # temporary one chromedriver makes for each session (the headless shell refuses a --user-data-dir of ours)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,1000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    try:
        driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    except SessionNotCreatedException:
        if os.environ.get("CHROMIUM") or CHROMIUM == "/usr/bin/chromium":
            raise
        # a headless shell of another version than the driver's (installed apart from chromium): chromium itself
        options.binary_location = "/usr/bin/chromium"
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


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest's output clean
        pass

    def list_directory(self, path):  # a link to a folder with no index.html is broken, not a listing
        self.send_error(404, "no index.html in this folder")


@pytest.fixture(scope="module")
def base_url(site):
    """The built site, served on 127.0.0.1 by a thread for one test module: its address, ending in ``/``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
