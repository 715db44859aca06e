"""Build the Chinese notebooks from the English ones and their per-cell catalogs; report what is stale.

    python tools/build_translations.py            # build notebooks/zh/*.ipynb; list missing/stale cells
    python tools/build_translations.py --check    # build nothing; exit 1 if a built notebook would change
    python tools/build_translations.py --update 03_scaling_by_sqrt_dk   # refresh that catalog (see below)
    python tools/build_translations.py --replies 04_softmax   # record its check cells' Chinese replies

English is the source of truth. ``translations/zh/NN_topic.md`` is the catalog of notebook
``notebooks/NN_topic.ipynb``: one section per markdown cell, headed by a comment that names the cell's
nbformat id and the SHA-256 (first 16 hex digits) of the English source it translates::

    <!-- cell c03 en:5f1c0e8a9b2d4c71 -->
    中文的 Markdown……

A catalog covers a notebook completely or it is wrong: the notebook ``notebooks/zh/NN_topic.ipynb`` is
the English notebook with each markdown cell's source replaced by its Chinese text -- code cells, their
outputs, every cell's id and metadata and the notebook's metadata are copied unchanged, but for the
outputs of the check cells (:data:`CHECK_CALL`: the exercises' checkers, the short answers, the quiz,
notebook 13's capstone check, notebook 00's list of the routes), whose replies the learner reads: those are the
Chinese notebook's own, recorded by running it where its kernel speaks Chinese (``--replies``, below) in
``translations/zh/replies/NN_topic.json``, each with the hash of the English cell (source and outputs) it
answers for. A check cell whose English changed since its
reply was recorded is reported like a stale translation. A markdown cell
is *missing* when no section of the catalog carries its English hash, and *stale* when the section
with its id translates an older English text (or is flagged ``todo``/``stale``). Any missing or stale
cell stops the build of that notebook and is reported by notebook and cell id; tests/test_translations.py
fails on the same report. A notebook without a catalog is "not yet translated" (README.zh.md lists them).

It also rewrites README.zh.md's two generated lists (between ``<!-- notebooks -->`` and
``<!-- untranslated -->`` and their closing tags): the Chinese notebooks and those not yet translated.

The notebooks of ``notebooks/next/`` (chapters not yet numbered) are translated the same way: the stem of
``notebooks/next/topic.ipynb`` is ``next/topic``, its catalog ``translations/zh/topic.md``, and its Chinese
notebook ``notebooks/zh/next/topic.ipynb``.

Relative links are rewritten for the folder one level deeper: ``../x`` becomes ``../../x``, a link to a
notebook that has a Chinese edition points to it, one that has none points to the English
(``../NN_x.ipynb``), and ``README.md`` becomes ``README.zh.md``.

After changing a check cell or what its checker says, run ``--replies NN_topic`` (or ``--replies all``): the
built Chinese notebook is executed top to bottom in ``notebooks/zh/`` (its kernel replies in Chinese there:
``course/i18n.py``), and its check cells' outputs are recorded.

After editing an English markdown cell, run ``--update NN_topic``: every changed cell's section is
flagged ``stale`` under its new hash, with the English diff (old -> new, read from git history)
printed; every new cell gets a section holding its English text, flagged ``todo``. Translate, delete
the flag word, and run the build again.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import hashlib
import itertools
import json
import os
import posixpath
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

from attention_from_scratch.course.i18n import ENV_VAR  # the course-wide language, which a kernel inherits

REPO = Path(__file__).resolve().parents[1]
LANGS = ("zh",)
_HEADER = re.compile(r"^<!-- cell (\S+) en:([0-9a-f]{16})(?: (todo|stale))? -->[ \t]*$", re.MULTILINE)
_LINK = re.compile(r"(\]\(|(?:src|href)=\")([^)\s\"]+)")
# a code cell whose outputs are a checker's reply to the learner (or notebook 00's list of the routes, printed in
# the learner's language): recorded in the Chinese notebook's own run
CHECK_CALL = re.compile(r"check_answer\(|exercises\.check\(|quiz\.check\(|check_capstone_exercise\("
                        r"|parts\.route_text\(")


# A line break inside a paragraph renders as a space: between two Chinese characters, or beside full-width
# punctuation, that is a stray gap (browsers other than Firefox keep it). The catalogs break lines only where a
# space belongs: beside Latin text, a number, code or math.
_FULL_WIDTH_PUNCT = "\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65"  # 。，、：；（）《》…
_WIDE = "\u3400-\u4dbf\u4e00-\u9fff\u2014\u2026\u201c\u201d" + _FULL_WIDTH_PUNCT  # ideographs, —, …, “ ”
_WIDE_CHAR = re.compile(f"[{_WIDE}]")
_FULL_WIDTH = re.compile(f"[{_FULL_WIDTH_PUNCT}]")
_BLOCK_START = re.compile(r"\s*([-*+>|]\s|#|\d+[.)]\s|<|\$\$|```)")


def stray_spaces(text: str) -> list[str]:
    """The soft line breaks of Markdown ``text`` that a browser shows as a stray space in Chinese: between two
    wide characters, or beside full-width punctuation, inside a paragraph (not in a code fence, a heading or a
    table row, and not before a line that starts a block: a list item, a heading, a table row, HTML, ``$$``)."""
    found, fence = [], False
    for line, nxt in itertools.pairwise(text.split("\n")):
        fence ^= line.lstrip().startswith("```")
        starts_block = _BLOCK_START.match(line) and not re.match(r"\s*([-*+]|\d+[.)])\s", line)  # a list item's
        if fence or not line.strip() or not nxt.strip() or _BLOCK_START.match(nxt) or starts_block \
                or line.rstrip().endswith("$$"):  # text goes on; a heading, a table row, HTML does not
            continue
        a, b = line.rstrip()[-1], nxt.lstrip()[0]
        if (_WIDE_CHAR.match(a) and _WIDE_CHAR.match(b)) or _FULL_WIDTH.match(a) or _FULL_WIDTH.match(b):
            found.append(f"{line.rstrip()[-12:]}⏎{nxt.lstrip()[:12]}")
    return found


def english_hash(source: str) -> str:
    """The first 16 hex digits of the SHA-256 of a cell's English source (UTF-8)."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]


