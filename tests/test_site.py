"""The course's website, built as README says and read in a real browser (headless Chromium).

The site is built once per session (the ``site`` fixture of ``site_fixtures.py``, which
``test_site_interactive.py`` shares) into a temporary folder with the documented command (warnings are
errors) -- or, when ``$SITE_DIR`` is set, the site already built there is tested (CI builds it with
README's command just before, and this test does not build it a second time). It is served on 127.0.0.1
by a thread, and then:

* every page is crawled over HTTP: each internal link, image, script and stylesheet answers 200, and
  each ``#anchor`` exists on its page; every notebook of ``notebooks/`` is reached from the index;
* no page asks the internet for anything (no external ``src``, script or stylesheet; in the browser,
  every request goes to 127.0.0.1), so the site works offline -- MathJax included;
* the Chinese site (built by the same command into ``zh/``) is crawled with it, through the language
  switch that every page of both sites carries; every Chinese notebook is reached;
* in Chromium, the index and three notebook pages (the one with the most display math, the one with
  the most figures, and the last one) show no console error, every ``<img>`` loaded, every formula
  typeset by MathJax with no TeX error and no raw ``$$`` left, and the sidebar links every notebook;
* on every page, the rendered text outside code holds no literal ``$``: a ``$…$`` or ``$$…$$`` that the
  site's MyST reader did not parse as math (a display formula inside a paragraph, say) shows a stray ``$``
  and sets the prose after it as math;
* every page of both sites, opened in Chromium at 1280 px with every folded block open, has nothing cut off
  (no element past the article's right edge or clipped by an ancestor, unless it sits in something that
  scrolls), a tab title with no TeX, and figures whose alt text says what they show and that link to the
  full-size image;
* the search of each site finds every page whose text holds 注意力, 掩码, 键值缓存, 缩放点积注意力, "softmax"
  or "KV cache" (the expected pages are read from the built pages' text), and its results show no TeX and
  no theme text.

Skipped cleanly when the ``docs`` extra (Sphinx, myst-nb, the theme, MathJax) is missing, and the browser
tests alone when Selenium or Debian's ``chromium`` / ``chromium-driver`` is -- except under
``REQUIRE_SITE_TEST=1`` (CI's newest leg), where a missing tool fails the run rather than hiding the test.
Screenshots go to a temporary folder, or to ``$SITE_SCREENSHOTS`` when set, to be looked at.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import re
import threading
import time
import urllib.error
import urllib.request
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest
from site_fixtures import REPO, need_docs

need_docs()  # skips this module (or fails under REQUIRE_SITE_TEST=1) without the docs extra

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
NOTEBOOKS_ZH = sorted((REPO / "notebooks" / "zh").glob("*.ipynb"))  # the Chinese site's (docs/_build/html/zh/)
class _Page(HTMLParser):
    """The URLs one HTML page refers to, split by kind, and the ids it defines."""

    def __init__(self):
        super().__init__()
        self.links, self.resources, self.ids = [], [], set()
        self.switch = None  # the language switch's link, if the page has one

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


def _parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    return page


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest's output clean
        pass

    def list_directory(self, path):  # a link to a folder with no index.html is broken, not a listing
        self.send_error(404, "no index.html in this folder")


@pytest.fixture(scope="module")
def base_url(site):
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


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


_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track",
         "wbr"}
_NOT_PROSE_TAGS = {"pre", "code", "kbd", "samp", "script", "style", "textarea", "head", "svg", "math"}
_NOT_PROSE_CLASSES = {"highlight", "math"}  # code blocks; formulas MyST parsed (TeX between \\( \\), no $)


class _Prose(HTMLParser):
    """A page's rendered text outside code and outside parsed math."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.parts = [], []  # open elements: (tag, inside code or math?)

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            return
        classes = set((dict(attrs).get("class") or "").split())
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


def _stray_dollars(html_text: str) -> list[str]:
    """Each literal ``$`` in the rendered prose, with the text around it."""
    prose = _Prose()
    prose.feed(html_text)
    text = "".join(prose.parts)
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


def _markdown(nb: Path) -> str:
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    return "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def _n_figures(nb: Path) -> int:
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    return sum("image/png" in o.get("data", {}) for c in cells if c["cell_type"] == "code" for o in c["outputs"])


