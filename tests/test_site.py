"""The course's website, built as README says, read as files and over HTTP (its pages in Chromium: the other
``test_site_*.py`` files).

The site is the one README's command built (warnings are errors), named by ``$SITE_DIR`` (the ``site``
fixture of ``site_fixtures.py``, which the browser tests share): the tests that read it are marked ``website``
and run with ``SITE_DIR=docs/_build/html pytest -n auto -m website tests``, after the build, as CI does; README's
test command leaves them out. It is served on 127.0.0.1 by a thread, and then:

* every page is crawled over HTTP: each internal link, image, script and stylesheet answers 200, and
  each ``#anchor`` exists on its page; every notebook of ``notebooks/`` is reached from the index;
* no page asks the internet for anything (no external ``src``, script or stylesheet), so the site works
  offline -- MathJax included;
* the Chinese site (built by the same command into ``zh/``) is crawled with it, through the language
  switch that every page of both sites carries; every Chinese notebook is reached;
* on every page, the rendered text outside code holds no literal ``$``: a ``$…$`` or ``$$…$$`` that the
  site's MyST reader did not parse as math (a display formula inside a paragraph, say) shows a stray ``$``
  and sets the prose after it as math;

Every page in Chromium is ``test_site_layout.py``'s (its layout at 1280 px, and what a reader sees: no console
error, every image loaded, every formula typeset with no TeX error, no raw ``$$``, nothing asked of the internet),
the search ``test_site_search.py``'s (files apart, so that ``pytest -n auto`` runs them beside each other).

Skipped cleanly when the ``docs`` extra (Sphinx, myst-nb, the theme, MathJax) is missing, except under
``REQUIRE_SITE_TEST=1`` (CI's newest leg), where a missing tool fails the run rather than hiding the test.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import re
import urllib.error
import urllib.request
from html.parser import HTMLParser
from urllib.parse import urldefrag, urljoin, urlparse

import pytest
from site_fixtures import REPO, VOID_TAGS, need_docs

need_docs()  # skips this module (or fails under REQUIRE_SITE_TEST=1) without the docs extra

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
NOTEBOOKS_ZH = sorted((REPO / "notebooks" / "zh").glob("*.ipynb"))  # the Chinese site's (docs/_build/html/zh/)
_NOT_PROSE_TAGS = {"pre", "code", "kbd", "samp", "script", "style", "textarea", "head", "svg", "math"}
_NOT_PROSE_CLASSES = {"highlight", "math"}  # code blocks; formulas MyST parsed (TeX between \\( \\), no $)


class _Page(HTMLParser):
    """One HTML page, read once: the URLs it refers to, split by kind; the ids it defines; and its rendered text
    outside code and outside parsed math (its prose)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links, self.resources, self.ids = [], [], set()
        self.switch = None  # the language switch's link, if the page has one
        self.stack, self.parts = [], []  # open elements: (tag, inside code or math?); the prose's pieces

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
            if a.get("hreflang"):
                self.switch = a["href"]
        elif tag == "link" and a.get("href"):
            self.resources.append(a["href"])
        elif tag in ("img", "script", "iframe", "source", "video", "audio") and a.get("src"):
            self.resources.append(a["src"])
        if tag in VOID_TAGS:
            return
        classes = set((a.get("class") or "").split())
        hidden = bool(self.stack and self.stack[-1][1]) or tag in _NOT_PROSE_TAGS or bool(classes & _NOT_PROSE_CLASSES)
        self.stack.append((tag, hidden))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        if not (self.stack and self.stack[-1][1]):
            self.parts.append(data)


@functools.cache
def _parse(text: str) -> _Page:
    """The page, parsed once per test run: the crawl (over HTTP) and the checks of every file read the same bytes."""
    page = _Page()
    page.feed(text)
    return page


