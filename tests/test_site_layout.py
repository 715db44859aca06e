"""Every page of the course's website, English and Chinese, in headless Chromium at 1280 px.

Each page of both sites (README's build, ``$SITE_DIR``: run with ``-m website``, test_site.py), opened with every
folded block open and its formulas typeset, has nothing cut off: no element past the article's right edge or
clipped by an ancestor, unless it sits in something that scrolls. Its tab title holds no TeX, and each figure has
alt text that says what it shows and links to the full-size image. And what a reader sees is whole: the console
shows no error, every image loaded, every formula is typeset by MathJax with no TeX error, no raw ``$$`` or reST
directive shows as text, nothing is asked of the internet; a notebook's page shows at least as many figures as its
notebook's outputs hold, a page of the Chinese site holds Chinese, and each index's sidebar links every notebook of
its language; on the two indexes, the site's name (the title above the sidebar and the sidebar's first entry) is
whole on one line and not cut off at every width where the sidebar's layout changes, from 320 to 1920 px. Where
``$SITE_SCREENSHOTS`` names a folder, each page opened is photographed into it, to be looked at.

The pages are checked in the site's parts (``GROUPS``: the two halves of the API reference, the Chinese site, the
English notebooks, the other pages), one test each, so that ``pytest -n auto`` spreads them over the cores.

Opening a page costs the browser about 0.16 s of CPU, and almost all of it is the theme's (its style sheets and
scripts, the same on every page): a page of the API reference with an empty article costs 95% of a real one. So in
the API reference (``IN_ONE_FRAME``) a page whose main column holds no script and no formula, in the folder of the
page already open and with the same style sheets and scripts, is laid out by putting its main column in place of
the open page's (``_SWAP``): its 134 pages are read in a fifth of the CPU time. That this gives the layout that
opening the page gives is checked on every run: the first, the largest and the last page so laid out in each part
are then opened as well, and every element of their article must have the same box both ways, to a pixel (it held
for all 132 such pages when each was checked so, and a doctored script that changes the article as a page loads
fails it).

A notebook page that holds interactive figures (English and Chinese) is opened from disk instead (``file://``), every
network URL blocked (the figures' promise: no kernel, no network), and its figures are moved while it is open
(``site_figures.exercise``; every figure on their standalone page is exercised in full by
``test_site_interactive.py``): it shows as many as its notebook holds, each figure's script ran, and on the English
and the Chinese pages every slider and choice moves the picture (a screenshot differs; the Chinese pages added 4.5 s
to the website's tests, 49 against 44.5 on 2 cores);
the page logs no console error and asks for nothing but its own files. Each page is thus opened once. These pages
come last in their part: a page from disk after one served over HTTP is laid out in another renderer process,
its scripts compiled afresh, and interleaved the two kinds took 66 worker-seconds for the two notebook parts,
more than the 63 of the two visits before (layout over HTTP, figures from disk); in this order, 48.

Skipped without the docs extra or Debian's ``chromium`` / ``chromium-driver``, except under
``REQUIRE_SITE_TEST=1`` (CI's newest leg), where a missing tool fails the run.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import pytest
from site_figures import (
    allow_network,
    code_outputs,
    exercise,
    notebooks_with_figures,
    open_offline,
    page_problems,
    python_figures,
)
from site_fixtures import REPO, WAIT_FOR_MATH, need_docs

need_docs()

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
  // its computed style only where its content is wider than its box (a read that forces style on every element)
  const style = el.scrollWidth > el.clientWidth + 1 ? getComputedStyle(el) : null;
  const clipped = style !== null && style.display !== 'inline' && ['hidden', 'clip'].includes(style.overflowX);
  if ((box.right > edge || clipped) && !scrolls(el)) {
    cut.push(`<${el.tagName.toLowerCase()} class="${el.className}"> ${Math.round(box.right)} px > ${Math.round(edge)}: `
             + (el.dataset.text || el.textContent).trim().slice(0, 60));
  }
}
const images = [...article.querySelectorAll('img:not([src*="_static/"])')].map((img) => ({  // not the theme's icons
  src: img.src, alt: img.getAttribute('alt') || '', link: img.closest('a') ? img.closest('a').href : null,
}));
// what a reader sees besides the layout: the text outside code, the formulas, the images, the requests
const prose = article.cloneNode(true);
prose.querySelectorAll('pre, code, script, style, .highlight').forEach((el) => el.remove());
const text = prose.textContent;
const maths = [...article.querySelectorAll('span.math, div.math')];
return {cut: cut.slice(0, 5), n_cut: cut.length, title: document.title, images: images, width: window.innerWidth,
        formulas: article.querySelectorAll('mjx-container').length,
        signatures: article.querySelectorAll('dt.sig').length, elements: article.querySelectorAll('*').length,
        broken_images: [...document.images].filter((i) => !(i.complete && i.naturalWidth > 0)).map((i) => i.src),
        math: maths.length, untypeset: maths.filter((m) => !m.querySelector('mjx-container'))
          .map((m) => m.textContent.slice(0, 60)),
        tex_errors: [...article.querySelectorAll('mjx-merror')].map((e) => e.textContent.slice(0, 80)),
        raw_dollars: text.includes('$$'), raw_rest: /^\s*\.\. [a-z:]+::/m.test(text),
        chinese: /[\u4e00-\u9fff]/.test(text),
        resources: performance.getEntriesByType('resource').length,
        external: performance.getEntriesByType('resource').map((e) => e.name)
          .filter((u) => /^(https?|wss?|ftp):/.test(u) && !u.startsWith(location.origin + '/'))};
"""