def _pages_to_open() -> dict[str, str]:
    """The index, three notebooks (the most display math, the most figures, the last), the quiz, an API page."""
    math = max(NOTEBOOKS, key=lambda nb: _markdown(nb).count("$$"))
    figures = max(NOTEBOOKS, key=_n_figures)
    last = NOTEBOOKS[-1]
    chosen = {"index": "index.html", "quiz": "quiz.html", "api": "api/similarity.html"}
    for role, nb in (("math", math), ("figures", figures), ("last", last)):
        chosen[role] = f"notebooks/{nb.stem}.html"
    chosen["zh_index"], chosen["zh_quiz"] = "zh/index.html", "zh/quiz.html"
    if NOTEBOOKS_ZH:  # the Chinese notebook with the most display math
        chosen["zh_math"] = f"zh/notebooks/{max(NOTEBOOKS_ZH, key=lambda nb: _markdown(nb).count('$$')).stem}.html"
    return chosen


_WAIT_FOR_MATH = """
const done = arguments[arguments.length - 1];
const wait = () => (window.MathJax && MathJax.startup && MathJax.startup.promise)
    ? MathJax.startup.promise.then(() => done(true), () => done(false)) : done(null);
if (document.querySelector('.math') && !window.MathJax) { setTimeout(wait, 2000); } else { wait(); }
"""

_PAGE_FACTS = r"""
const imgs = [...document.images];
const maths = [...document.querySelectorAll('span.math, div.math')];
const body = document.body.cloneNode(true);
body.querySelectorAll('pre, code, script, style, .highlight').forEach(e => e.remove());
const nav = [...document.querySelectorAll('.bd-sidebar-primary a[href]')].map(a => a.href);
return {
  images: imgs.length,
  broken_images: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src),
  math: maths.length,
  untypeset: maths.filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 60)),
  typeset: document.querySelectorAll('mjx-container').length,
  tex_errors: [...document.querySelectorAll('mjx-merror')].map(e => e.textContent.slice(0, 80)),
  raw_dollars: body.innerText.includes('$$'),
  raw_rest: /^\s*\.\. [a-z:]+::/m.test(body.innerText),
  nav: nav,
  chinese: /[\u4e00-\u9fff]/.test(body.innerText),
};
"""


@pytest.mark.parametrize("role", ["index", "math", "figures", "last", "quiz", "api", "zh_index", "zh_math", "zh_quiz"])
def test_page_in_chromium(role, browser, base_url, shots):
    path = _pages_to_open()[role]
    browser.get_log("browser"), browser.get_log("performance")  # start each page with empty logs
    browser.get(base_url + path)
    # scroll to the bottom and back, so that anything loaded lazily is loaded
    browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
    browser.execute_script("window.scrollTo(0, 0)")
    browser.set_script_timeout(30)
    typeset = browser.execute_async_script(_WAIT_FOR_MATH)
    facts = browser.execute_script(_PAGE_FACTS)
    stem = Path(path).stem
    if role in ("quiz", "zh_quiz"):  # show the answers in the screenshot
        browser.execute_script("document.querySelectorAll('details').forEach(d => { d.open = true; })")
    browser.save_screenshot(str(shots / f"{role}_{stem}.png"))
    if facts["images"]:  # a second screenshot at the first figure
        browser.execute_script("document.images[document.images.length > 1 ? 1 : 0].scrollIntoView()")
        browser.save_screenshot(str(shots / f"{role}_{stem}_figure.png"))

    severe = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, f"{path}: console errors {severe}"
    requests = [json.loads(e["message"])["message"] for e in browser.get_log("performance")]
    urls = {m["params"]["request"]["url"] for m in requests if m["method"] == "Network.requestWillBeSent"}
    # the network only (chrome:// and data: are the browser's own); the server is base_url
    outside = sorted(u for u in urls if urlparse(u).scheme in ("http", "https", "ws", "wss", "ftp")
                     and not u.startswith(base_url))
    assert base_url + path in urls, "the request log is empty: this check would see nothing"
    assert not outside, f"{path}: the browser asked the internet for {outside}"

    assert not facts["broken_images"], f"{path}: images that did not load {facts['broken_images']}"
    assert not facts["raw_dollars"], f"{path}: raw $$ left in the page's text"
    assert not facts["raw_rest"], f"{path}: a reST directive shown as text (autodoc in a Markdown page?)"
    if facts["math"]:
        assert typeset is True, f"{path}: MathJax did not load or did not finish"
        assert facts["typeset"] >= facts["math"] and not facts["untypeset"], facts["untypeset"]
        assert not facts["tex_errors"], f"{path}: TeX errors {facts['tex_errors']}"
    if role == "math":
        assert facts["typeset"] > 0, f"{path}: the notebook with the most display math shows none"
    if role == "figures":
        assert facts["images"] >= _n_figures(REPO / "notebooks" / f"{stem}.ipynb") > 0
    if role == "index":
        missing = [nb.stem for nb in NOTEBOOKS if f"{base_url}notebooks/{nb.stem}.html" not in facts["nav"]]
        assert not missing, f"the index's navigation does not link {missing}"
    if role == "zh_index":
        missing = [nb.stem for nb in NOTEBOOKS_ZH if f"{base_url}zh/notebooks/{nb.stem}.html" not in facts["nav"]]
        assert not missing, f"the Chinese index's navigation does not link {missing}"
    if role.startswith("zh_"):
        assert facts["chinese"], f"{path}: no Chinese text on the Chinese page"


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


