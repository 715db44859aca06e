"""The build step pyproject.toml cannot declare: the course's files go into the wheel.

A wheel has no checkout around it, so ``build_py`` copies what the course commands read from the
repository into the package, under ``attention_from_scratch/course/data/`` (where
``course/files.py`` finds them):

* ``notebooks/**/*.ipynb`` without their outputs and execution counts (``student`` clears them anyway;
  the executed notebooks stay in the repository, its sdist and the website), so that
  ``python -m attention_from_scratch student DIR [--lang zh]`` works from the wheel;
* ``translations/*/messages/*.json``, the message catalogs behind ``--lang zh``, and ``translations/*/parts.json``,
  the course's parts and notebook titles in that language.

An editable install (``pip install -e .``) copies nothing: the package reads the checkout's folders.
Everything else is in pyproject.toml.
"""

import json
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def notebook_without_outputs(text: str) -> str:
    nb = json.loads(text)
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


class BuildWithCourseFiles(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        data = Path(self.build_lib) / "attention_from_scratch" / "course" / "data"
        for src in sorted((ROOT / "notebooks").rglob("*.ipynb")):
            if ".ipynb_checkpoints" in src.parts:
                continue
            dest = data / src.relative_to(ROOT)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(notebook_without_outputs(src.read_text(encoding="utf-8")), encoding="utf-8")
        translations = ROOT / "translations"
        for src in sorted([*translations.glob("*/messages/*.json"), *translations.glob("*/parts.json")]):
            dest = data / src.relative_to(ROOT)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(src.read_bytes())


setup(cmdclass={"build_py": BuildWithCourseFiles})
