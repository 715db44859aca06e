"""The course's parts in teaching order: ONE table that the renumbering tool, the site's table of contents,
README's course map and notebook 00 all read, so the order lives in one place.

Each row of :data:`COURSE` is ``(source, stem, part, title, minutes)``:

    source   where the notebook was before the course was put in teaching order (``09_kv_cache``, or
             ``next/transformer_block`` for a notebook written under notebooks/next/), relative to notebooks/
    stem     its file name in teaching order (``15_kv_cache``): the two-digit prefix is its place
    part     the index into :data:`PARTS`
    title    its title in English (the Chinese one is in :data:`TITLES_ZH`, read from translations/zh/parts.json)
    minutes  our estimate of a beginner's time for it, reading and running every cell and doing the exercises
             (not yet measured with students)

:func:`path` finds a notebook under either name, so what reads this table is right before and after
``tools/renumber.py --apply`` has moved the files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

from .files import course_folder
from .i18n import language, msg, render

__all__ = ["COURSE", "PARTS", "TITLES_ZH", "Notebook", "builds_on_line", "by_part", "next_of", "path", "route_text",
           "title", "track"]

# the parts' captions in English; each with its Chinese from translations/zh/parts.json (data, as every Chinese
# text of the course is): ``PARTS[i] = (English caption, Chinese caption)``
_CAPTIONS = (
    "Start here",
    "Part 1 · Foundations",
    "Part 2 · A Transformer that learns",
    "Part 3 · Efficient inference",
    "Part 4 · The frontier",
    "Part 5 · Applications",
    "Part 6 · The GPU",
    "Appendix",
)


def _chinese() -> dict:
    """``translations/zh/parts.json``: the parts' captions and the notebooks' titles in Chinese (an install
    without the translations gets none, and shows the English ones in their place)."""
    path = course_folder("translations") / "zh" / "parts.json"
    if not path.is_file():
        return {"parts": {}, "more": "More", "titles": {}}
    return json.loads(path.read_text(encoding="utf-8"))


_ZH = _chinese()
PARTS = tuple((caption, _ZH["parts"].get(caption, caption)) for caption in _CAPTIONS)


class Notebook(NamedTuple):
    source: str
    stem: str
    part: int
    title: str
    minutes: int

    @property
    def number(self) -> str:
        """The two-digit place in teaching order (``"15"``)."""
        return self.stem[:2]


COURSE = tuple(Notebook(*row) for row in (
    ("00_start_here", "00_start_here", 0, "Start here", 20),
    ("01_dot_product", "01_dot_product", 1, "The dot product", 30),
    ("02_similarity_measures", "02_similarity_measures", 1, "Similarity measures", 30),
    ("03_scaling_by_sqrt_dk", "03_scaling_by_sqrt_dk", 1, "Why divide by √d_k", 40),
    ("04_softmax", "04_softmax", 1, "Softmax", 40),
    ("05_from_averaging_to_attention", "05_from_averaging_to_attention", 1, "From averaging to attention", 40),
    ("06_scaled_dot_product_attention", "06_scaled_dot_product_attention", 1, "Scaled dot-product attention", 50),
    ("07_masking", "07_masking", 1, "Masking", 40),
    ("08_multi_head_attention", "08_multi_head_attention", 1, "Multi-head attention", 50),
    ("16_misconceptions_and_quiz", "09_misconceptions_and_quiz", 1, "Misconceptions, and a quiz", 30),
    ("next/learning_from_data", "10_learning_from_data", 2, "Learning from data", 60),
    ("next/transformer_block", "11_transformer_block", 2, "The Transformer block", 60),
    ("18_backpropagation", "12_backpropagation", 2, "Backpropagation through attention", 90),
    ("19_training", "13_training", 2, "Training a Transformer in NumPy", 60),
    ("next/real_text", "14_real_text", 2, "Real text", 60),
    ("09_kv_cache", "15_kv_cache", 3, "The KV cache", 40),
    ("10_rope", "16_rope", 3, "Rotary position embeddings (RoPE)", 50),
    ("11_mla", "17_mla", 3, "Multi-head latent attention (MLA)", 60),
    ("13_flash_attention", "18_flash_attention", 3, "FlashAttention", 60),
    ("14_serving", "19_windows_and_sinks", 3, "Windows, sinks and the rolling cache", 50),
    ("next/serving_at_scale", "20_serving_at_scale", 3, "Serving at scale: paged caches, split-KV, ring attention", 50),
    ("12_sparse_attention", "21_sparse_attention", 4, "DeepSeek-V3.2: sparse attention", 60),
    ("next/deepseek_v4", "22_deepseek_v4", 4, "DeepSeek-V4: compressed attention", 60),
    ("next/linear_attention", "23_linear_attention", 4, "Linear attention", 60),
    ("15_applications", "24_applications", 5, "Applications", 40),
    ("17_gpu", "25_gpu", 6, "The same code on a GPU", 30),
    ("next/notation", "26_notation_and_glossary", 7, "Notation and glossary", 15),
))

TITLES_ZH = dict(_ZH["titles"])  # stem -> the notebook's title in Chinese (translations/zh/parts.json)

# what each notebook builds on (new stems): the concept map of notebook 00 is drawn from these edges
REQUIRES = {
    "02_similarity_measures": ("01_dot_product",),
    "03_scaling_by_sqrt_dk": ("01_dot_product",),
    "04_softmax": ("03_scaling_by_sqrt_dk",),
    "05_from_averaging_to_attention": ("02_similarity_measures", "04_softmax"),
    "06_scaled_dot_product_attention": ("05_from_averaging_to_attention",),
    "07_masking": ("06_scaled_dot_product_attention",),
    "08_multi_head_attention": ("07_masking",),
    "09_misconceptions_and_quiz": ("08_multi_head_attention",),
    "10_learning_from_data": ("04_softmax",),
    "11_transformer_block": ("08_multi_head_attention", "10_learning_from_data"),
    "12_backpropagation": ("11_transformer_block",),
    "13_training": ("12_backpropagation",),
    "14_real_text": ("13_training",),
    "15_kv_cache": ("08_multi_head_attention",),
    "16_rope": ("15_kv_cache",),
    "17_mla": ("16_rope",),
    "18_flash_attention": ("12_backpropagation", "15_kv_cache"),
    "19_windows_and_sinks": ("18_flash_attention",),
    "20_serving_at_scale": ("19_windows_and_sinks",),
    "21_sparse_attention": ("17_mla",),
    "22_deepseek_v4": ("21_sparse_attention", "19_windows_and_sinks"),
    "23_linear_attention": ("18_flash_attention",),
    "24_applications": ("06_scaled_dot_product_attention", "12_backpropagation"),
    "25_gpu": ("18_flash_attention",),
}


def by_part() -> list[tuple[tuple[str, str], list[Notebook]]]:
    """``((caption_en, caption_zh), notebooks)`` for each part, in teaching order."""
    return [(caption, [nb for nb in COURSE if nb.part == i]) for i, caption in enumerate(PARTS)]


def next_of(stem: str) -> Notebook | None:
    """The notebook after ``stem`` (a new stem) in teaching order, or None for the last one."""
    stems = [nb.stem for nb in COURSE]
    i = stems.index(stem)
    return COURSE[i + 1] if i + 1 < len(COURSE) else None


def path(nb: Notebook, notebooks: Path | str = "notebooks") -> Path | None:
    """The notebook's file under ``notebooks``: its teaching-order name, else its source name, else None."""
    for name in (nb.stem, nb.source):
        candidate = Path(notebooks) / f"{name}.ipynb"
        if candidate.exists():
            return candidate
    return None


