"""Sphinx configuration of the course's website (see README, "Read it as a website").

Build it, warnings as errors, with:  python -m sphinx -W --keep-going -b html docs docs/_build/html

The same command builds the Chinese site (docs/zh/conf.py) into docs/_build/html/zh/ once the English
one is done; every page of both links to its counterpart in the other language.

The site is built offline: the notebooks are shown with the outputs stored in them (never re-executed),
MathJax is served from the site itself (copied from the ``sphinx-mathjax-offline`` package), and the
theme's assets come with ``sphinx-book-theme``; nothing is fetched from the internet, by the build or
by a reader's browser.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
sys.path.insert(0, str(REPO))  # document this checkout's package, whatever else is installed
sys.path.insert(0, str(DOCS))

import make_pages  # noqa: E402  (needs the paths above)
import site_text  # noqa: E402
from docstrings import plain_text_docstring  # noqa: E402

import attention_from_scratch  # noqa: E402

make_pages.generate(DOCS)
site_text.use_search_languages()  # search: Chinese words segmented by jieba (site_text.py), on both sites

project = "attention_from_scratch"
author = "the attention_from_scratch authors"
copyright = "the attention_from_scratch authors"
release = version = attention_from_scratch.__version__

extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
root_doc = "index"
exclude_patterns = ["_build", "**/.ipynb_checkpoints", "make_pages.py", "zh", "guide"]  # zh/: the Chinese site; guide/:
# the reference pages' sources, which the site reads as their copies in reference/ (make_pages.py)

# --- notebooks: show the stored outputs (the ones nbval checks); never execute -----------------------
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3  # README's and the notebooks' #section links resolve
nb_merge_streams = True

# --- API reference from docstrings ------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_default_options = {"undoc-members": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = True

# --- math: MathJax 3 from this site, not a CDN ------------------------------------------------------
_mathjax = importlib.util.find_spec("sphinx-mathjax-offline")  # the package's folder has a '-' in its name
if _mathjax is None or not _mathjax.submodule_search_locations:
    raise RuntimeError(
        "MathJax for offline use is missing: install the docs extra, pip install -e \".[docs]\" "
        "(it brings sphinx-mathjax-offline, which holds MathJax 3)"
    )
# docs/_static (the favicon) and the package's static/ folder, whose mathjax/ lands in _static/mathjax/
html_static_path = [str(DOCS / "_static"), str(Path(next(iter(_mathjax.submodule_search_locations))) / "static")]
mathjax_path = "mathjax/tex-chtml.js"  # relative to _static/, where html_static_path copies mathjax/

# --- theme ------------------------------------------------------------------------------------------
html_theme = "sphinx_book_theme"
templates_path = [str(DOCS / "_templates")]
# the language switch (English · 中文) at the top of every page's sidebar, then the theme's own parts
html_sidebars = {"**": ["navbar-logo.html", "lang-switch.html", "icon-links.html", "search-button-field.html",
                        "sbt-sidebar-nav.html"]}
html_title = "attention_from_scratch"
# site.css: wide formulas, code and tables scroll inside the column; search.js: Chinese queries and clean snippets
html_css_files = ["site.css"]
html_js_files = ["search.js"]
html_theme_options = {
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "use_repository_button": False,  # no repository URL: links to the internet are not needed to read
    "navigation_with_keys": False,
    "navbar_persistent": [],  # the sidebar has the search field; no second one in a header bar
}
# pydata-sphinx-theme (under the book theme): an empty mode makes it log a console error on a first visit
html_context = {"default_mode": "light"}
html_favicon = str(DOCS / "_static" / "favicon.svg")  # without one, browsers ask for /favicon.ico and log a 404
html_last_updated_fmt = None
# the download button offers each page's source: a notebook downloads as the .ipynb itself
html_copy_source = True
html_sourcelink_suffix = ""


SITE_LANG = "en"  # docs/zh/conf.py sets "zh"


def _lang_switch(app, pagename, templatename, context, doctree):
    """``lang_switch``: the other language's URL for this page, relative to it (its index if it has none)."""
    other = "zh" if SITE_LANG == "en" else "en"
    target = pagename if pagename in make_pages.site_pages(REPO, other) else "index"
    up = "../" * pagename.count("/")
    context["lang_switch"] = {"lang": SITE_LANG,
                              "href": f"{up}zh/{target}.html" if other == "zh" else f"{up}../{target}.html"}


def _build_chinese_site(app, exception):
    """After the English site, build the Chinese one into <outdir>/zh with the same strictness (-W) and -j."""
    if exception is not None or SITE_LANG != "en" or app.builder.name != "html":
        return
    import subprocess
    import time

    from sphinx.util import logging

    command = [sys.executable, "-m", "sphinx", "-j", str(app.parallel or 1), "-W", "--keep-going", "-b", "html",
               str(DOCS / "zh"), str(Path(app.outdir) / "zh")]  # as many processes as the English build (-j)
    log = logging.getLogger(__name__)
    log.info(f"\nbuilding the Chinese site (docs/zh) into {Path(app.outdir) / 'zh'}: {' '.join(command[1:])}")
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO)
    if done.returncode:
        raise RuntimeError(f"the Chinese site (docs/zh) did not build: {' '.join(command)} exited {done.returncode}")
    log.info(f"the Chinese site is built ({time.perf_counter() - start:.0f} s)")


def setup(app):
    app.connect("html-page-context", _lang_switch)
    app.connect("build-finished", _build_chinese_site)
    # MathJax only on the pages with math of their own (Sphinx's default): the titles that hold math ("Why divide by
    # $\sqrt{d_k}$?") are text by the time the sidebar shows them (site_text.titles_as_text: "√dₖ"), so the API
    # reference and the other pages without a formula no longer load it
    app.connect("autodoc-process-docstring", plain_text_docstring, priority=600)  # after napoleon (500)
    # titles as text before Sphinx's title collector (500) copies them; formulas' text for search snippets
    app.connect("doctree-read", site_text.titles_as_text, priority=400)
    app.connect("html-page-context", site_text.math_data_text)
    app.connect("doctree-resolved", site_text.link_images_to_full_size)