@pytest.fixture(scope="module")
def crawl(base_url):
    """Every page reachable from the index: {url: parsed page}; and {url: HTTP status} of all it refers to."""
    pages, status, todo = {}, {}, [base_url + "index.html"]
    while todo:
        url = todo.pop()
        if url in pages:
            continue
        with urllib.request.urlopen(url, timeout=10) as reply:
            pages[url] = page = _parse(reply.read().decode("utf-8"))
        for ref in page.links + page.resources:
            target = urldefrag(urljoin(url, ref))[0].split("?")[0]
            if not target.startswith(base_url):
                continue
            if target not in status:
                try:
                    with urllib.request.urlopen(target, timeout=10) as reply:
                        status[target] = reply.status
                except urllib.error.HTTPError as err:
                    status[target] = err.code
            if target.endswith(".html") and ref in page.links and status[target] == 200:
                todo.append(target)
    return pages, status


def test_internal_links_resolve(crawl, base_url):
    pages, status = crawl
    broken = {url: code for url, code in status.items() if code != 200}
    assert not broken, f"internal links that do not answer 200: {broken}"
    missing_anchors = []
    for url, page in pages.items():
        for ref in page.links:
            target, anchor = urldefrag(urljoin(url, ref))
            if anchor and target in pages and anchor not in pages[target].ids:
                missing_anchors.append(f"{url} -> {ref}")
    assert not missing_anchors, f"links to anchors that do not exist: {missing_anchors}"
    for name in ("quiz.html", "api/index.html"):
        assert base_url + name in pages


def test_every_notebook_is_reached_from_the_index(crawl, base_url):
    pages, _ = crawl
    assert NOTEBOOKS, "no notebooks found"
    missing = [nb.name for nb in NOTEBOOKS if f"{base_url}notebooks/{nb.stem}.html" not in pages]
    assert not missing, f"notebooks with no page reachable from the index: {missing}"


def test_every_chinese_notebook_is_reached_and_every_page_switches_language(crawl, base_url):
    pages, _ = crawl
    assert NOTEBOOKS_ZH, "no Chinese notebooks (notebooks/zh/) found"
    missing = [nb.name for nb in NOTEBOOKS_ZH if f"{base_url}zh/notebooks/{nb.stem}.html" not in pages]
    assert not missing, f"Chinese notebooks with no page reachable from the index: {missing}"
    assert base_url + "zh/index.html" in pages and base_url + "zh/quiz.html" in pages
    no_switch = [url for url, page in pages.items() if page.switch is None]
    assert not no_switch, f"pages without the language switch: {no_switch}"
    for nb in NOTEBOOKS_ZH:  # a notebook's switch leads to the same notebook in the other language
        en, zh = f"{base_url}notebooks/{nb.stem}.html", f"{base_url}zh/notebooks/{nb.stem}.html"
        assert urljoin(en, pages[en].switch) == zh and urljoin(zh, pages[zh].switch) == en


def test_nothing_is_fetched_from_the_internet(site):
    external = []
    for path in site.rglob("*.html"):
        for ref in _parse(path.read_text(encoding="utf-8")).resources:
            if urlparse(ref).scheme in ("http", "https") or ref.startswith("//"):
                external.append(f"{path.relative_to(site)}: {ref}")
    assert not external, f"pages load resources from the internet: {external}"
    assert (site / "_static" / "mathjax" / "tex-chtml.js").is_file()


def _stray_dollars(html_text: str) -> list[str]:
    """Each literal ``$`` in the rendered prose, with the text around it."""
    text = "".join(_parse(html_text).parts)
    return [" ".join(text[max(0, i - 50):i + 50].split()) for i, ch in enumerate(text) if ch == "$"]


def test_the_stray_dollar_check_sees_one():
    page = ("<html><head><title>cost $5</title></head><body><p>Step 2 $$ \\mathrm{Var}(x)=1 and so on</p>"
            "<pre>echo $HOME</pre><p><code>$x</code> and <span class=\"math notranslate\">\\(x\\)</span></p>"
            "<div class=\"highlight\"><span>$</span></div></body></html>")
    found = _stray_dollars(page)
    assert len(found) == 2 and "Step 2 $$" in found[0], found  # the paragraph's two; code, math, head: none
    assert _stray_dollars(page.replace("$$", "")) == []