def cell_source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


@dataclass
class Section:
    cell_id: str
    en: str
    flag: str | None
    text: str


@dataclass
class Report:
    """What is wrong with one notebook's translation: ``missing`` and ``stale`` cell ids, unused sections."""

    notebook: str
    missing: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)  # check cells without a current Chinese reply
    unused_replies: list[str] = field(default_factory=list)  # recorded replies of cells that are gone

    @property
    def ok(self) -> bool:
        return not (self.missing or self.stale or self.replies)

    def lines(self) -> list[str]:
        out = [f"{self.notebook}: cell {c} has no translation (missing)" for c in self.missing]
        out += [f"{self.notebook}: cell {c}'s translation is stale (its English changed)" for c in self.stale]
        out += [f"{self.notebook}: check cell {c} has no Chinese reply for its current English (run "
                f"python tools/build_translations.py --replies {self.notebook.removesuffix('.ipynb')})"
                for c in self.replies]
        out += [f"{self.notebook}: the recorded reply of cell {c} answers no current check cell (unused)"
                for c in self.unused_replies]
        out += [f"{self.notebook}: catalog section {c} translates no current cell (unused)" for c in self.unused]
        return out


def parse_catalog(text: str) -> list[Section]:
    """The sections of a catalog file, in order (text between one header and the next, stripped)."""
    heads = list(_HEADER.finditer(text))
    if text[: heads[0].start() if heads else len(text)].strip():
        raise ValueError("a catalog starts with a '<!-- cell ID en:HASH -->' header")
    sections = []
    for i, h in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        sections.append(Section(h.group(1), h.group(2), h.group(3), text[h.end():end].strip("\n")))
    return sections