def test_notebook_copies_keep_their_relative_links(tmp_path):
    pages = _make_pages()
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": [
        "![f](../figures/a.png) [next](02_x.ipynb) <img src=\"../figures/b.png\"> [w](https://x.org)"]},
        {"cell_type": "markdown", "metadata": {}, "source": [
            '<a id="erratum-x"></a>\n<details class="erratum">\n<summary>s</summary>\n\ntext\n\n</details>\n'
            '<a id="plain"></a>\n**Bold**']}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "01_x.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    pages.copy_notebook(tmp_path / "01_x.ipynb", tmp_path / "copy" / "01_x.ipynb")
    cells = json.loads((tmp_path / "copy" / "01_x.ipynb").read_text(encoding="utf-8"))["cells"]
    assert cells[0]["source"] == ("![f](../../figures/a.png) [next](02_x.ipynb) <img src=\"../../figures/b.png\"> "
                                  "[w](https://x.org)")
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


# --- every page at 1280 px, and the search --------------------------------------------------------------

_CUT = r"""
document.querySelectorAll('details').forEach((d) => { d.open = true; });
const article = document.querySelector('article.bd-article') || document.querySelector('[role="main"]');
const edge = article.getBoundingClientRect().right + 1;
const scrolls = (el) => {
  for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
    const x = getComputedStyle(a).overflowX;
    if (x === 'auto' || x === 'scroll') return true;
  }
  return false;
};
const cut = [];
for (const el of article.querySelectorAll('*')) {
  const box = el.getBoundingClientRect();
  if (box.width === 0 || box.height === 0) continue;
  const style = getComputedStyle(el);
  const clipped = style.display !== 'inline' && ['hidden', 'clip'].includes(style.overflowX)
    && el.scrollWidth > el.clientWidth + 1;
  if ((box.right > edge || clipped) && !scrolls(el)) {
    cut.push(`<${el.tagName.toLowerCase()} class="${el.className}"> ${Math.round(box.right)} px > ${Math.round(edge)}: `
             + (el.dataset.text || el.textContent).trim().slice(0, 60));
  }
}
const images = [...article.querySelectorAll('img:not([src*="_static/"])')].map((img) => ({  // not the theme's icons
  src: img.src, alt: img.getAttribute('alt') || '', link: img.closest('a') ? img.closest('a').href : null,
}));
return {cut: cut.slice(0, 5), n_cut: cut.length, title: document.title, images: images,
        formulas: article.querySelectorAll('mjx-container').length};
"""


def _site_pages(site: Path) -> list[str]:
    """Every HTML page of both sites, as paths relative to the site (Sphinx's own folders left out)."""
    skip = {"_static", "_sources", "_images", "jupyter_execute"}
    return sorted(str(p.relative_to(site)) for p in site.rglob("*.html") if not skip & set(p.relative_to(site).parts))


def test_every_page_fits_1280_px_with_text_titles_and_linked_figures(site, browser, base_url):
    browser.set_window_size(1280, 1000)
    problems, formulas = [], 0
    for path in _site_pages(site):
        browser.get(base_url + path)
        browser.set_script_timeout(30)
        browser.execute_async_script(_WAIT_FOR_MATH)
        facts = browser.execute_script(_CUT)
        formulas += facts["formulas"]
        if facts["n_cut"]:
            problems.append(f"{path}: {facts['n_cut']} cut, e.g. {facts['cut']}")
        if re.search(r"\\[A-Za-z(\[]|\$", facts["title"]):
            problems.append(f"{path}: TeX in the tab title {facts['title']!r}")
        for img in facts["images"]:
            if img["link"] != img["src"]:
                problems.append(f"{path}: a figure that does not open at full size: {img['src']} (link {img['link']})")
            if len(img["alt"]) < 12 or re.search(r"\.(png|svg|jpe?g)$", img["alt"]):
                problems.append(f"{path}: alt text that does not say what the figure shows: {img['alt']!r}")
    assert formulas > 1000, "the pages show hardly any typeset formula: this test would measure nothing"
    assert not problems, "\n".join(problems)


