"""The committed figures (``figures/``) and the matplotlib that drew them, for the tests that compare PNG bytes
(``test_plotting.py``, ``test_deepseek_v4_notebook.py``)."""

from pathlib import Path

import matplotlib

COMMITTED = Path(__file__).resolve().parents[1] / "figures"
# the matplotlib (major.minor) that drew the committed PNGs: another one lays text and margins out differently (the
# oldest supported, 3.8, makes some figures a few pixels larger), so the bytes are comparable only under this one
FIGURES_MATPLOTLIB = "3.11"


def drawn_by_this_matplotlib() -> bool:
    """Whether this matplotlib is the one that drew ``figures/`` (so that bytes drawn here can equal them)."""
    return ".".join(matplotlib.__version__.split(".")[:2]) == FIGURES_MATPLOTLIB