# ``_SWAP(url)``: the page at ``url`` (fetched and parsed) in place of the open page's main column, then ``_CUT``'s
# facts about it with its title; or null, leaving the open page as it was, where the two pages do not share their
# frame -- another folder, or anything else that could lay the main column out otherwise: other style sheets or
# scripts (their files, or their text: only the line naming the page, for Sphinx's search, may differ), other
# attributes of <html> or <body> -- or where the main column needs a script of its own (a script, a formula)
_SWAP = r"""
const [url, done] = [arguments[0], arguments[arguments.length - 1]];
performance.setResourceTimingBufferSize(5000);  // the frame's page records every page fetched into it (250 by default)
const frame = (doc, base) => [
  ...[...doc.querySelectorAll('link[rel=stylesheet], script[src]')].map(
    (el) => new URL(el.getAttribute('href') || el.getAttribute('src'), base).pathname),
  ...[...doc.querySelectorAll('style, script:not([src])')].map(
    (el) => el.textContent.replace(/DOCUMENTATION_OPTIONS\.pagename = '[^']*';/, '')),
  ...[doc.documentElement, doc.body].map((el) => el.getAttributeNames().map((n) => `${n}=${el.getAttribute(n)}`)),
].join('\n');
const parse = (html) => new DOMParser().parseFromString(html, 'text/html');
const text = (u) => fetch(u).then((reply) => reply.text());
window.frameOfThisPage ||= text(location.href).then((html) => frame(parse(html), location.href));
Promise.all([window.frameOfThisPage, text(url)]).then(([own, html]) => {
  const page = parse(html);
  const main = page.querySelector('main#main-content');
  if (!main || new URL('.', url).href !== new URL('.', location.href).href || frame(page, url) !== own
      || main.querySelector('script, .math, math')) {
    done(null);
    return;
  }
  const placed = document.importNode(main, true);
  document.querySelector('main#main-content').replaceWith(placed);
  // its images loaded, as when the page is opened
  Promise.all([...placed.querySelectorAll('img')].map((img) => img.decode().catch(() => null)))
    .then(() => done({...(() => { CUT })(), title: page.title}));
}, () => done(null));
""".replace("CUT", _CUT)
_NAV = "return [...document.querySelectorAll('.bd-sidebar-primary a[href]')].map((a) => a.href);"
# the site's name, one word of 22 characters, as the title above the sidebar and as the sidebar's first entry (the
# home page): for each, the number of lines the word takes (1: whole; 0: not laid out) and whether the element's
# text overflows it
_NAME = """
return ['.navbar-brand .logo__title', '.bd-sidenav__home-link a.reference'].map((selector) => {
  const el = document.querySelector(selector);
  if (!el) return [selector, -1, false];
  const text = [...el.childNodes].find((node) => node.nodeType === 3 && node.data.includes('attention_from_scratch'));
  if (!text) return [selector, -1, false];
  const range = document.createRange(), at = text.data.indexOf('attention_from_scratch');
  range.setStart(text, at);
  range.setEnd(text, at + 22);
  const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top))).size;
  return [selector, lines, el.scrollWidth > el.clientWidth + 1];
});
"""
# the window widths where the sidebar's layout changes (a drawer below 960 px; 960-991; a fifth of the window from
# 992) and the usual screens'
NAME_WIDTHS = (320, 360, 480, 959, 960, 975, 991, 992, 1000, 1100, 1199, 1280, 1440, 1920)


