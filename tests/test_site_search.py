"""The search of the course's website, English and Chinese, in headless Chromium.

The search of each site finds every page whose text holds 注意力, 掩码, 键值缓存, 缩放点积注意力, "softmax" or
"KV cache" (the expected pages are read from the built pages' article text, independently of the search's own
index), and its results show no TeX and no theme text. The Chinese site's index is segmented by jieba (the docs
extra), so that a query finds words inside running Chinese text.

Skipped without the docs extra or Debian's ``chromium`` / ``chromium-driver``, except under
``REQUIRE_SITE_TEST=1`` (CI's newest leg), where a missing tool fails the run.
"""

from __future__ import annotations

import functools
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag

import pytest
from site_fixtures import VOID_TAGS, need_docs

need_docs()

_SEARCH = r"""
const done = arguments[arguments.length - 1];
const start = Date.now();
const poll = () => {  // Sphinx's search writes the summary once the last result is listed
  const summary = document.querySelector('#search-results .search-summary');
  const items = [...document.querySelectorAll('#search-results ul.search li')];
  if (summary && summary.textContent.trim()) {
    done({summary: summary.textContent, results: items.map((li) => ({
      href: li.querySelector('a').href, title: li.querySelector('a').textContent,
      snippet: li.querySelector('p.context') ? li.querySelector('p.context').textContent : null}))});
  } else if (Date.now() - start > 25000) {
    done(null);
  } else {
    setTimeout(poll, 50);
  }
};
poll();
"""
# the snippets shown so far, once ``arguments[0]`` of them have loaded (each result's page is fetched for its
# snippet, after the list is shown) or 15 s have passed
_SNIPPETS = r"""
const [wanted, done] = arguments;
const start = Date.now();
const poll = () => {
  const shown = [...document.querySelectorAll('#search-results ul.search li p.context')].map((p) => p.textContent)
    .filter((text) => text);
  if (shown.length >= wanted || Date.now() - start > 15000) { done(shown); } else { setTimeout(poll, 50); }
};
poll();
"""
QUERIES = ["注意力", "掩码", "键值缓存", "缩放点积注意力", "softmax", "KV cache"]


class _ArticleText(HTMLParser):
    """The text of a page's article (what the search indexes), without its heading links (¶, #)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth, self.skip, self.parts = 0, 0, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in VOID_TAGS:
            return
        if self.depth or (tag == "article" and "bd-article" in (a.get("class") or "")):
            self.depth += 1
            if self.skip or "headerlink" in (a.get("class") or "") or tag in ("script", "style"):
                self.skip += 1

    def handle_endtag(self, tag):
        if self.depth and tag not in VOID_TAGS:
            self.depth -= 1
            self.skip = max(0, self.skip - 1) if self.skip else 0

    def handle_data(self, data):
        if self.depth and not self.skip:
            self.parts.append(data)


@functools.cache
def _article_texts(site: Path, prefix: str) -> dict[str, str]:
    """{page: its article text in lower case} for every page in one site's search index (``prefix`` "" or "zh/"),
    each page parsed once for all the queries."""
    index = (site / prefix / "searchindex.js").read_text(encoding="utf-8")
    docnames = json.loads(index[index.index("(") + 1:index.rindex(")")])["docnames"]
    texts = {}
    for doc in docnames:
        parser, html = _ArticleText(), (site / prefix / f"{doc}.html").read_text(encoding="utf-8")
        parser.feed(html[max(html.find("<article "), 0):])  # what comes before the article is not read
        texts[f"{prefix}{doc}.html"] = "".join(parser.parts).lower()
    return texts


def _pages_holding(site: Path, prefix: str, words: str) -> set[str]:
    """The pages of one site (``prefix`` "" or "zh/") whose article text holds ``words`` (any case), Latin words
    at the start of a word or of a snake_case name's part (softmax in ``my_softmax``, not in ``logsoftmax``)."""
    start = r"(?<![a-z0-9])" if re.match(r"[A-Za-z]", words) else ""
    pattern = re.compile(start + r"\s+".join(map(re.escape, words.lower().split())))
    return {page for page, text in _article_texts(site, prefix).items() if pattern.search(text)}


def test_article_text_reads_the_article_only():
    parser = _ArticleText()
    parser.feed('<nav>注意力</nav><article class="bd-article"><h1>KV cache<a class="headerlink">#</a></h1>'
                '<p>soft<b>max</b></p><script>x</script></article><footer>掩码</footer>')
    assert "".join(parser.parts) == "KV cachesoftmax"


def test_a_glossary_term_inside_a_longer_compound_is_indexed():
    """jieba's search mode splits 分页键值缓存 into words of two and three characters: 键值缓存, four, is added
    from the glossary, on both sites (the browser test below finds the page that holds only the compound)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs"))
    import site_text

    assert "键值缓存" in site_text.chinese_words("一个分页键值缓存")
    assert "键值缓存" in site_text.SearchChineseCourse({}).split("一个分页键值缓存")
    assert site_text.course_terms_within(["键值缓存"]) == []  # the run itself is jieba's to index


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
            snippets = browser.execute_async_script(_SNIPPETS, min(5, len(expected)))
            assert snippets, f"{words!r}: no result shows a snippet"
            bad = [s for s in snippets if re.search(r"\\[A-Za-z(\[]", s) or "System Settings" in s
                   or re.search(r"\bLight\b.*\bDark\b", s)]
            assert not bad, f"{words!r}: snippets with TeX or theme text: {bad[:3]}"
    assert checked >= 10 if prefix else checked >= 20, "few pages hold the words: this test checks little"