def test_no_stray_dollar_on_any_page(site):
    stray = {}
    for path in sorted(site.rglob("*.html")):
        if {"_static", "_sources"} & set(path.relative_to(site).parts):
            continue
        found = _stray_dollars(path.read_text(encoding="utf-8"))
        if found:
            stray[str(path.relative_to(site))] = found[:3]
    assert not stray, f"pages whose text shows a literal $ (math MyST did not parse?): {stray}"


def test_mathjax_loads_where_there_is_math_and_only_there(site):
    """MathJax loads only on the pages with math of their own (Sphinx's default; the titles that hold math are text
    in the sidebar): a page that does not load it has no formula and no TeX delimiter in its text outside code."""
    without, raw = [], []
    for path in sorted(site.rglob("*.html")):
        if {"_static", "_sources", "jupyter_execute"} & set(path.relative_to(site).parts):
            continue
        text = path.read_text(encoding="utf-8")
        if "mathjax/tex-chtml.js" in text:
            continue
        without.append(str(path.relative_to(site)))
        if 'class="math' in text or re.search(r"\\\(|\\\[|\$\$", "".join(_parse(text).parts)):
            raw.append(without[-1])
    assert not raw, f"pages that show math but do not load MathJax: {raw}"
    assert "api/similarity.html" in without and len(without) > 50, "no page goes without MathJax: this tests nothing"
    assert "notebooks/04_softmax.html" not in without


def test_quiz_page_follows_the_quiz_module(site):
    import html

    from attention_from_scratch.course import quiz

    # Sphinx typesets quotes ("smartquotes"): compare with straight ones
    text = html.unescape((site / "quiz.html").read_text(encoding="utf-8")).replace("\u2019", "'")
    for qid in quiz.question_ids():
        assert f"{qid}" in text, f"quiz question {qid!r} is missing from the site"
        first_words = quiz.ask(qid).splitlines()[0][:40]
        assert first_words in text, f"the text of {qid!r} is not on the quiz page: {first_words!r}"
    assert text.count("<summary>Answer</summary>") == len(quiz.question_ids())
    zh = html.unescape((site / "zh" / "quiz.html").read_text(encoding="utf-8"))
    for qid in quiz.question_ids():
        first_words = quiz.ask(qid, lang="zh").splitlines()[0][:20]
        assert first_words in zh, f"the Chinese text of {qid!r} is not on the Chinese quiz page: {first_words!r}"
    assert zh.count("<summary>答案</summary>") == len(quiz.question_ids())
    for page, answer in ((text, "Answer"), (zh, "答案")):  # the notes on the options: a list, not lines of "- "
        notes = re.findall(rf"<summary>{answer}</summary>(.*?)</details>", page, re.S)
        assert sum("<ul>" in note for note in notes) > len(notes) / 2, "the answers' notes are not shown as lists"
        assert not [note for note in notes if re.search(r"<(p|br)>\s*- ", note)], "a note shown as a line of '- '"


def _make_pages():
    return importlib.import_module("make_pages")  # docs/ is on pytest's pythonpath (pyproject.toml)


def test_readme_links_are_rewritten_for_the_site():
    pages = _make_pages()
    first = NOTEBOOKS[0].stem
    text = "\n".join([
        "![plain vs flash](figures/bench_flash.png) and [the script](benchmarks/bench_flash.py)",
        f"[a notebook](notebooks/{first}.ipynb), [web](https://example.org/x), [here](#the-course)",
        f"| `{first}` | `softmax.py` | `not_a_module.py` | [`{first}`](notebooks/{first}.ipynb) |",
        "```bash",
        f"see `{first}` and ![x](figures/a.png)",
        "```",
    ])
    out = pages.rewrite_readme(text, REPO, ["softmax"]).splitlines()
    assert out[0] == "![plain vs flash](../figures/bench_flash.png) and [the script](../benchmarks/bench_flash.py)"
    assert out[1] == f"[a notebook](notebooks/{first}.ipynb), [web](https://example.org/x), [here](#the-course)"
    assert out[2] == (f"| [`{first}`](notebooks/{first}.ipynb) | [`softmax.py`](api/softmax.rst) | "
                      f"`not_a_module.py` | [`{first}`](notebooks/{first}.ipynb) |")
    assert out[3:] == ["```bash", f"see `{first}` and ![x](figures/a.png)", "```"]  # code is left alone