def _name_whole(browser, path: str) -> list[str]:
    """Problems with the site's name at each of ``NAME_WIDTHS`` on the open page: broken mid-word, or cut off."""
    problems = []
    for width in NAME_WIDTHS:
        browser.set_window_size(width, 800)
        for selector, lines, overflows in browser.execute_script(_NAME):
            if lines != 1 or overflows:
                what = [{-1: "missing", 0: "not shown"}.get(lines, f"on {lines} lines")] if lines != 1 else []
                what += ["cut off"] if overflows else []
                problems.append(f"{path} at {width} px: the site's name in {selector} is {' and '.join(what)}")
    browser.set_window_size(1280, 1000)
    return problems


# every element of the article's box, rounded to the pixel: a page's layout, to compare two ways of reaching it
_BOXES = """
const article = document.querySelector('article.bd-article');
return [article, ...article.querySelectorAll('*')].map((el) => {
  const box = el.getBoundingClientRect();
  return [el.tagName, box.left, box.top, box.width, box.height];
});
"""
# how far two layouts' boxes may be apart: a box's edges fall on fractions of a pixel, and on CI one EM of
# api/text.html, laid out in a frame and opened, had heights that rounded to 20 px once and to 19 once; a changed
# layout moves boxes by a line or more
_PX = 1.0


def _first_differing_box(one: list, other: list) -> int | None:
    """The index of the first element whose tag differs, or whose box is more than ``_PX`` from its twin's in any
    of left, top, width and height (one list ending first counts there); None where all match."""
    for i, (a, b) in enumerate(zip([*one, None], [*other, None], strict=False)):
        if a is None or b is None:
            return None if a is b else i
        if a[0] != b[0] or any(abs(x - y) > _PX for x, y in zip(a[1:], b[1:], strict=True)):
            return i
    return None


def _site_pages(site: Path) -> list[str]:
    """Every HTML page of both sites, as paths relative to the site (Sphinx's own folders left out)."""
    skip = {"_static", "_sources", "_images", "jupyter_execute"}
    return sorted(str(p.relative_to(site)) for p in site.rglob("*.html") if not skip & set(p.relative_to(site).parts))


def _group(path: str) -> str:
    """The part of the site a page belongs to (the API reference in the package's parts, as its index has them)."""
    if path.startswith("api/"):
        return "api-course" if path.startswith("api/course.") else "api"
    return path.split("/")[0] if path.startswith(("zh/", "notebooks/")) else "pages"


# every part of the site, the longest to check first (pytest -n auto runs them beside each other: conftest.py), and
# what shows that its pages were read as a reader sees them: typeset formulas, or, in the API reference, which has
# no math, documented signatures
GROUPS = {"zh": ("formulas", 1000), "notebooks": ("formulas", 1000), "api-course": ("signatures", 100),
          "api": ("signatures", 100), "pages": ("formulas", 50)}
# the parts whose pages are laid out in one frame where they can be (``_SWAP``): the API reference, pages made by one
# template from docstrings, with no math and nothing that a script of the theme changes once a page has loaded. Not
# the notebooks: MathJax sizes a formula by the text's font as it measures it, which differs by a pixel or three
# between a page typeset as it opens and a column typeset into a page already open; nor the other pages (the module
# index's fold buttons are shown by Sphinx's script as the page loads)
IN_ONE_FRAME = {"api-course", "api"}


def test_boxes_match_to_a_pixel_and_no_further():
    one = [["ARTICLE", 0, 0, 900, 11000.4], ["EM", 816, 11071, 10, 19.49]]
    assert _first_differing_box(one, [["ARTICLE", 0, 0, 900, 11000.6], ["EM", 816.3, 11071, 10, 19.51]]) is None
    assert _first_differing_box(one, [one[0], ["EM", 816, 11071 + 20, 10, 19.49]]) == 1  # a line lower
    assert _first_differing_box(one, [one[0], ["STRONG", 816, 11071, 10, 19.49]]) == 1
    assert _first_differing_box(one, one[:1]) == 1
    assert _first_differing_box(one[:1], one) == 1


def test_the_groups_hold_every_page_once(site):
    groups = [_group(p) for p in _site_pages(site)]  # each page in exactly one group: the one _group names
    assert set(groups) == set(GROUPS), f"groups with no page, or pages in a group no test checks: {set(groups)}"