def format_catalog(sections: list[Section]) -> str:
    parts = []
    for s in sections:
        flag = f" {s.flag}" if s.flag else ""
        parts.append(f"<!-- cell {s.cell_id} en:{s.en}{flag} -->\n{s.text}\n")
    return "\n".join(parts)


NEXT = "next"  # notebooks/next/: chapters not yet numbered, translated like the others


def catalog_path(stem: str, lang: str = "zh") -> Path:
    """``translations/<lang>/NN_topic.md``; a ``next/topic`` stem's is ``translations/<lang>/topic.md``."""
    return REPO / "translations" / lang / f"{posixpath.basename(stem)}.md"


def notebook_stem(path: Path, root: Path) -> str:
    """``NN_topic`` or ``next/topic``: the notebook's path below ``root``, without ``.ipynb``."""
    return path.relative_to(root).with_suffix("").as_posix()


def english_notebooks() -> list[Path]:
    folder = REPO / "notebooks"
    return sorted(folder.glob("*.ipynb")) + sorted((folder / NEXT).glob("*.ipynb"))


def translated_stems(lang: str = "zh") -> list[str]:
    """The notebooks that have a catalog (the Chinese edition), in course order (``next/`` last)."""
    catalogs = REPO / "translations" / lang
    numbered = sorted(p.stem for p in catalogs.glob("[0-9][0-9]_*.md"))
    later = sorted(f"{NEXT}/{p.stem}" for p in (REPO / "notebooks" / NEXT).glob("*.ipynb")
                   if (catalogs / f"{p.stem}.md").exists())
    return numbered + later


def untranslated_stems(lang: str = "zh") -> list[str]:
    done = set(translated_stems(lang))
    stems = [notebook_stem(p, REPO / "notebooks") for p in english_notebooks()]
    return [stem for stem in stems if stem not in done]


def _markdown_cells(nb: dict):
    return [c for c in nb["cells"] if c["cell_type"] == "markdown"]


def check_catalog(stem: str, nb: dict, sections: list[Section]) -> Report:
    report = Report(f"{stem}.ipynb")
    valid = {s.en for s in sections if not s.flag}
    by_id = {s.cell_id for s in sections}
    used = set()
    for cell in _markdown_cells(nb):
        h = english_hash(cell_source(cell))
        if h in valid:
            used.add(h)
        elif cell["id"] in by_id:
            report.stale.append(cell["id"])
        else:
            report.missing.append(cell["id"])
    current_ids = {c["id"] for c in _markdown_cells(nb)}
    report.unused = [s.cell_id for s in sections
                     if not s.flag and s.en not in used and s.cell_id not in current_ids]
    return report


def check_cells(nb: dict) -> list[dict]:
    """The code cells whose outputs are a checker's reply (:data:`CHECK_CALL`)."""
    return [c for c in nb["cells"] if c["cell_type"] == "code" and CHECK_CALL.search(cell_source(c))]


def _output_text(output: dict) -> str:
    """An output's text: a stream's, or the plain-text form of a result or a display."""
    text = output.get("text") if "text" in output else output.get("data", {}).get("text/plain", "")
    return "".join(text) if isinstance(text, list) else text or ""


@functools.cache  # read once per run: every check cell's key needs it
def catalog_digest(lang: str = "zh") -> str:
    """A hash of ``lang``'s message catalogs (``translations/<lang>/messages/*.json``), which replies render from."""
    files = sorted((REPO / "translations" / lang / "messages").glob("*.json"))
    return english_hash("".join(f"{p.name}\n{p.read_text(encoding='utf-8')}" for p in files))


def reply_key(cell: dict, lang: str = "zh") -> str:
    """What a recorded reply answers for (16 hex digits): the English check cell's source, the kind and text of
    its outputs (not their execution counts or metadata), and the message catalogs the reply was rendered from:
    a changed checker message makes every reply stale, to be recorded again."""
    outputs = [(o.get("output_type"), o.get("name"), _output_text(o)) for o in cell.get("outputs", [])]
    return english_hash(json.dumps([cell_source(cell), outputs, catalog_digest(lang)], ensure_ascii=False))