_ROUTES = {"beginner": (1, 2), "engineer": (3, 4)}  # a route: the parts it reads


def track(name: str) -> list[Notebook]:
    """A reading route: ``"beginner"`` (the shortest path to a trained model: parts 1 and 2) or ``"engineer"``
    (efficient inference and the frontier: parts 3 and 4); any other ``name`` is a ValueError naming the two."""
    if name not in _ROUTES:
        raise ValueError(f"name must be one of {', '.join(map(repr, _ROUTES))}, got {name!r}")
    return [nb for nb in COURSE if nb.part in _ROUTES[name]]


def title(nb: Notebook, lang: str | None = None) -> str:
    """``nb``'s title in ``lang`` (default: the course-wide language, see course/i18n.py): :attr:`Notebook.title`,
    or its Chinese from :data:`TITLES_ZH` (the English one where an install lacks the translations)."""
    return nb.title if language(lang) == "en" else TITLES_ZH.get(nb.stem, nb.title)


def route_text(name: str, notebooks: Path | str = "notebooks", lang: str | None = None) -> str:
    """Notebook 00's list of the route ``name`` (:func:`track`) in ``lang``: its size and time, then one line per
    notebook (its file under ``notebooks``, or "(being written)", its minutes and its title)."""
    route = track(name)
    size = {"count": len(route), "hours": sum(nb.minutes for nb in route) / 60}
    # one template per route: its name is a word of the sentence, in either language
    head = (msg("beginner: {count} notebooks, about {hours:.1f} hours", **size) if name == "beginner"
            else msg("engineer: {count} notebooks, about {hours:.1f} hours", **size))
    lines = [render(head, lang)]
    for nb in route:
        found = path(nb, notebooks)
        stem = found.stem if found else msg("{stem} (being written)", stem=nb.stem)
        lines.append(render(msg("  {stem:34} {minutes:3d} min  {title}", stem=stem, minutes=nb.minutes,
                                title=title(nb, lang)), lang))
    return "\n".join(lines)


def builds_on_line(stems: list[str], lang: str | None = None) -> str:
    """The sentence of notebook 00 that names, by number, the notebooks (``stems``) the engineer's route builds on."""
    numbers = render(msg(", "), lang).join(stem[:2] for stem in stems)
    return render(msg("the engineer's route builds on {numbers}", numbers=numbers), lang)


def group(stems: list[str]) -> list[tuple[tuple[str, str], list[str]]]:
    """``stems`` (file names of notebooks, under either name) grouped by part in teaching order, each group
    ``((caption_en, caption_zh), stems)``; a stem the table does not name goes in a last group, "More"."""
    where = {}
    for i, nb in enumerate(COURSE):
        where[nb.stem] = where[nb.source] = where[nb.source.split("/")[-1]] = (nb.part, i)
    groups = [(caption, sorted((s for s in stems if s in where and where[s][0] == p), key=lambda s: where[s][1]))
              for p, caption in enumerate(PARTS)]
    rest = sorted(s for s in stems if s not in where)
    return [g for g in groups if g[1]] + ([(("More", _ZH["more"]), rest)] if rest else [])