def test_each_class_is_described_once_besides_its_own_page():
    """Autodoc describes a class that a module exports but does not define under the class's canonical name;
    two such pages, read by one process of a parallel build without the defining page, make Sphinx warn
    "duplicate object description" (CI failed so once: model and model.transformer both exported
    TransformerConfig). Which pages one process reads changes from run to run, so the rule is checked here."""
    import inspect

    pages = _make_pages()
    names = pages.modules()
    api = pages.api_pages(names)
    described_by = {}
    for name in names:
        module = importlib.import_module(f"attention_from_scratch.{name}")
        excluded = re.search(r"^   :exclude-members: (.*)$", api[f"{name}.rst"], re.M)
        excluded = set(excluded.group(1).split(", ")) if excluded else set()
        for attr in getattr(module, "__all__", ()):
            value = getattr(module, attr)
            if inspect.isclass(value) and value.__module__ != module.__name__ and attr not in excluded:
                described_by.setdefault(f"{value.__module__}.{value.__qualname__}", []).append(name)
    assert {cls: where for cls, where in described_by.items() if len(where) > 1} == {}
    # a plain module's page names what it exports from elsewhere, with a link to where it is described
    assert ":exclude-members: TransformerConfig\n" in api["model.transformer.rst"]
    assert ":py:obj:`~attention_from_scratch.model.config.TransformerConfig`" in api["model.transformer.rst"]
    assert "exclude-members" not in api["model.rst"]  # a package's page documents what it exports

def test_notebook_copies_keep_their_relative_links(tmp_path):
    pages = _make_pages()
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": [
        "![f](../figures/a.png) [next](02_x.ipynb) <img src=\"../figures/b.png\"> [w](https://x.org) "
        "[README](../README.md) [原文](../../README.zh.md#原文)"]},
        {"cell_type": "markdown", "metadata": {}, "source": [
            '<a id="erratum-x"></a>\n<details class="erratum">\n<summary>s</summary>\n\ntext\n\n</details>\n'
            '<a id="plain"></a>\n**Bold**']}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "01_x.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    pages.copy_notebook(tmp_path / "01_x.ipynb", tmp_path / "copy" / "01_x.ipynb")
    cells = json.loads((tmp_path / "copy" / "01_x.ipynb").read_text(encoding="utf-8"))["cells"]
    # README (README.zh.md from a Chinese notebook) is the front page of the notebook's own site
    assert cells[0]["source"] == ("![f](../../figures/a.png) [next](02_x.ipynb) <img src=\"../../figures/b.png\"> "
                                  "[w](https://x.org) [README](../index.md) [原文](../index.md#原文)")
    # anchors become MyST targets; above an erratum box the id also goes on the <details> (raw HTML)
    assert cells[1]["source"] == ('(erratum-x)=\n<details id="erratum-x" class="erratum">\n<summary>s</summary>\n\n'
                                  "text\n\n</details>\n(plain)=\n**Bold**")


def _docstrings():
    return importlib.import_module("docstrings")


def _rest_problems(text: str) -> list[str]:
    """What docutils itself reports (warnings and errors) when it parses ``text`` as reST."""
    import io

    from docutils.core import publish_doctree

    stream = io.StringIO()
    publish_doctree(text, settings_overrides={"warning_stream": stream, "report_level": 2, "halt_level": 5})
    return stream.getvalue().splitlines()