def replies_path(stem: str, lang: str = "zh") -> Path:
    return REPO / "translations" / lang / "replies" / f"{stem}.json"


def load_replies(stem: str, lang: str = "zh") -> dict:
    """cell id -> {"en": reply_key of the English cell, "outputs": the Chinese run's outputs} ({} if none)."""
    path = replies_path(stem, lang)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def check_replies(nb: dict, replies: dict, report: Report, lang: str = "zh") -> None:
    """Add to ``report`` every check cell of ``nb`` without a reply recorded for its current English (and
    catalogs), and every recorded reply whose cell is no longer a check cell of ``nb``."""
    cells = check_cells(nb)
    report.replies = [c["id"] for c in cells if replies.get(c["id"], {}).get("en") != reply_key(c, lang)]
    report.unused_replies = sorted(set(replies) - {c["id"] for c in cells})


def _fix_links(text: str, translated: set[str], folder: str = "") -> str:
    """Links of a notebook in ``notebooks/<folder>``, rewritten for its Chinese edition in ``notebooks/zh/<folder>``."""
    here, there = posixpath.join("notebooks", folder), posixpath.join("notebooks", "zh", folder)

    def fix(m: re.Match) -> str:
        target = m.group(2)
        if re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", target):
            return m.group(0)
        path, _, anchor = target.partition("#")
        anchor = f"#{anchor}" if anchor else ""
        rel = posixpath.relpath(posixpath.normpath(posixpath.join(here, path)), "notebooks")  # below notebooks/
        if rel.startswith("../"):  # outside notebooks/: one folder further up
            path = posixpath.relpath(posixpath.join("notebooks", rel), there)
            path = path.replace("README.md", "README.zh.md") if path.endswith("README.md") else path
        elif path.endswith(".ipynb"):  # a notebook: its Chinese edition, else the English
            chinese = rel.removesuffix(".ipynb") in translated
            path = posixpath.relpath(posixpath.join("notebooks", "zh" if chinese else "", rel), there)
        return f"{m.group(1)}{path}{anchor}"

    return _LINK.sub(fix, text)


def build_notebook(nb: dict, sections: list[Section], translated: set[str], folder: str = "",
                   replies: dict | None = None) -> dict:
    """The Chinese notebook: ``nb`` with each markdown cell's source replaced and each check cell's outputs
    replaced by its recorded Chinese reply where ``replies`` has one (everything else copied); ``folder``:
    where it sits below ``notebooks/`` (``""`` or ``"next"``), for its links."""
    text = {s.en: s.text for s in sections if not s.flag}
    out = json.loads(json.dumps(nb))
    for cell in out["cells"]:
        if cell["cell_type"] == "markdown":
            zh = _fix_links(text[english_hash(cell_source(cell))], translated, folder)
            cell["source"] = zh.splitlines(keepends=True)
    for cell in check_cells(out):
        if cell["id"] in (replies or {}):
            cell["outputs"] = json.loads(json.dumps(replies[cell["id"]]["outputs"]))
    return out


def dumps(nb: dict) -> str:
    """The layout tools/execute_notebooks.py writes (indent 1, UTF-8 kept), so diffs stay small."""
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def build_all(lang: str = "zh", write: bool = True):
    """Build every translated notebook. Returns (reports, {stem: built text}, [stems whose file differs])."""
    translated = set(translated_stems(lang))
    reports, built, changed = [], {}, []
    for stem in sorted(translated):
        english = REPO / "notebooks" / f"{stem}.ipynb"
        if not english.exists():
            reports.append(Report(f"{stem}.ipynb", missing=["(the English notebook is gone)"]))
            continue
        nb = load(english)
        sections = parse_catalog(catalog_path(stem, lang).read_text(encoding="utf-8"))
        report, replies = check_catalog(stem, nb, sections), load_replies(stem, lang)
        check_replies(nb, replies, report, lang)
        reports.append(report)
        if not report.ok:
            continue
        built[stem] = dumps(build_notebook(nb, sections, translated, posixpath.dirname(stem), replies))
        target = REPO / "notebooks" / lang / f"{stem}.ipynb"
        if not target.exists() or target.read_text(encoding="utf-8") != built[stem]:
            changed.append(stem)
            if write:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(built[stem], encoding="utf-8")
    return reports, built, changed


