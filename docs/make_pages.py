"""Write the site's generated pages into docs/ before Sphinx reads them (called by conf.py).

Nothing here is a list that can go stale: the notebooks are every ``notebooks/*.ipynb`` in file-name
order (the ``NN_`` prefix is the course order), the API pages are every module of the package, and
the quiz page is drawn from ``attention_from_scratch.course.quiz`` at build time. The generated files are
git-ignored (docs/.gitignore); a file is rewritten only when its text changes, so Sphinx's
incremental build re-reads only what changed.

    index.md        README.md, its repo-relative links rewritten to work on the site, then the toctrees: the
                    course's, one per part with its caption (attention_from_scratch/course/parts.py), and the
                    reference's
    notebooks/*.ipynb  copies of the stored, executed notebooks (never re-executed: nb_execution_mode "off")
    quiz.md         every quiz question, with its computed answer and explanation in a collapsed block
    api/*.rst       one autodoc page per module (a plain module's page documents what the module defines)
    reference/*.md  the reference pages written in docs/guide/ (README links to them there, and they read
                    as Markdown in the repository), their links made relative to the site

and, for the Chinese site (``generate_zh``, called by docs/zh/conf.py), under docs/zh/:

    index.md        README.zh.md, its links rewritten the same way, then the toctree of the Chinese notebooks
    notebooks/*.ipynb  copies of notebooks/zh/*.ipynb (the built Chinese edition)
    quiz.md         the quiz in Chinese (``quiz.ask``/``quiz.check`` with ``lang="zh"``)
"""

from __future__ import annotations

import html
import importlib
import inspect
import json
import pkgutil
import re
from pathlib import Path

# a Markdown link or image target: ](target) ; group 1 is the target, up to a space or ')'
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HTML_SRC = re.compile(r'(src|href)="([^"]+)"')


