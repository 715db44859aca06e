"""What the site shows as text, and how its search reads Chinese (used by docs/conf.py).

* **Titles as text.** A title's math (``Why divide by $\\sqrt{d_k}$?``) becomes Unicode text (``√dₖ``,
  :mod:`tex_text`) before Sphinx copies the title anywhere: the browser tab and print header, the
  navigation, the previous/next links and the search results then read as the page does, with no raw TeX.
* **Formulas in search snippets.** Each formula's HTML element gets ``data-text``, its Unicode reading;
  docs/_static/search.js shows that in a result's snippet instead of the TeX source.
* **Chinese search.** Sphinx indexes Chinese words only with a segmenter (jieba, in the docs extra). Both
  sites use it: the Chinese pages, and the Chinese terms that the English pages give beside the English
  ones. jieba also learns the glossary's terms (translations/zh/GLOSSARY.md: 键值缓存, 缩放点积注意力, …),
  so that each is one word of the index as well as its parts.
"""

from __future__ import annotations

import html
import logging
import re
from functools import cache
from pathlib import Path

from docutils import nodes
from sphinx.search.en import SearchEnglish
from sphinx.search.zh import SearchChinese
from tex_text import tex_to_text

REPO = Path(__file__).resolve().parents[1]
GLOSSARY = REPO / "translations" / "zh" / "GLOSSARY.md"
_HAN_RUN = re.compile(r"[\u4e00-\u9fff]{2,}")
# how the mathjax extension writes a formula: <span|div class="math notranslate nohighlight" ...>TeX</...>
_MATH_HTML = re.compile(r'<(span|div) class="math notranslate nohighlight"([^>]*)>(.*?)</\1>', re.DOTALL)
_DELIMITERS = re.compile(r"^\s*(\\\(|\\\[)?(.*?)(\\\)|\\\])?\s*$", re.DOTALL)


def titles_as_text(app, doctree) -> None:
    """``doctree-read``, before Sphinx's title collector: math inside a title becomes its Unicode text."""
    for title in list(doctree.findall(nodes.title)):
        for math in list(title.findall(nodes.math)):
            math.replace_self(nodes.Text(tex_to_text(math.astext())))


def math_data_text(app, pagename, templatename, context, doctree) -> None:
    """``html-page-context``: every formula of the page's body carries ``data-text``, its Unicode reading."""
    def annotate(match: re.Match) -> str:
        if "data-text=" in match.group(2):
            return match.group(0)
        tex = _DELIMITERS.match(html.unescape(match.group(3))).group(2)
        text = html.escape(tex_to_text(tex), quote=True)
        return f'<{match.group(1)} class="math notranslate nohighlight"{match.group(2)} data-text="{text}">' \
               f"{match.group(3)}</{match.group(1)}>"

    if context.get("body"):
        context["body"] = _MATH_HTML.sub(annotate, context["body"])


@cache
def course_words() -> tuple[str, ...]:
    """The glossary's Chinese terms (every run of two or more Han characters in its 中文 column)."""
    rows = re.findall(r"^\|([^|]+)\|([^|]+)\|", GLOSSARY.read_text(encoding="utf-8"), re.MULTILINE)
    return tuple(sorted({word for _, zh in rows[2:] for word in _HAN_RUN.findall(zh)}))


@cache
def _jieba():
    """jieba, initialised once, knowing the course's words (or None: the docs extra is not installed)."""
    try:
        import jieba
    except ImportError:
        return None
    jieba.setLogLevel(logging.WARNING)  # its "Building prefix dict..." lines are not the build's warnings
    for word in course_words():
        jieba.add_word(word, freq=100_000)  # frequent enough to win against its parts when segmenting
    return jieba


def chinese_words(text: str) -> list[str]:
    """The words jieba's search mode finds in ``text``'s Chinese runs (whole compounds and their parts), and
    the glossary's terms inside them (:func:`course_terms_within`)."""
    jieba = _jieba()
    if jieba is None:
        raise RuntimeError("the site's Chinese search needs jieba: pip install -e \".[docs]\"")
    runs = _HAN_RUN.findall(text)  # a run of one character holds no word of two
    return [w for run in runs for w in jieba.cut_for_search(run) if len(w) > 1] + course_terms_within(runs)


def course_terms_within(runs: list[str]) -> list[str]:
    """The glossary's terms that sit inside a longer run of Han characters: jieba's search mode splits a
    compound into its words of two and three characters only, so 分页键值缓存 (paged KV cache) would otherwise
    not be found by a search for 键值缓存 (KV cache), a word of four."""
    return [word for run in runs for word in course_words() if len(word) < len(run) and word in run]


def identifier_parts(text: str) -> list[str]:
    """The parts of each snake_case name in ``text`` (``naive_softmax`` -> ``naive``, ``softmax``), so that a
    search for softmax also finds the pages that only name ``my_softmax`` or ``log_softmax``."""
    return [part for name in re.findall(r"\w*_\w*", text, re.ASCII) for part in name.split("_") if len(part) > 1]


class SearchEnglishWithChinese(SearchEnglish):
    """English search, plus the Chinese words of the English pages (the terms given beside the English) and
    the parts of snake_case names."""

    def split(self, input: str) -> list[str]:
        return super().split(input) + chinese_words(input) + identifier_parts(input)


class SearchChineseCourse(SearchChinese):
    """Sphinx's Chinese search, with jieba knowing the glossary's terms, plus the parts of snake_case names."""

    def split(self, input: str) -> list[str]:
        _jieba()
        return super().split(input) + course_terms_within(_HAN_RUN.findall(input)) + identifier_parts(input)


def use_search_languages() -> None:
    """Make ``html_search_language`` "en" and "zh" mean the classes above (Sphinx looks them up by name)."""
    import sphinx.search

    if _jieba() is None:
        raise RuntimeError("the site's Chinese search needs jieba: pip install -e \".[docs]\"")
    sphinx.search.languages["en"] = SearchEnglishWithChinese
    sphinx.search.languages["zh"] = SearchChineseCourse


def link_images_to_full_size(app, doctree, docname) -> None:
    """``doctree-resolved``: every image opens at full size on click, a link to the image file itself (a
    multi-panel figure shown at the column's width has small text)."""
    if app.builder.format != "html":
        return
    from sphinx.util.osutil import relative_uri

    images = relative_uri(app.builder.get_target_uri(docname), app.builder.imagedir)
    for image in list(doctree.findall(nodes.image)):
        uri = image["uri"]
        if isinstance(image.parent, nodes.reference) or uri not in app.env.images:
            continue
        link = nodes.reference("", "", internal=True, refuri=f"{images}/{app.env.images[uri][1]}",
                               classes=["full-size-image"])
        image.replace_self(link)
        link.append(image)