def record_replies(stem: str, lang: str = "zh") -> int:
    """Run the built ``lang`` notebook of ``stem`` top to bottom beside the others of its language (where its
    kernel replies in ``lang``) and record its check cells' outputs, keyed by the English cells they answer
    for, in :func:`replies_path`. Returns how many were recorded."""
    from execute_notebooks import execute  # tools/; nbclient and a kernel are needed only here

    nb = load(REPO / "notebooks" / f"{stem}.ipynb")
    sections = parse_catalog(catalog_path(stem, lang).read_text(encoding="utf-8"))
    report = check_catalog(stem, nb, sections)
    if not report.ok:
        raise SystemExit("\n".join(report.lines()) + "\nfix the translation before recording its replies")
    run = REPO / "notebooks" / lang / posixpath.dirname(stem) / f".replies-{posixpath.basename(stem)}.ipynb"
    run.parent.mkdir(parents=True, exist_ok=True)
    run.write_text(dumps(build_notebook(nb, sections, set(translated_stems(lang)), posixpath.dirname(stem))),
                   encoding="utf-8")
    try:  # the kernel inherits the language, whatever the folder or the shell says
        with mock.patch.dict(os.environ, {ENV_VAR: lang}):
            execute(run)
        ran = {c["id"]: c for c in load(run)["cells"]}
    finally:
        run.unlink(missing_ok=True)
    replies = {c["id"]: {"en": reply_key(c, lang), "outputs": ran[c["id"]]["outputs"]} for c in check_cells(nb)}
    path = replies_path(stem, lang)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(replies, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return len(replies)


def readme_text(text: str, built: dict[str, str], lang: str = "zh") -> str:
    """README.zh.md with its two generated lists: the Chinese notebooks (their titles, grouped by the course's
    parts, ``course/parts.py``) and the untranslated ones. The staged notebooks of ``notebooks/next/`` are in
    neither: like the English ones, they are on the site only once the course is renumbered."""
    from attention_from_scratch.course.parts import group  # the course's parts, in teaching order

    rows = []
    for (_, caption), stems in group(sorted(stem for stem in built if "/" not in stem)):
        rows.append(f"\n**{caption}**\n" if rows else f"**{caption}**\n")
        for stem in stems:
            first = cell_source(json.loads(built[stem])["cells"][0]).strip().splitlines()[0]
            rows.append(f"- [{first.lstrip('# ').strip()}](notebooks/{lang}/{stem}.ipynb)")
    todo = [f"- `{stem}`: [English](notebooks/{stem}.ipynb)" for stem in untranslated_stems(lang)
            if "/" not in stem] or ["- (none)"]
    for tag, lines in (("notebooks", rows), ("untranslated", todo)):
        block = f"<!-- {tag} -->\n" + "\n".join(lines) + f"\n<!-- /{tag} -->"
        text = re.sub(rf"<!-- {tag} -->\n.*?<!-- /{tag} -->", lambda _m, b=block: b, text, flags=re.DOTALL)
    return text


def _old_english(stem: str, cell_id: str, en: str) -> str | None:
    """The English source of ``cell_id`` whose hash is ``en``, from the notebook's git history."""
    rel = f"notebooks/{stem}.ipynb"
    try:
        commits = subprocess.run(["git", "-C", str(REPO), "log", "--format=%H", "--all", "--", rel],
                                 capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return None
    for commit in commits:
        shown = subprocess.run(["git", "-C", str(REPO), "show", f"{commit}:{rel}"], capture_output=True, text=True)
        if shown.returncode:
            continue
        for cell in _markdown_cells(json.loads(shown.stdout)):
            src = cell_source(cell)
            if english_hash(src) == en:
                return src
    return None


def update_catalog(stem: str, lang: str = "zh") -> list[str]:
    """Rewrite ``stem``'s catalog in the English cell order, flagging changed and new cells; print diffs."""
    nb = load(REPO / "notebooks" / f"{stem}.ipynb")
    path = catalog_path(stem, lang)
    old = parse_catalog(path.read_text(encoding="utf-8")) if path.exists() else []
    by_hash = {s.en: s for s in old if not s.flag}
    by_id = {s.cell_id: s for s in old}
    new, notes = [], []
    for cell in _markdown_cells(nb):
        src, cid = cell_source(cell), cell["id"]
        h = english_hash(src)
        if h in by_hash:
            s = by_hash[h]
            new.append(Section(cid, h, None, s.text))
        elif cid in by_id:
            s = by_id[cid]
            was = _old_english(stem, cid, s.en)
            diff = ("\n".join(difflib.unified_diff((was or "").splitlines(), src.splitlines(), "old English",
                                                   "new English", lineterm="")) if was is not None
                    else "(the old English is not in git history)")
            notes.append(f"--- {stem} cell {cid}: stale\n{diff}")
            new.append(Section(cid, h, "stale", s.text))
        else:
            notes.append(f"--- {stem} cell {cid}: new (English copied, flagged todo)")
            new.append(Section(cid, h, "todo", src))
    kept, ids = {x.en for x in new}, {c["id"] for c in _markdown_cells(nb)}
    for x in old:  # a section no cell uses any more: show its Chinese, a new cell may reuse it
        if x.en not in kept and x.cell_id not in ids:
            notes.append(f"--- {stem} section {x.cell_id}: dropped (no cell has its id or English); its text was:\n"
                         f"{x.text}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(format_catalog(new), encoding="utf-8")
    return notes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; fail if a built notebook differs")
    parser.add_argument("--update", nargs="+", metavar="NN_topic",
                        help="refresh these catalogs (03_scaling_by_sqrt_dk, 11_transformer_block; see --help)")
    parser.add_argument("--replies", nargs="+", metavar="NN_topic",
                        help="run these Chinese notebooks (or 'all') and record their check cells' replies, then build")
    parser.add_argument("--lang", default="zh", choices=LANGS)
    args = parser.parse_args(argv)
    if args.replies and args.check:
        parser.error("--replies writes the replies it records: it cannot be combined with --check")
    for stem in (translated_stems(args.lang) if args.replies == ["all"] else args.replies or []):
        stem = stem.removeprefix("notebooks/").removesuffix(".ipynb")
        print(f"{stem}: {record_replies(stem, args.lang)} check cells' replies recorded", flush=True)
    if args.update:
        for stem in args.update:
            for note in update_catalog(stem.removeprefix("notebooks/").removesuffix(".ipynb"), args.lang):
                print(note)
        return 0
    reports, built, changed = build_all(args.lang, write=not args.check)
    problems = [line for r in reports for line in r.lines()]
    for line in problems:
        print(line)
    for stem in changed:
        if not stem.startswith("README"):
            print(f"notebooks/{args.lang}/{stem}.ipynb {'differs from its build' if args.check else 'written'}")
    readme = REPO / f"README.{args.lang}.md"
    if readme.exists() and not any(not r.ok for r in reports):
        new = readme_text(readme.read_text(encoding="utf-8"), built, args.lang)
        if new != readme.read_text(encoding="utf-8"):
            changed.append(readme.name)
            print(f"{readme.name}'s notebook lists {'are out of date' if args.check else 'rewritten'}")
            if not args.check:
                readme.write_text(new, encoding="utf-8")
    chinese = REPO / "notebooks" / args.lang
    stray = sorted(notebook_stem(p, chinese) for p in [*chinese.glob("*.ipynb"), *(chinese / NEXT).glob("*.ipynb")]
                   if notebook_stem(p, chinese) not in translated_stems(args.lang))
    for stem in stray:
        print(f"notebooks/{args.lang}/{stem}.ipynb has no catalog: delete it")
    print(f"{len(built)} notebooks built; not yet translated: {', '.join(untranslated_stems(args.lang)) or 'none'}")
    return 1 if any(not r.ok for r in reports) or stray or (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