def _errors(browser) -> list[str]:
    """The console's errors logged since it was last read."""
    return [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def _open(browser, url: str) -> dict:
    """Open the page at ``url`` and return ``_CUT``'s facts about it, its formulas typeset, with whether MathJax
    finished (``typeset``: True, or None on a page without it) and the console's errors so far (``console``)."""
    browser.get(url)
    typeset = browser.execute_async_script(WAIT_FOR_MATH)
    return browser.execute_script(_CUT) | {"typeset": typeset, "console": _errors(browser)}


def _notebook(path: str) -> Path | None:
    """The notebook a page of the site shows (notebooks/X.html, zh/notebooks/X.html), or None."""
    parts = Path(path).parts
    if parts[-2:-1] != ("notebooks",):
        return None
    return REPO / "notebooks" / ("zh" if parts[0] == "zh" else "") / f"{Path(path).stem}.ipynb"


def _n_figures(nb: Path) -> int:
    """How many PNG figures the notebook's stored outputs hold."""
    return sum("image/png" in out.get("data", {}) for out in code_outputs(nb))


def _problems(path: str, facts: dict) -> list[str]:
    """What is wrong with the page at ``path``, in words, from its facts (``_CUT``'s, ``_open``'s)."""
    problems = []
    if facts["width"] != 1280:  # the browser laid the page out at another width than the test's
        problems.append(f"laid out {facts['width']} px wide, not 1280")
    if facts["n_cut"]:
        problems.append(f"{facts['n_cut']} cut, e.g. {facts['cut']}")
    if re.search(r"\\[A-Za-z(\[]|\$", facts["title"]):
        problems.append(f"TeX in the tab title {facts['title']!r}")
    for img in facts["images"]:
        if img["link"] != img["src"]:
            problems.append(f"a figure that does not open at full size: {img['src']} (link {img['link']})")
        if len(img["alt"]) < 12 or re.search(r"\.(png|svg|jpe?g)$", img["alt"]):
            problems.append(f"alt text that does not say what the figure shows: {img['alt']!r}")
    problems += [f"an image that did not load: {src}" for src in facts["broken_images"]]
    if facts["math"] and facts["typeset"] is not True:
        problems.append(f"{facts['math']} formulas, but MathJax did not load or did not finish")
    problems += [f"a formula MathJax did not typeset: {tex!r}" for tex in facts["untypeset"][:3]]
    problems += [f"a TeX error: {error!r}" for error in facts["tex_errors"][:3]]
    if facts["raw_dollars"]:
        problems.append("raw $$ left in the text")
    if facts["raw_rest"]:
        problems.append("a reST directive shown as text (autodoc in a Markdown page?)")
    problems += [f"a request to the internet: {url}" for url in facts["external"]]
    if not facts["resources"]:  # every page loads the theme's files
        problems.append("no request in the page's resource timing: the check of requests would see nothing")
    problems += [f"console: {message}" for message in facts["console"]]
    if path.startswith("zh/") and not facts["chinese"]:
        problems.append("no Chinese text on a page of the Chinese site")
    nb = _notebook(path)
    if nb is not None and len(facts["images"]) < _n_figures(nb):
        problems.append(f"{len(facts['images'])} figures shown, {_n_figures(nb)} in {nb.name}'s outputs")
    return [f"{path}: {problem}" for problem in problems]


@functools.cache
def _figure_pages() -> dict[str, int]:
    """{site path of a notebook page with interactive figures, English or Chinese: how many its notebook holds}."""
    return {f"{site}notebooks/{stem}.html": n for site, folder in (("", "notebooks"), ("zh/", "notebooks/zh"))
            for stem, n in notebooks_with_figures(REPO / folder).items()}


def _open_with_figures(browser, site: Path, path: str, shots: Path) -> tuple[dict, list[str]]:
    """Open the page at ``path`` from disk with the network blocked, and return ``_CUT``'s facts about it and what
    went wrong with its interactive figures or its requests, in words."""
    open_offline(browser, (site / path).as_uri())
    try:  # the network allowed again whatever happens here: the browser goes on to other pages, other tests
        typeset = browser.execute_async_script(WAIT_FOR_MATH)
        facts, problems = browser.execute_script(_CUT) | {"typeset": typeset, "console": []}, []  # console: below
        found = browser.find_elements("css selector", ".afs-fig")
        if len(found) != _figure_pages()[path]:
            problems.append(f"{len(found)} interactive figures on the page, {_figure_pages()[path]} in the notebook")
        depth = "controls"  # every slider and choice, both languages; the buttons and play: on the standalone page
        tag = path.removesuffix(".html").replace("/", "_")
        for fig in found:
            name = fig.get_dom_attribute("data-figure")
            if name not in python_figures():
                problems.append(f"an interactive figure {name!r} that the package does not write")
                continue
            problems += exercise(browser, fig, python_figures()[name], shots, tag, depth)
        problems += page_problems(browser)
    finally:
        allow_network(browser)
    return facts, [f"{path}: {p}" for p in problems]


@pytest.mark.parametrize("group", list(GROUPS))
def test_every_page_fits_1280_px_with_text_titles_and_linked_figures(group, site, browser, base_url, shots):
    browser.set_window_size(1280, 1000)
    browser.set_script_timeout(30)
    # frames: {page laid out in another's frame: that page}; sizes: {that page: the elements of its article}
    problems, seen, frames, sizes, frame, last_opened = [], 0, {}, {}, None, None
    kind, minimum = GROUPS[group]
    # the pages with interactive figures last: opened from disk, each costs more after a page served over HTTP
    for path in sorted((p for p in _site_pages(site) if _group(p) == group), key=lambda p: p in _figure_pages()):
        in_frame = frame is not None and group in IN_ONE_FRAME
        if last_opened:  # a message can come after its page was read (a failed image's)
            problems += [f"{last_opened}: console, once read: {message}" for message in _errors(browser)]
        facts = browser.execute_async_script(_SWAP, base_url + path) if in_frame else None
        last_opened = path
        if path in _figure_pages():
            facts, figure_problems = _open_with_figures(browser, site, path, shots)
            problems += figure_problems
        elif facts is None:
            facts, frame = _open(browser, base_url + path), path
            if path in ("index.html", "zh/index.html"):  # the sidebar links every notebook of its language
                nav = set(browser.execute_script(_NAV))
                folder = REPO / "notebooks" / ("zh" if path.startswith("zh/") else "")
                problems += [f"{path}: the navigation does not link {nb.name}" for nb in sorted(folder.glob("*.ipynb"))
                             if f"{base_url}{path.removesuffix('index.html')}notebooks/{nb.stem}.html" not in nav]
                problems += _name_whole(browser, path)
        else:
            frames[path], sizes[path] = frame, facts["elements"]
            # no script, no formula: nothing to typeset; the console's errors so far came with this page's column
            facts |= {"typeset": None, "console": _errors(browser)}
        if os.environ.get("SITE_SCREENSHOTS") and frames.get(path) is None:  # to be looked at (shots: that folder)
            browser.save_screenshot(str(shots / f"layout_{path.removesuffix('.html').replace('/', '_')}.png"))
        seen += facts[kind]
        problems += _problems(path, facts)
    if last_opened:
        problems += [f"{last_opened}: console, once read: {message}" for message in _errors(browser)]
    swapped = list(frames)
    largest = sorted(swapped, key=sizes.get)[-1:]
    for path in dict.fromkeys(swapped[:1] + largest + swapped[-1:]):  # laid out in its frame again, then opened
        _open(browser, base_url + frames[path])
        assert browser.execute_async_script(_SWAP, base_url + path) is not None
        in_frame = browser.execute_script(_BOXES)
        _open(browser, base_url + path)
        opened = browser.execute_script(_BOXES)
        first = _first_differing_box(in_frame, opened)
        if first is not None:
            problems.append(f"{path}: laid out in {frames[path]}'s frame, {len(in_frame)} boxes, the first that "
                            f"differs {in_frame[first:first + 1]}; opened, {len(opened)} boxes, there "
                            f"{opened[first:first + 1]}")
    assert seen > minimum, f"the {group} pages show only {seen} {kind}: this test would measure nothing"
    figure_pages = [p for p in _figure_pages() if _group(p) == group]
    if group in ("notebooks", "zh"):
        assert figure_pages, f"no {group} page holds an interactive figure: their check here would see nothing"
        shown = [nb for nb in (_notebook(p) for p in _site_pages(site) if _group(p) == group) if nb is not None]
        assert sum(map(_n_figures, shown)) > 20, f"the {group} pages' notebooks hold few figures: this checks little"
    problems += [f"{p}: its notebook holds interactive figures, but the site has no such page"
                 for p in figure_pages if not (site / p).is_file()]
    if group in IN_ONE_FRAME:  # the suite's time counts on it: a page opened costs five laid out in a frame
        pages = sum(_group(p) == group for p in _site_pages(site))
        assert len(swapped) > pages / 2, f"only {len(swapped)} of the {pages} {group} pages laid out in one frame"
    assert not problems, "\n".join(problems)
