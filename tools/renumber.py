"""Put the course in teaching order: move every notebook to its new name and rewrite every reference to it.

    python tools/renumber.py --dry-run     # print every move and every rewritten reference; change nothing
    python tools/renumber.py --apply       # do it (git mv, rewrite, rebuild the Chinese notebooks)

The table is ``attention_from_scratch.course.parts.COURSE`` (source name -> new stem, part), the one place
the order lives; the site's table of contents, README's course map and notebook 00 read it too. A row
whose source is absent (a notebook not written yet) is skipped with a note.

What it does, in one pass over the tracked text files (cell sources only in notebooks: outputs come back
when the notebooks are re-executed; notebooks/zh/ is rebuilt, not rewritten):

* moves ``notebooks/<source>.ipynb``, its catalog ``translations/zh/<source>.md`` and every figure
  ``figures/NN_*.png`` (its new prefix is the new number of the notebook whose cells name it, else of the
  notebook NN) with ``git mv``; a notebook moved out of notebooks/next/ gets its relative links fixed;
* rewrites, simultaneously (so 09 -> 15 is never rewritten again): notebook stems (``09_kv_cache``,
  ``next/transformer_block``), figure file names, short-answer ids (``"08.1"``), headings and link titles
  (``09 · The KV cache``), prose (``notebook 13``, ``Notebooks 18's``, ``notebooks 13 and 14``,
  ``notebooks 01–08``, ``13 cell 12``, ``第 13 课``, ``第 09、10 课``, ``第 01–08 课``);
* writes each notebook's last "Next" line (English and Chinese) from the table, with "End of part N" at a
  part's end;
* refreshes the Chinese catalogs: a section that translated the old English cell is rewritten with the same
  map and given the new cell's hash, so a cell whose only change is the renumbering stays translated;
* prints the notebooks to re-execute.

It refuses (exit status 1, changing nothing) when it meets a reference it cannot classify -- a number after
"notebook" or before "课" that no rule took, a range whose new numbers are not a range, a ``NN_name`` that is
neither a notebook nor a figure -- and prints each, file and line, so they are fixed by hand first.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

from attention_from_scratch.course.parts import COURSE, PARTS, title  # noqa: E402

# files never rewritten: the table itself, this tool and its test (they must keep the old names), the built
# Chinese notebooks (rebuilt from the English ones) and binary or generated data
SKIP = ("attention_from_scratch/course/parts.py", "tools/renumber.py", "tests/test_renumber.py")
SKIP_DIRS = ("notebooks/zh/", "figures/", "docs/_build", "docs/notebooks/", "docs/zh/notebooks/")
TEXT = (".py", ".md", ".ipynb", ".json", ".txt", ".toml", ".cfg", ".yml", ".yaml", ".rst", ".in", ".html", "")

NUM = r"\d{1,2}(?:\s\([^()\n]{1,60}\))?"  # a number, perhaps with a gloss: 09 (the KV cache)
SEP = r"(?:\s*,\s*|\s+and\s+|\s+or\s+|\s*[–-]\s*|\s+to\s+)"
SEP_ZH = r"(?:\s*[、，,]\s*|\s*[–-]\s*|\s*(?:和|与|及|至|到)\s*)"
RANGE = re.compile(r"^\s*(?:[–-]|to|至|到)\s*$")

# Sentences no rule can renumber (a range whose new numbers are not a range; a list with no "notebook" before
# it): their rewriting, by hand, as literal text. One that no longer occurs is simply unused.
OVERRIDES = {
    "notebooks 09-13 (KV cache, RoPE, MLA, FlashAttention)": "notebooks 15-18 (KV cache, RoPE, MLA, FlashAttention)",
    "notebooks 15-16 (recommender, InfoNCE, dot vs additive saturation)":
        "notebooks 24 and 09 (recommender, InfoNCE, dot vs additive saturation)",
    "Figures of notebooks 15-16:": "Figures of notebooks 24 and 09:",
    "Figures of notebooks 09-13:": "Figures of notebooks 15-18:",
    "efficient inference, notebooks 09-14:": "efficient inference, notebooks 15-21:",
    "learning, notebooks 15-19:": "learning, notebooks 09, 12, 13, 24 and 25:",
    ":mod:`.inference` (09-14),\n:mod:`.learning` (15-19)":
        ":mod:`.inference` (15-21),\n:mod:`.learning` (09, 12, 13, 24, 25)",
    "`inference.py`: 09–13, `sparse.py`: 12, `serving.py`: 14, `applications.py`: 15–16, `capstone.py`: 19":
        "`inference.py`: 15–18, `sparse.py`: 21, `serving.py`: 19–20, `applications.py`: 24 and 09, `capstone.py`: 13",
    "Notebooks 04–19 each have a **Write it yourself** section before their recap (except 05, 16 and 17)":
        "Notebooks 04–25 each have a **Write it yourself** section before their recap (except 05, 09 and 25)",
}


MAP_START = "<!-- course map: tools/renumber.py --maps writes it from course/parts.py -->"
MAP_END = "<!-- /course map -->"


class Unclassified(Exception):
    pass


@dataclass
class Plan:
    """The renumbering worked out for one tree: maps, moves, and what could not be classified."""

    root: Path
    numbers: dict[str, str] = field(default_factory=dict)  # old two-digit number -> new
    stems: dict[str, str] = field(default_factory=dict)  # old stem or next/name -> new stem
    figures: dict[str, str] = field(default_factory=dict)  # old figure file name -> new
    answers: dict[str, str] = field(default_factory=dict)  # old short-answer id -> new
    moves: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    changed: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (old text, new text)
    reexecute: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------- the maps

def tracked(root: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout
    return [p for p in out.splitlines() if (root / p).is_file()]


def build_maps(root: Path, rows=COURSE) -> Plan:
    plan = Plan(root)
    files = tracked(root)
    for nb in rows:
        src = root / "notebooks" / f"{nb.source}.ipynb"
        if not src.exists():
            plan.notes.append(f"skipped: notebooks/{nb.source}.ipynb does not exist (-> {nb.stem})")
            continue
        plan.stems[nb.source] = nb.stem
        if re.match(r"\d\d_", nb.source):
            plan.numbers[nb.source[:2]] = nb.number
        if nb.source != nb.stem:
            plan.moves.append((f"notebooks/{nb.source}.ipynb", f"notebooks/{nb.stem}.ipynb"))
            base = nb.source.split("/")[-1]
            cat = f"translations/zh/{base}.md"
            if (root / cat).exists():
                plan.moves.append((cat, f"translations/zh/{nb.stem}.md"))
    # who names a figure or an answer id: the notebook whose cells do decides its new number
    owners: dict[str, str] = {}
    for nb in rows:
        if nb.source not in plan.stems:
            continue
        for cell in load(root / "notebooks" / f"{nb.source}.ipynb")["cells"]:
            text = source(cell)
            for name in re.findall(r"\b(\d\d_\w+\.png)", text):
                owners.setdefault(name, nb.number)
            for aid in re.findall(r"check_answer\(\s*\\?[\"'](\d\d\.\d+)", text):
                owners.setdefault(aid, nb.number)
    for path in files:
        m = re.fullmatch(r"figures/(\d\d)_(.+\.png)", path)
        if m and m.group(1) in plan.numbers:
            name = f"{m.group(1)}_{m.group(2)}"
            new = f"{owners.get(name, plan.numbers[m.group(1)])}_{m.group(2)}"
            if name not in owners:
                plan.notes.append(f"figure {name}: no notebook names it; numbered by its prefix -> {new}")
            plan.figures[name] = new
            if new != name:
                plan.moves.append((path, f"figures/{new}"))
    for aid, number in owners.items():
        if re.fullmatch(r"\d\d\.\d+", aid):
            plan.answers[aid] = f"{number}.{aid.split('.')[1]}"
    return plan


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def source(cell: dict) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else s


def dumps(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


# ------------------------------------------------------------------------------------------ the rewriting

def _num(plan: Plan, n: str, where: str) -> str:
    key = n.zfill(2)
    if key not in plan.numbers:
        raise Unclassified(f"{where}: {n!r} is not the number of a notebook")
    return plan.numbers[key]


def _number_list(plan: Plan, text: str, where: str, sep: str) -> str:
    """Map every number of ``12, 13 and 14`` / ``01–08`` / ``09 (the KV cache) and 13 (FlashAttention)``
    (numbers inside a parenthesis are a gloss's, left alone); a range must stay a range."""
    tokens = [m for m in re.finditer(r"\d{1,2}", text) if text[:m.start()].count("(") == text[:m.start()].count(")")]
    news = [_num(plan, m.group(0), where) for m in tokens]
    for k in range(1, len(tokens)):
        between = re.sub(r"\([^()]*\)", "", text[tokens[k - 1].end():tokens[k].start()])
        if RANGE.match(between):
            olds = range(int(tokens[k - 1].group(0)), int(tokens[k].group(0)) + 1)
            mapped = sorted(int(_num(plan, f"{o:02d}", where)) for o in olds)
            if mapped != list(range(int(news[k - 1]), int(news[k]) + 1)):
                raise Unclassified(f"{where}: the range {text!r} is not a range after renumbering ({mapped})")
    for m, new in zip(reversed(tokens), reversed(news), strict=True):
        text = text[:m.start()] + new + text[m.end():]
    return text


def _figure_prefix(plan: Plan, prefix: str) -> str:
    """A quoted ``"12_recall"`` that only starts a name: the new number of every figure it starts, if one."""
    if prefix in plan.stems or prefix in plan.figures:
        return plan.stems.get(prefix) or plan.figures[prefix]
    news = {plan.figures[f][:2] for f in plan.figures if f.startswith(prefix)}
    news |= {plan.stems[s][:2] for s in plan.stems if s.startswith(prefix)}
    if not news:
        plan.notes.append(f"{prefix!r} names no notebook or figure; left as it is")
        return prefix
    if len(news) > 1:
        raise Unclassified(f"{prefix!r} starts names of several notebooks ({sorted(news)})")
    return news.pop() + prefix[2:]


def rules(plan: Plan) -> list[tuple[str, object]]:
    """(pattern, replacement function) pairs; all are applied in ONE simultaneous pass."""
    nn = "|".join(sorted(plan.numbers, key=len, reverse=True)) or "(?!)"
    stems = sorted((s for s in plan.stems if plan.stems[s] != s), key=len, reverse=True)
    out: list[tuple[str, object]] = []
    if OVERRIDES:
        literal = "|".join(map(re.escape, sorted(OVERRIDES, key=len, reverse=True)))
        out.append((literal, lambda m: OVERRIDES[m.group(0)]))
    if stems:
        def stem_of(key):
            return plan.stems[key if key in plan.stems else f"next/{key}"]
        numbered = "|".join(re.escape(s) for s in stems if not s.startswith("next/")) or "(?!)"
        named = "|".join(re.escape(s.removeprefix("next/")) for s in stems if s.startswith("next/")) or "(?!)"
        # a numbered stem alone (09_kv_cache); a notebook of next/ only with its folder (next/notation) or as
        # a file name (notation.ipynb): a bare word like "notation" is prose
        out.append((rf"(?<![\w])()({numbered})(?![\w])|(?<![\w])((?:notebooks/)?next/)({named})(?![\w])"
                    rf"|(?<![\w/])()({named})(?=\.ipynb)",
                    lambda m: ("notebooks/" if (m.group(3) or "").startswith("notebooks/") else "")
                    + stem_of(m.group(2) or m.group(4) or m.group(6))))
    figs = [f for f in plan.figures if plan.figures[f] != f]
    if figs:
        out.append((rf"(?<![\w])({'|'.join(map(re.escape, sorted(figs, key=len, reverse=True)))})",
                    lambda m: plan.figures[m.group(1)]))
    out.append((rf"(?<=[\"'])(?:{nn})_\w*(?=[\"'])", lambda m: _figure_prefix(plan, m.group(0))))
    out.append((rf"(?<=[\"'])(?:{nn})\.\d+(?=\\?[\"'])", lambda m: plan.answers.get(m.group(0), m.group(0))))
    # "09 · The KV cache" (a title follows), not a product such as "16 · (96 + 64)" (16 heads)
    out.append((rf"(?<![\w.])({nn})(?= · [A-Z\u4e00-\u9fff])", lambda m: plan.numbers[m.group(1)]))
    out.append((rf"(?<![\w.])({nn})(?= cells? \d)", lambda m: plan.numbers[m.group(1)]))
    out.append((rf"(?<=\[)({nn})(?=\]\()", lambda m: plan.numbers[m.group(1)]))  # [09](../notebooks/09_x.ipynb)
    out.append((rf"(?<=\b[Nn]otebook \()({nn})(?=\))", lambda m: plan.numbers[m.group(1)]))  # notebook (13)
    out.append((rf"(\b[Nn]otebooks?\s+|\b[Nn]otebooks?\s+#)({NUM}(?:{SEP}{NUM})*)(?!\d|\.\d)",
                lambda m: m.group(1) + _number_list(plan, m.group(2), m.group(0), SEP)))
    out.append((rf"(笔记本\s*)({NUM}(?:{SEP_ZH}{NUM})*)(?!\d|\.\d)",
                lambda m: m.group(1) + _number_list(plan, m.group(2), m.group(0), SEP_ZH)))
    out.append((rf"(第\s*)({NUM}(?:{SEP_ZH}{NUM})*)(\s*(?:课|本|篇))",
                lambda m: m.group(1) + _number_list(plan, m.group(2), m.group(0), SEP_ZH) + m.group(3)))
    return out


# what no rule may leave behind: a number after "notebook", before "课", a NN_name that is not known
SUSPECT = re.compile(
    r"(?i:\bnotebooks?\s*#?\s*\d)|第\s*\d{1,2}\s*[、，,–-]?\s*\d*\s*(?:课|本|篇)|笔记本\s*\d|\d\s*号笔记本"
    r"|(?<![\w./-])(?:0\d|1\d)_[a-z]\w*")


_SPEAKS = re.compile(r"(?i:notebook)|课|\.ipynb")
# on such a line, a bare number that reads as a notebook's: (13), 09–13, `x.py`: 09, 13 (FlashAttention)
_BARE = re.compile(r"\(([01]\d)\)|(?<![\w.,])([01]\d)\s*[–-]\s*[01]\d(?![\w.,])|`:\s*([01]\d)\b"
                   r"|(?<![\w.,])([01]\d) \([A-Z]")
_MATH = re.compile(r"\$[^$\n]*\$")


def _lines(text: str):
    start = 0
    for line in text.split("\n"):
        yield start, line
        start += len(line) + 1


def rewrite(plan: Plan, text: str, where: str) -> str:
    """``text`` with every classified reference rewritten; each unclassified one recorded in plan.problems."""
    pairs = rules(plan)
    combined = re.compile("|".join(f"(?P<r{i}>{p})" for i, (p, _) in enumerate(pairs)))
    compiled = [re.compile(p) for p, _ in pairs]
    masked = list(text)

    def one(m: re.Match) -> str:
        i = int(m.lastgroup[1:])
        sub = compiled[i].match(text, m.start())  # the rule again, in its context (look-arounds), for its groups
        masked[m.start():m.end()] = " " * (m.end() - m.start())
        try:
            return pairs[i][1](sub)
        except Unclassified as e:
            plan.problems.append(f"{where}: {e}")
            return m.group(0)

    new = combined.sub(one, text)
    rest = "".join(masked)
    known = set(plan.stems.values()) | set(plan.figures.values())
    # a bare two-digit number left on a line that speaks of notebooks ("`inference.py`: 09–13")
    rest = _MATH.sub(lambda m: " " * len(m.group(0)), rest)
    if MAP_START in rest and MAP_END in rest:  # README's course map: written afresh from the table
        a, b = rest.index(MAP_START), rest.index(MAP_END)
        rest = rest[:a] + " " * (b - a) + rest[b:]
    for line_start, line in _lines(rest):
        if _SPEAKS.search(text, line_start, line_start + len(line)):  # the words, before masking
            for m in _BARE.finditer(line):
                number = next(g for g in m.groups() if g)
                if number in plan.numbers and plan.numbers[number] != number:
                    excerpt = line[max(0, m.start() - 40): m.end() + 30].strip()
                    plan.problems.append(f"{where}:{text.count(chr(10), 0, line_start) + 1}: bare number "
                                         f"{m.group(0)!r} on a line about notebooks: …{excerpt}…")
    for m in SUSPECT.finditer(rest):
        if m.group(0)[:1].isdigit():
            olds = [*plan.stems, *plan.figures]
            if any(rest.startswith(k, m.start()) for k in known):
                continue
            if not any(k.startswith(m.group(0)) or m.group(0).startswith(k) for k in olds):
                plan.notes.append(f"{where}: {m.group(0)!r} names no notebook or figure; left as it is")
                continue
        line = text.count("\n", 0, m.start()) + 1
        excerpt = text[max(0, m.start() - 30): m.end() + 30].replace("\n", " ")
        plan.problems.append(f"{where}:{line}: unclassified reference {m.group(0)!r} in …{excerpt}…")
    return new


def _fix_moved_links(text: str) -> str:
    """Links of a notebook moved from notebooks/next/ to notebooks/: one folder up less."""
    text = re.sub(r"(\]\(|[\"'])\.\./(?!\.\./)([^)\"'\s]*\.ipynb)", r"\1\2", text)
    return text.replace("../../", "../")


# ------------------------------------------------------------------------------------------ "Next" lines

def _title(nb, lang: str) -> str:
    return f"{nb.number} · {title(nb, lang)}"


def next_line(stem: str, lang: str, present: set[str], rows=COURSE) -> str | None:
    """The "Next" line of notebook ``stem`` in ``lang``: a link to the next present notebook of ``rows``."""
    order = [nb for nb in rows if nb.stem in present]
    i = [nb.stem for nb in order].index(stem)
    if i + 1 == len(order):
        return None
    here, nxt = order[i], order[i + 1]
    link = f"[{_title(nxt, lang)}]({nxt.stem}.ipynb)"
    if lang == "en":
        end = f"End of {PARTS[here.part][0].split(' · ')[0].lower()}. " if nxt.part != here.part and here.part else ""
        return f"{end}Next: {link}."
    end = f"{PARTS[here.part][1].split(' · ')[0]}结束。" if nxt.part != here.part and here.part else ""
    return f"{end}下一课：{link}。"


NEXT_ID = "next-in-course"
_NEXT_EN = re.compile(r"^.*\bNext\b.*\]\([^)]*\.ipynb\).*$", re.MULTILINE)
_NEXT_ZH = re.compile(r"^.*(?:下一课|接下来).*\]\([^)]*\.ipynb\).*$", re.MULTILINE)


def set_next(text: str, line: str | None, pattern: re.Pattern) -> tuple[str, bool]:
    """``text`` with its last "Next" line replaced by ``line`` (True), or unchanged (False) when it has none."""
    found = list(pattern.finditer(text))
    if not found or line is None:
        return text, False
    m = found[-1]
    return text[:m.start()] + line + text[m.end():], True


def number_heading(text: str, stem: str) -> str:
    """A notebook's title ``# The Transformer block`` as ``# 11 · The Transformer block`` (once)."""
    if re.match(r"# \d\d · ", text) or not text.startswith("# "):
        return text
    return f"# {stem[:2]} · {text[2:]}"


# ------------------------------------------------------------------------------------------------ the plan

def plan_all(root: Path = REPO, rows=COURSE) -> Plan:
    from build_translations import Section, english_hash, format_catalog, parse_catalog

    plan = build_maps(root, rows)
    moved = dict(plan.moves)
    present = {new for old, new in plan.moves if old.startswith("notebooks/") and new.endswith(".ipynb")}
    present = {Path(p).stem for p in present} | {nb.stem for nb in rows if nb.source == nb.stem
                                                  and nb.source in plan.stems}
    added_next: set[str] = set()  # notebooks that had no "Next" line: one is appended (cell NEXT_ID)
    cell_changes: dict[str, dict[str, tuple[str, str]]] = {}  # new stem -> cell id -> (old en, new en)
    for path in tracked(root):
        if path in SKIP or path.startswith(SKIP_DIRS) or Path(path).suffix not in TEXT:
            continue
        if path.startswith("translations/zh/") and path.endswith(".md") and "/messages/" not in path:
            continue  # catalogs: below, with their notebooks
        old = (root / path).read_text(encoding="utf-8", errors="strict")
        if path.endswith(".ipynb"):
            nb = json.loads(old)
            stem = Path(moved.get(path, path)).stem
            changes = cell_changes.setdefault(stem, {})
            last_next, first_md = None, True
            for cell in nb["cells"]:
                src = source(cell)
                new = rewrite(plan, src, f"{path} cell {cell.get('id')}")
                if path.startswith("notebooks/next/"):
                    new = _fix_moved_links(new)
                    if cell["cell_type"] == "markdown" and first_md:
                        new = number_heading(new, stem)
                if cell["cell_type"] == "markdown":
                    first_md = False
                if cell["cell_type"] == "markdown" and _NEXT_EN.search(new):
                    last_next = cell
                if new != src:
                    cell["source"] = new.splitlines(keepends=True)
                    if cell["cell_type"] == "markdown":
                        changes[cell["id"]] = (src, new)
            if last_next is not None and stem in present:
                src = changes.get(last_next["id"], (source(last_next),))[0]
                new, _ = set_next(source(last_next), next_line(stem, "en", present, rows), _NEXT_EN)
                if new != source(last_next):
                    last_next["source"] = new.splitlines(keepends=True)
                    changes[last_next["id"]] = (src, new)
            elif stem in present and next_line(stem, "en", present, rows) is not None:  # none yet: a last cell
                line = next_line(stem, "en", present, rows)
                nb["cells"].append({"cell_type": "markdown", "id": NEXT_ID, "metadata": {}, "source": [line]})
                added_next.add(stem)
            text = dumps(nb)
        else:
            text = rewrite(plan, old, path)
        if text != old:
            plan.changed[path] = (old, text)
    # the catalogs: a section that translated the old English follows it to the new one
    for nb in rows:
        base = nb.source.split("/")[-1]
        cat = f"translations/zh/{base}.md"
        if nb.source not in plan.stems or not (root / cat).exists():
            continue
        old = (root / cat).read_text(encoding="utf-8")
        sections = parse_catalog(old)
        changes = cell_changes.get(nb.stem if nb.stem in present else nb.source.split("/")[-1], {})
        next_zh = next_line(nb.stem, "zh", present, rows) if nb.stem in present else None
        last_next = max((i for i, s in enumerate(sections) if _NEXT_ZH.search(s.text)), default=None)
        for i, s in enumerate(sections):
            text = rewrite(plan, s.text, f"{cat} cell {s.cell_id}")
            if i == last_next:
                text, _ = set_next(text, next_zh, _NEXT_ZH)
            if nb.source.startswith("next/"):
                text = _fix_moved_links(text)
                if i == 0:
                    text = number_heading(text, nb.stem)
            if s.cell_id in changes and not s.flag and s.en == english_hash(changes[s.cell_id][0]):
                s.en = english_hash(changes[s.cell_id][1])
            s.text = text
        if nb.stem in added_next and next_zh is not None:
            sections.append(Section(NEXT_ID, english_hash(next_line(nb.stem, "en", present, rows)), None, next_zh))
        new = format_catalog(sections)
        if new != old:
            plan.changed[cat] = (old, new)
    plan.reexecute = sorted({"notebooks/00_start_here.ipynb"} | {f"notebooks/{nb.stem}.ipynb" for nb in rows
                             if nb.source in plan.stems and (cell_changes.get(nb.stem)
                                                             or nb.source != nb.stem)})
    return plan


def show(plan: Plan) -> None:
    import difflib

    for note in plan.notes:
        print("note:", note)
    for old, new in plan.moves:
        print(f"git mv {old} {new}")
    for path, (old, new) in plan.changed.items():
        diff = [line for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
                if line[:1] in "+-" and not line.startswith(("+++", "---"))]
        print(f"rewrite {path}: {len(diff) // 2} line(s)")
        for line in diff:
            print("   ", line[:200])


def apply(plan: Plan) -> None:
    root = plan.root
    for path, (_, new) in plan.changed.items():
        (root / path).write_text(new, encoding="utf-8")
    for old, new in plan.moves:
        (root / new).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "mv", old, new], cwd=root, check=True)
    for old, _ in plan.moves:  # the built Chinese edition of a moved notebook is rebuilt under its new name
        zh = Path(old.replace("notebooks/", "notebooks/zh/", 1))
        if old.startswith("notebooks/") and (root / zh).exists():
            subprocess.run(["git", "rm", "-q", str(zh)], cwd=root, check=True)