def _write(path: Path, text: str) -> None:
    """Write ``text`` unless the file already holds it (keeps mtimes, so Sphinx rebuilds only changes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _is_relative(target: str) -> bool:
    return not re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", target)


def notebooks(repo: Path, lang: str = "en") -> list[Path]:
    """Every notebook of the course, in course order (their names start with a two-digit number).

    ``lang="zh"``: the Chinese edition's, ``notebooks/zh/*.ipynb``.
    """
    return sorted((repo / "notebooks" / ("" if lang == "en" else lang)).glob("*.ipynb"))


def site_pages(repo: Path, lang: str) -> set[str]:
    """The page names (Sphinx's ``pagename``) that the site of ``lang`` has, for the language switch."""
    common = {"index", "quiz", "search", "genindex"}
    return common | {f"notebooks/{p.stem}" for p in notebooks(repo, lang)}


def modules(package: str = "attention_from_scratch") -> list[str]:
    """Every public module of the package, sub-packages' modules included (``course.plots.scores``), sorted.

    ``__main__`` and any ``_private`` module are left out.
    """
    pkg = __import__(package)
    names = (m.name.removeprefix(package + ".") for m in pkgutil.walk_packages(pkg.__path__, package + "."))
    return sorted(n for n in names if not any(part.startswith("_") for part in n.split(".")))


GUIDE = "docs/guide"  # the reference pages' sources (README links there); the site's copies: docs/reference/
# the reference pages in the site's order (its menu); a page of docs/guide/ not named here comes last
GUIDE_ORDER = ("course", "notation", "errata", "numbers", "benchmarks", "package", "instructors", "development",
               "changelog")
CHANGELOG = "CHANGELOG.md"  # shown on the site as reference/changelog beside the guide's pages


def guide_pages(repo: Path) -> list[Path]:
    """The reference pages of docs/guide/ and the changelog, in the site's order."""
    rank = {name: i for i, name in enumerate(GUIDE_ORDER)}
    pages = [*(repo / GUIDE).glob("*.md"), repo / CHANGELOG]
    return sorted(pages, key=lambda p: (rank.get(p.stem.lower(), len(rank)), p.stem))


def _link_names(line: str, repo: Path, module_names: list[str], up: str = "") -> str:
    """A notebook (`` `06_masking` ``) or module (`` `mla.py` ``) named in backticks becomes a link to its page
    (``up`` leads from the page to docs/), unless it is inside a link already."""
    nb_names = {p.stem for p in notebooks(repo)}

    def nb(m: re.Match) -> str:
        return f"[`{m.group(1)}`]({up}notebooks/{m.group(1)}.ipynb)" if m.group(1) in nb_names else m.group(0)

    def mod(m: re.Match) -> str:
        return f"[`{m.group(1)}.py`]({up}api/{m.group(1)}.rst)" if m.group(1) in module_names else m.group(0)

    # only a backticked name that is not already inside a link: not preceded by '[' nor followed by ']'
    line = re.sub(r"(?<!\[)`(\d\d_[A-Za-z0-9_]+)`(?!\])", nb, line)
    return re.sub(r"(?<!\[)`([a-z_][a-z0-9_]*)\.py`(?!\])", mod, line)


def _outside_code(text: str, rewrite) -> str:
    """``text`` with ``rewrite`` applied to each line outside fenced code blocks."""
    out, in_code = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        elif not in_code:
            line = rewrite(line)
        out.append(line)
    return "\n".join(out) + "\n"


def rewrite_readme(text: str, repo: Path, module_names: list[str]) -> str:
    """README.md as the site's front page: links that are relative to the repo made relative to docs/.

    ``notebooks/X.ipynb`` stays (docs/notebooks/ holds the copies, so it becomes a page link), a page of
    ``docs/guide/`` becomes its site copy in ``reference/``; ``figures/x.png`` and any other file of the repo
    become ``../figures/x.png`` (an image, or a download link). Outside code blocks, a notebook named in
    backticks (`` `06_masking` ``) and a module (`` `mla.py` ``) become links to their pages.
    """
    def fix_target(match: re.Match) -> str:
        target = match.group(1)
        if not _is_relative(target) or target.startswith("notebooks/"):
            return match.group(0)
        if target.startswith(GUIDE + "/"):
            return f"](reference/{target.removeprefix(GUIDE + '/')})"
        if target == CHANGELOG:
            return "](reference/changelog.md)"
        return f"](../{target})"

    return _outside_code(text, lambda line: _link_names(_LINK.sub(fix_target, line), repo, module_names))


def rewrite_guide(text: str, repo: Path, module_names: list[str]) -> str:
    """A page of docs/guide/ as its site copy in docs/reference/, one folder below docs/ as its source is.

    Its links are relative to docs/guide/, so that they work where the page is read in the repository; only
    the ones into the repository's notebooks and READMEs change: ``../../notebooks/X.ipynb`` becomes the
    site's page ``../notebooks/X.ipynb``, ``../../README.md`` the front page, ``../../README.zh.md`` the
    Chinese site. Figures and other files (``../../figures/x.png``) resolve from the copy as from the source.
    """
    def fix_target(match: re.Match) -> str:
        target = match.group(1)
        if target.startswith("../../notebooks/"):
            return f"]({target.removeprefix('../')})"
        return {"../../README.md": "](../index.md)", "../../README.zh.md": "](../zh/index.html)",
                f"../../{CHANGELOG}": "](changelog.md)"}.get(target, match.group(0))

    return _outside_code(text, lambda line: _link_names(_LINK.sub(fix_target, line), repo, module_names, "../"))


def index_page(repo: Path, module_names: list[str]) -> str:
    readme = (repo / "README.md").read_text(encoding="utf-8")
    # the link to README.zh.md is the Chinese site on the site (its front page is that README)
    readme = readme.replace("[中文](README.zh.md)", '<a href="zh/index.html">中文</a>')
    readme = rewrite_readme(readme, repo, module_names)
    return readme + course_toctrees(repo, "en") + (
        "\n```{toctree}\n:caption: Reference\n:maxdepth: 1\n\n"
        + "".join(f"reference/{p.stem.lower()}\n" for p in guide_pages(repo)) + "quiz\napi/index\n```\n"
    )


def course_toctrees(repo: Path, lang: str) -> str:
    """The course's table of contents: one toctree per part, captioned, in the order of course/parts.py.

    A notebook is found under its teaching-order name or its former one (``parts.path``), so the contents
    are right before and after tools/renumber.py has moved the files; a notebook of notebooks/ (or
    notebooks/zh/) that the table does not name is listed last, under "More", so no page is left out.
    """
    from attention_from_scratch.course import parts

    folder = repo / "notebooks" / ("" if lang == "en" else lang)
    present = {p.stem for p in notebooks(repo, lang)}
    listed, out = set(), []
    for (caption_en, caption_zh), members in parts.by_part():
        stems = []
        for nb in members:
            found = parts.path(nb, folder)
            if found is not None and found.stem in present:
                stems.append(found.stem)
        listed.update(stems)
        if stems:
            caption = caption_en if lang == "en" else caption_zh
            out.append(f"\n```{{toctree}}\n:caption: {caption}\n:maxdepth: 1\n\n"
                       + "".join(f"notebooks/{s}\n" for s in stems) + "```\n")
    rest = sorted(present - listed)
    if rest:
        out.append("\n```{toctree}\n:caption: " + ("More" if lang == "en" else "更多") + "\n:maxdepth: 1\n\n"
                   + "".join(f"notebooks/{s}\n" for s in rest) + "```\n")
    return "".join(out)


# an HTML anchor alone on its line, <a id="name"></a>: Jupyter jumps to it, Sphinx cannot link to it
_HTML_ANCHOR = re.compile(r'^[ \t]*<a\s+(?:id|name)="([^"]+)"\s*>\s*</a>[ \t]*$', re.MULTILINE)
# ... right above a folded block (an erratum box): the target names nothing Sphinx can hold an id (raw HTML),
# so the id also goes on the <details> itself
_ANCHORED_DETAILS = re.compile(r'^[ \t]*<a\s+(?:id|name)="([^"]+)"\s*>\s*</a>[ \t]*\n<details\b', re.MULTILINE)


def _figure_descriptions() -> dict[str, str]:
    """``plot_x`` -> the first sentence of its docstring: what the figure shows (course/plots/)."""
    import inspect
    from importlib import import_module

    from attention_from_scratch.course import plots

    found = {}
    for part in (*plots.PARTS, "heatmaps"):
        for name, fn in inspect.getmembers(import_module(f"{plots.__name__}.{part}"), inspect.isfunction):
            if name.startswith("plot_") and fn.__doc__:
                found[name] = " ".join(fn.__doc__.strip().split("\n\n")[0].split()).replace("``", "")
    return found


def figure_alt_text(code: str, descriptions: dict[str, str]) -> str | None:
    """The alt text of the figure a code cell draws: its plotting function's description (and the title it
    is given, for a generic heatmap), or None when the cell calls no function of course/plots/."""
    calls = [name for name in re.findall(r"\b(plot_\w+)\(", code) if name in descriptions]
    if not calls:
        return None
    title = re.search(r'\btitle="([^"{}]+)"', code)
    return descriptions[calls[-1]] + (f" ({title.group(1)})" if title else "")


def copy_notebook(src: Path, dest: Path) -> None:
    """Copy a stored notebook for the site, adjusting its Markdown.

    A figure drawn by a function of course/plots/ gets that function's description as its alt text. A
    ``../path`` link gets one more ``../`` (the copy sits one folder deeper), and an HTML anchor alone
    on its line becomes a MyST target ``(name)=``, so that links to ``#name`` (from this notebook,
    another one or README) resolve on the site as they do in Jupyter. Above a ``<details>`` block (an
    erratum box) the id also goes on the block, since a target cannot give raw HTML an id.
    """
    nb = json.loads(src.read_text(encoding="utf-8"))
    descriptions = _figure_descriptions()
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and any("image/png" in o.get("data", {}) for o in cell.get("outputs", [])):
            alt = figure_alt_text("".join(cell["source"]), descriptions)
            if alt:  # myst-nb's per-cell image options: alt text that says what the figure shows
                cell.setdefault("metadata", {}).setdefault("mystnb", {})["image"] = {"alt": alt}
        if cell["cell_type"] != "markdown":
            continue
        source = "".join(cell["source"])
        source = _ANCHORED_DETAILS.sub(lambda m: f'({m.group(1)})=\n<details id="{m.group(1)}"', source)
        source = _HTML_ANCHOR.sub(lambda m: f"({m.group(1)})=", source)
        source = _LINK.sub(_deeper_link, source)
        source = _HTML_SRC.sub(
            lambda m: f'{m.group(1)}="../{m.group(2)}"' if m.group(2).startswith("../") else m.group(0), source
        )
        cell["source"] = source
    _write(dest, json.dumps(nb, ensure_ascii=False, indent=1) + "\n")


_README = re.compile(r"(?:\.\./)+README(?:\.zh)?\.md(#\S*)?")


def _deeper_link(match: re.Match) -> str:
    """A notebook's ``../x`` link for its copy one folder deeper, ``../../x``; a link to README (README.zh.md from a
    Chinese notebook) goes to the front page of the notebook's own site, which is that README."""
    target = match.group(1)
    if not target.startswith("../"):
        return match.group(0)
    readme = _README.fullmatch(target)
    return f"](../index.md{readme.group(1) or ''})" if readme else f"](../{target})"


def _md_escape(text: str) -> str:
    """Backslash-escape Markdown's special characters, so quiz text shows as written."""
    return re.sub(r"([\\`*_{}\[\]<>()#+!|$~])", r"\\\1", text)


_QUIZ_INTRO = {
    "en": ("# The quiz\n", "Every question below comes from `attention_from_scratch.course.quiz`, and every answer is "
           "computed by the package when this page is built. Try each one before opening its answer. In Python the "
           "same questions check your answer and explain it:\n", "", "Answer"),
    "zh": ("# 测验\n", "下面每一道题都来自 `attention_from_scratch.course.quiz`，每个答案都在构建本页时由本包现场计算。"
           "先自己试一试，再展开答案。在 Python 里，同样的题目会检查你的答案并给出讲解：\n", ', lang="zh"', "答案"),
}


def quiz_page(lang: str = "en") -> str:
    from attention_from_scratch.course import quiz
    from attention_from_scratch.course.i18n import msg, render
    from attention_from_scratch.course.quiz_notes import show_value  # the answers as the quiz itself prints them

    title, intro, arg, answer = _QUIZ_INTRO[lang]
    parts = [
        title,
        intro,
        f"```python\nfrom attention_from_scratch.course import quiz\n"
        f"print(quiz.ask(\"dot_product\"{arg}))\nprint(quiz.check(\"dot_product\", 17{arg}))\n```\n",
    ]
    for n, qid in enumerate(quiz.question_ids(), start=1):
        lines = quiz.ask(qid, lang=lang).splitlines()
        expected = quiz.answer(qid)
        verdict = quiz.check(qid, expected, lang=lang)
        assert verdict.correct, f"quiz {qid!r}: its own answer is not accepted"
        # the verdict's lines without its "Right." head: the explanation of each option, or of the number
        explanation = str(verdict).removeprefix(render(msg("Right."), lang)).strip()
        parts.append(f"## {n}. `{qid}`\n")
        parts.append("\\\n".join(_md_escape(line.strip()) for line in lines) + "\n")
        lines = explanation.splitlines()
        if lines and all(line.startswith("- ") for line in lines):  # one note per option: the quiz's bullets, a list
            body = "<ul>\n" + "".join(f"<li>{html.escape(line[2:])}</li>\n" for line in lines) + "</ul>"
        else:
            body = f"<p>{'<br>'.join(map(html.escape, lines))}</p>"
        parts.append(
            f"<details><summary>{answer}</summary>\n"
            f"<p><strong>{html.escape(show_value(expected))}</strong></p>\n{body}\n</details>\n"
        )
    return "\n".join(parts)


# The package's three parts (DESIGN.md, "Layout"): the sub-package a module sits in says which it belongs to.
PARTS = (
    ("The concepts", "One module per idea, read as worked examples.", ""),
    ("The capstone model", "A small Transformer with hand-written gradients, its training loop and tasks.", "model"),
    ("The course machinery", "The quiz, the exercises' checkers, student copies, the tour, the figures.", "course"),
)


def _parts(module_names: list[str]) -> list[tuple[str, str, list[str]]]:
    """``(title, description, modules)`` for each part, every module in exactly one."""
    def part(name):
        head = name.split(".")[0]
        return head if head in {sub for *_, sub in PARTS if sub} else ""
    return [(title, text, [m for m in module_names if part(m) == sub]) for title, text, sub in PARTS]


def api_pages(module_names: list[str]) -> dict[str, str]:
    """reStructuredText pages: autodoc writes reST, which a MyST (Markdown) page would show raw."""
    index = ["API reference\n=============\n\nOne page per module, generated from the modules' docstrings, "
             "in the package's three parts.\n"]
    for title, text, members in _parts(module_names):
        index.append(f"\n{title}\n{'-' * len(title)}\n\n{text}\n\n.. toctree::\n   :maxdepth: 1\n\n")
        index.extend(f"   {m}\n" for m in members)
    pages = {"index.rst": "".join(index)}
    for name in module_names:
        title = f"``{name}``"
        page = f"{title}\n{'=' * len(title)}\n\n.. automodule:: attention_from_scratch.{name}\n"
        page += "   :members:\n   :show-inheritance:\n"
        borrowed = reexports(name)
        if borrowed:
            page += f"   :exclude-members: {', '.join(n for n, _ in borrowed)}\n"
            links = ", ".join(f":py:obj:`~{where}.{n}`" for n, where in borrowed)
            page += f"\nAlso importable from this module, and documented where it is defined: {links}.\n"
        pages[f"{name}.rst"] = page
    return pages


def reexports(name: str, package: str = "attention_from_scratch") -> list[tuple[str, str]]:
    """``(name, defining module)`` for each class or function that module ``name`` exports (``__all__``) but
    another module defines.

    A package's page is its front door and documents what it exports; a plain module's page documents only
    what the module defines, and names the rest. Otherwise a class exported by two modules (``model`` and
    ``model.transformer`` both export ``TransformerConfig``) is described twice under its one canonical name,
    and a parallel Sphinx build warns "duplicate object description" whenever the two pages, and not the
    defining one, are read by the same process: a warning that comes and goes with how the pages are shared out.
    """
    module = importlib.import_module(f"{package}.{name}")
    if hasattr(module, "__path__"):  # a package
        return []
    found = []
    for attr in getattr(module, "__all__", ()):
        value = getattr(module, attr)
        if not (inspect.isclass(value) or inspect.isroutine(value)):
            continue  # a value's __module__ is its class's, not where the value was made
        where = value.__module__
        if where != module.__name__ and where.startswith(package + "."):
            found.append((attr, where))
    return found


def generate(docs: Path) -> None:
    """Write every generated page under ``docs`` and remove generated files that no longer have a source."""
    repo = docs.parent
    module_names = modules()
    _write(docs / "index.md", index_page(repo, module_names))
    _write(docs / "quiz.md", quiz_page())
    wanted = {docs / "notebooks" / p.name for p in notebooks(repo)}
    for src in notebooks(repo):
        copy_notebook(src, docs / "notebooks" / src.name)
    pages = api_pages(module_names)
    for name, text in pages.items():
        _write(docs / "api" / name, text)
    wanted |= {docs / "api" / name for name in pages}
    for src in guide_pages(repo):
        name = src.name.lower()  # CHANGELOG.md: reference/changelog.md
        _write(docs / "reference" / name, rewrite_guide(src.read_text(encoding="utf-8"), repo, module_names))
        wanted.add(docs / "reference" / name)
    for folder in ("notebooks", "api", "reference"):
        for stale in (docs / folder).iterdir() if (docs / folder).is_dir() else ():
            if stale not in wanted:
                stale.unlink()


_EN_NOTEBOOK = re.compile(r"\[([^\]]*)\]\((?:\.\./)*(?:notebooks/)?(\d\d_[A-Za-z0-9_]+)\.ipynb(#[^)\s]*)?\)")


def _to_english_page(text: str, up: str, translated: set[str]) -> str:
    """Links to notebooks without a Chinese edition become plain HTML links to the English site's page."""
    def fix(m: re.Match) -> str:
        if m.group(2) in translated and not m.group(0).startswith(f"[{m.group(1)}](../"):
            return m.group(0)
        return f'<a href="{up}notebooks/{m.group(2)}.html{m.group(3) or ""}">{m.group(1)}</a>'
    return _EN_NOTEBOOK.sub(fix, text)


def index_page_zh(repo: Path) -> str:
    """README.zh.md as the Chinese site's front page, then the toctrees (the API reference is the English one)."""
    translated = {p.stem for p in notebooks(repo, "zh")}
    text = (repo / "README.zh.md").read_text(encoding="utf-8")
    text = re.sub(r"^\[English\]\(README\.md\) · 中文$", "", text, flags=re.MULTILINE)  # the switch says it
    # a link into the English README (its errata index, its benchmarks) goes to the English site's front page
    text = re.sub(r"\[([^\]]+)\]\(README\.md(#[^)\s]*)?\)", lambda m: f'<a href="../index.html{m.group(2) or ""}">'
                  f"{m.group(1)}</a>", text)
    text = _to_english_page(text.replace("](notebooks/zh/", "](notebooks/"), "../", translated)
    # the reference pages are English only: links to docs/guide/X.md go to the English site's page
    text = re.sub(r"\[([^\]]*)\]\((?:" + GUIDE + r"/)?([a-z_]+|CHANGELOG)\.md(#[^)\s]*)?\)",
                  lambda m: f'<a href="../reference/{m.group(2).lower()}.html{m.group(3) or ""}">{m.group(1)}</a>',
                  text)
    text = _LINK.sub(lambda m: f"](../../{m.group(1)})" if _is_relative(m.group(1)) and not
                     m.group(1).startswith("notebooks/") else m.group(0), text)
    return text + (
        "\nAPI 参考（英文，由模块的文档字符串生成）：<a href=\"../api/index.html\">API reference</a>。\n"
        + course_toctrees(repo, "zh")
        + "\n```{toctree}\n:caption: 参考\n:maxdepth: 1\n\nquiz\n```\n"
    )


def generate_zh(site: Path) -> None:
    """Write the Chinese site's generated pages under ``site`` (docs/zh/), removing stale copies."""
    repo = site.parents[1]
    _write(site / "index.md", index_page_zh(repo))
    _write(site / "quiz.md", quiz_page("zh"))
    wanted = {site / "notebooks" / p.name for p in notebooks(repo, "zh")}
    translated = {p.stem for p in notebooks(repo, "zh")}
    for src in notebooks(repo, "zh"):
        nb = json.loads(src.read_text(encoding="utf-8"))
        for cell in nb["cells"]:  # a link to an untranslated notebook (../NN_x.ipynb) goes to the English page
            if cell["cell_type"] == "markdown":
                cell["source"] = _to_english_page("".join(cell["source"]), "../../", translated)
        _write(site / "notebooks" / f".{src.name}", json.dumps(nb, ensure_ascii=False, indent=1) + "\n")
        copy_notebook(site / "notebooks" / f".{src.name}", site / "notebooks" / src.name)
        (site / "notebooks" / f".{src.name}").unlink()
    (site / "notebooks").mkdir(exist_ok=True)
    for stale in (site / "notebooks").iterdir():
        if stale not in wanted:
            stale.unlink()
