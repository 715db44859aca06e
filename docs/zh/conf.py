"""Sphinx configuration of the Chinese site (中文站点): the English site's settings, in Chinese.

Built by docs/conf.py after the English site, into docs/_build/html/zh/ (README.zh.md, "网站"); by hand:
python -m sphinx -W --keep-going -b html docs/zh docs/_build/html/zh
Its pages are generated from README.zh.md, notebooks/zh/ and the quiz in Chinese (make_pages.generate_zh).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/: the English conf and make_pages

import conf as _english
from conf import *  # noqa: F403  (the English site's settings; those below differ)

_english.SITE_LANG = "zh"  # the language switch and the build hook read it from the module
make_pages = _english.make_pages
make_pages.generate_zh(Path(__file__).resolve().parent)

language = "zh_CN"
html_title = "attention_from_scratch（中文）"
exclude_patterns = ["_build", "**/.ipynb_checkpoints"]
# Sphinx 9's Chinese search names a ChineseStemmer it does not ship (docs/_static/zh-stemmer.js defines it)
html_js_files = ["zh-stemmer.js", *_english.html_js_files]
# the glossary's words are added to jieba's own dictionary (site_text.py); Sphinx would otherwise load jieba's
# whole default dictionary a second time as a user dictionary
html_search_options = {"dict": ""}