def course_map(root: Path) -> str:
    """README's course map: one line per part, each notebook under the name it has now (before or after
    --apply), linked; a notebook not written yet is left out."""
    from attention_from_scratch.course.parts import path

    lines = []
    for part, (caption, _) in enumerate(PARTS):
        links = []
        for nb in (nb for nb in COURSE if nb.part == part):
            found = path(nb, root / "notebooks")
            if found is not None and found.parent.name == "next":  # not in the course's numbering yet
                links.append(f"{nb.title} (`notebooks/{nb.source}.ipynb`, being written)")
            elif found is not None:
                links.append(f"[{found.stem[:2]} {nb.title}]({found.relative_to(root).as_posix()})")
        if links:
            lines.append(f"- **{caption}**: " + " ·\n  ".join(links))
    return MAP_START + "\n" + "\n".join(lines) + "\n" + MAP_END


def write_course_map(root: Path) -> bool:
    """Rewrite README.md's course map between its markers; True when the text changed."""
    readme = root / "README.md"
    text = readme.read_text(encoding="utf-8")
    new = re.sub(re.escape(MAP_START) + ".*?" + re.escape(MAP_END), lambda _m: course_map(root), text, flags=re.DOTALL)
    if new != text:
        readme.write_text(new, encoding="utf-8")
    return new != text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--dry-run", action="store_true", help="print every change, change nothing")
    mode.add_argument("--apply", action="store_true", help="move and rewrite, then rebuild the Chinese notebooks")
    mode.add_argument("--maps", action="store_true", help="only rewrite README's course map from course/parts.py")
    ap.add_argument("--root", type=Path, default=REPO, help="the repository (default: this one)")
    args = ap.parse_args(argv)
    if args.maps:
        print("README.md's course map", "rewritten" if write_course_map(args.root) else "unchanged")
        return 0
    plan = plan_all(args.root, COURSE)
    if plan.problems:
        print(f"refused: {len(plan.problems)} reference(s) no rule can classify; fix them by hand and re-run:",
              file=sys.stderr)
        for p in plan.problems:
            print("  ", p, file=sys.stderr)
        return 1
    show(plan)
    if args.apply:
        apply(plan)
        write_course_map(args.root)
        subprocess.run([sys.executable, "tools/build_translations.py"], cwd=args.root)
    print("\nre-execute these notebooks (tools/execute_notebooks.py or nbconvert --execute --inplace):")
    for path in plan.reexecute:
        print("  ", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
