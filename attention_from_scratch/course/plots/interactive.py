"""The printed twins of the interactive figures (:mod:`..interactive`): a few states of each, side by side."""

from ..interactive import TWINS as FIGURES

__all__ = ["FIGURES"]