def test_plain_text_docstrings_become_valid_rest():
    lines = [
        "Ways to score: |a| |b| cos θ, but ``x | y`` is code.",
        "",
        "One forward pass:",
        "",
        "    x = E[tokens]          (B, T, d_model)",
        "    repeat n_layers times:",
        "        x = x + |W| x",
        "    logits = x W_out",
        "",
        "mean entropy in nats, the size of the gradient that",
        "    flows back through softmax",
        "* a list item whose text",
        "      goes on here",
        "back to a paragraph.",
        "",
        "    >>> abs(-1) | 0",
    ]
    assert len(_rest_problems("\n".join(lines))) > 0  # as written, reST misreads it
    out = list(lines)
    _docstrings().plain_text_docstring(None, "module", "m", None, {}, out)
    assert not _rest_problems("\n".join(out)), "\n".join(out)
    assert out[0] == "Ways to score: \\|a\\| \\|b\\| cos θ, but ``x | y`` is code."
    assert out[2] == "One forward pass::"  # the display below it is a literal block, shown as written
    assert out[4:8] == lines[4:8]  # bars inside the literal block are not escaped
    assert "mean entropy in nats, the size of the gradient that" in out
    assert "flows back through softmax" in out  # the hanging indent continues its paragraph
    assert "  goes on here" in out  # aligned with the list item's text
    assert out[-1] == "    >>> abs(-1) | 0"  # doctest lines are code


def test_tex_becomes_unicode_text():
    tex_to_text = importlib.import_module("tex_text").tex_to_text  # docs/ is on pytest's pythonpath
    cases = {
        r"\sqrt{d_k}": "√dₖ",
        r"n \times n": "n × n",
        r"\mathrm{softmax}(QK^\top/\sqrt{d_k})V": "softmax(QKᵀ/√dₖ)V",
        r"a\cdot b=\lvert a\rvert\lvert b\rvert\cos\theta": "a · b=|a||b|cos θ",
        r"\frac{q \cdot k}{\sqrt{d_k}}": "(q · k)/√dₖ",
        r"-\infty": "−∞",
        r"d_{model}": "d_model",
        r"\sum_{i=1}^n a_i b_i": "Σᵢ₌₁ⁿ aᵢ bᵢ",
        r"\begin{align} a &= b \\ c &= d \end{align}": "a = b ; c = d",
        r"\alpha, \omega, \Omega": "α, ω, Ω",
        r"\unknowncommand{x}": "unknowncommandx",
    }
    for tex, text in cases.items():
        assert tex_to_text(tex) == text, tex
        assert "\\" not in tex_to_text(tex) and "{" not in tex_to_text(tex)


def test_reference_pages_link_into_the_site():
    pages = _make_pages()
    first = NOTEBOOKS[0].stem
    text = "\n".join([
        f"[a box](../../notebooks/{first}.ipynb#erratum-x) and ![f](../../figures/a.png) [other](errata.md)",
        "[back](../../README.md) [zh](../../README.zh.md) [log](../../CHANGELOG.md) `softmax.py`",
        "```bash",
        "see `softmax.py` and [x](../../notebooks/a.ipynb)",
        "```",
    ])
    out = pages.rewrite_guide(text, REPO, ["softmax"]).splitlines()
    assert out[0] == f"[a box](../notebooks/{first}.ipynb#erratum-x) and ![f](../../figures/a.png) [other](errata.md)"
    assert out[1] == ("[back](../index.md) [zh](../zh/index.html) [log](changelog.md) "
                      "[`softmax.py`](../api/softmax.rst)")
    assert out[2:] == text.splitlines()[2:]  # code is left alone
    assert pages.rewrite_readme("[errata](docs/guide/errata.md)", REPO, []).strip() == "[errata](reference/errata.md)"


def test_the_chinese_front_page_links_a_guide_section_on_the_english_site():
    text = _make_pages().index_page_zh(REPO)  # README.zh.md links a section of docs/guide/instructors.md
    assert '<a href="../reference/instructors.html#notebook-14-without-the-debian-corpora">' in text
    assert "](docs/guide/" not in text and "](../../docs/guide/" not in text  # no link left to the repository's file