_SEARCH = r"""
const done = arguments[arguments.length - 1];
const start = Date.now();
const poll = () => {
  const summary = document.querySelector('#search-results .search-summary');
  const items = [...document.querySelectorAll('#search-results ul.search li')];
  if (summary && summary.textContent.trim() && Date.now() - start > 300) {
    done({summary: summary.textContent, results: items.map((li) => ({
      href: li.querySelector('a').href, title: li.querySelector('a').textContent,
      snippet: li.querySelector('p.context') ? li.querySelector('p.context').textContent : null}))});
  } else if (Date.now() - start > 25000) {
    done(null);
  } else {
    setTimeout(poll, 100);
  }
};
poll();
"""
_SNIPPETS = r"""
return [...document.querySelectorAll('#search-results ul.search li p.context')].map((p) => p.textContent);
"""
QUERIES = ["注意力", "掩码", "键值缓存", "缩放点积注意力", "softmax", "KV cache"]


class _ArticleText(HTMLParser):
    """The text of a page's article (what the search indexes), without its heading links (¶, #)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth, self.skip, self.parts = 0, 0, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in _VOID:
            return
        if self.depth or (tag == "article" and "bd-article" in (a.get("class") or "")):
            self.depth += 1
            if self.skip or "headerlink" in (a.get("class") or "") or tag in ("script", "style"):
                self.skip += 1

    def handle_endtag(self, tag):
        if self.depth and tag not in _VOID:
            self.depth -= 1
            self.skip = max(0, self.skip - 1) if self.skip else 0

    def handle_data(self, data):
        if self.depth and not self.skip:
            self.parts.append(data)


def _pages_holding(site: Path, prefix: str, words: str) -> set[str]:
    """The pages of one site (``prefix`` "" or "zh/") whose article text holds ``words`` (any case), Latin words
    at the start of a word or of a snake_case name's part (softmax in ``my_softmax``, not in ``logsoftmax``)."""
    start = r"(?<![a-z0-9])" if re.match(r"[A-Za-z]", words) else ""
    pattern = re.compile(start + r"\s+".join(map(re.escape, words.lower().split())))
    index = (site / prefix / "searchindex.js").read_text(encoding="utf-8")
    docnames = json.loads(index[index.index("(") + 1:index.rindex(")")])["docnames"]
    found = set()
    for doc in docnames:
        parser = _ArticleText()
        parser.feed((site / prefix / f"{doc}.html").read_text(encoding="utf-8"))
        if pattern.search("".join(parser.parts).lower()):
            found.add(f"{prefix}{doc}.html")
    return found


def test_article_text_reads_the_article_only():
    parser = _ArticleText()
    parser.feed('<nav>注意力</nav><article class="bd-article"><h1>KV cache<a class="headerlink">#</a></h1>'
                '<p>soft<b>max</b></p><script>x</script></article><footer>掩码</footer>')
    assert "".join(parser.parts) == "KV cachesoftmax"


@pytest.mark.parametrize("prefix", ["", "zh/"], ids=["en", "zh"])
def test_search_finds_every_page_holding_the_words(prefix, site, browser, base_url):
    from urllib.parse import quote

    checked = 0
    for words in QUERIES:
        expected = _pages_holding(site, prefix, words)
        browser.get(f"{base_url}{prefix}search.html?q={quote(words)}")
        browser.set_script_timeout(30)
        found = browser.execute_async_script(_SEARCH)
        assert found is not None, f"{prefix}search.html?q={words}: the search did not finish"
        pages = {urldefrag(r["href"])[0].removeprefix(base_url) for r in found["results"]}
        missing = sorted(expected - pages)
        site_name = "Chinese" if prefix else "English"
        assert not missing, f"searching {words!r} on the {site_name} site misses pages that hold it: {missing}"
        checked += len(expected)
        titles = [r["title"] for r in found["results"]]
        assert not [t for t in titles if re.search(r"\\[A-Za-z(]", t)], f"TeX in result titles: {titles}"
        if expected:  # the snippets, as they load: the article's text, formulas as text, no theme text
            deadline, snippets = time.monotonic() + 15, []
            while len(snippets) < min(5, len(expected)) and time.monotonic() < deadline:
                time.sleep(0.25)
                snippets = [s for s in browser.execute_script(_SNIPPETS) if s]
            assert snippets, f"{words!r}: no result shows a snippet"
            bad = [s for s in snippets if re.search(r"\\[A-Za-z(\[]", s) or "System Settings" in s
                   or re.search(r"\bLight\b.*\bDark\b", s)]
            assert not bad, f"{words!r}: snippets with TeX or theme text: {bad[:3]}"
    assert checked >= 10 if prefix else checked >= 20, "few pages hold the words: this test checks little"


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
