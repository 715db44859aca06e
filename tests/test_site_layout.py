"""Every page of the course's website, English and Chinese, in headless Chromium at 1280 px.

Each page of both sites (the build of ``site_fixtures.py``: ``$SITE_DIR`` or README's command), opened with every
folded block open and its formulas typeset, has nothing cut off: no element past the article's right edge or
clipped by an ancestor, unless it sits in something that scrolls. Its tab title holds no TeX, and each figure has
alt text that says what it shows and links to the full-size image.

The pages are checked in the site's parts (``GROUPS``: the two halves of the API reference, the Chinese site, the
English notebooks, the other pages), one test each, so that ``pytest -n auto`` spreads them over the cores.

Skipped without the docs extra or Debian's ``chromium`` / ``chromium-driver``, except under
``REQUIRE_SITE_TEST=1`` (CI's newest leg), where a missing tool fails the run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from site_fixtures import WAIT_FOR_MATH, need_docs

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
return {cut: cut.slice(0, 5), n_cut: cut.length, title: document.title, images: images, width: window.innerWidth,
        formulas: article.querySelectorAll('mjx-container').length,
        signatures: article.querySelectorAll('dt.sig').length};
"""


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
GROUPS = {"api-course": ("signatures", 100), "zh": ("formulas", 1000), "notebooks": ("formulas", 1000),
          "api": ("signatures", 100), "pages": ("formulas", 50)}


def test_the_groups_hold_every_page_once(site):
    groups = [_group(p) for p in _site_pages(site)]  # each page in exactly one group: the one _group names
    assert set(groups) == set(GROUPS), f"groups with no page, or pages in a group no test checks: {set(groups)}"


@pytest.mark.parametrize("group", list(GROUPS))
def test_every_page_fits_1280_px_with_text_titles_and_linked_figures(group, site, browser, base_url):
    browser.set_window_size(1280, 1000)
    problems, seen = [], 0
    kind, minimum = GROUPS[group]
    for path in (p for p in _site_pages(site) if _group(p) == group):
        browser.get(base_url + path)
        browser.set_script_timeout(30)
        browser.execute_async_script(WAIT_FOR_MATH)
        facts = browser.execute_script(_CUT)
        seen += facts[kind]
        if facts["width"] != 1280:  # the browser laid the page out at another width than the test's
            problems.append(f"{path}: laid out {facts['width']} px wide, not 1280")
        if facts["n_cut"]:
            problems.append(f"{path}: {facts['n_cut']} cut, e.g. {facts['cut']}")
        if re.search(r"\\[A-Za-z(\[]|\$", facts["title"]):
            problems.append(f"{path}: TeX in the tab title {facts['title']!r}")
        for img in facts["images"]:
            if img["link"] != img["src"]:
                problems.append(f"{path}: a figure that does not open at full size: {img['src']} (link {img['link']})")
            if len(img["alt"]) < 12 or re.search(r"\.(png|svg|jpe?g)$", img["alt"]):
                problems.append(f"{path}: alt text that does not say what the figure shows: {img['alt']!r}")
    assert seen > minimum, f"the {group} pages show only {seen} {kind}: this test would measure nothing"
    assert not problems, "\n".join(problems)
