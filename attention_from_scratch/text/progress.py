"""A training run's progress as one clean line: step, tokens/s, train and held-out loss, elapsed, ETA.

On a terminal the line is rewritten in place after every step (``\\r``) and a held-out evaluation leaves
its line behind; elsewhere (a log file, a notebook, CI) only the evaluations print, one line each. No
progress-bar library is needed for one line, so none is a dependency.

    step  300/1000 [#####.........]  11.6k tok/s  train 1.712  held-out 1.623 (best 1.623 @300)  1:04 < 2:29

Losses are in nats per character. The ETA is the smaller of the steps left at the mean step time so far
and the time budget left.
"""

from __future__ import annotations

import math
import sys
import time

__all__ = ["Progress", "clock"]


def clock(seconds: float) -> str:
    """``75.2`` -> ``"1:15"``; ``3725`` -> ``"1:02:05"``."""
    s = round(seconds)
    h, m = divmod(s // 60, 60)
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m}:{s % 60:02d}"


class Progress:
    """Progress of a run from ``start_step`` (a resumed run) towards ``total_steps``."""

    def __init__(self, total_steps, time_budget=None, *, start_step=0, start_seconds=0.0, stream=None, width=14):
        self.total, self.budget, self.width = total_steps, time_budget, width
        self.stream = sys.stdout if stream is None else stream
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.first_step, self.before = start_step, start_seconds  # seconds spent before this process
        self.t0, self.tokens, self.step_no = time.perf_counter(), 0, start_step
        self.train, self.held = math.nan, "held-out -"

    @property
    def seconds(self) -> float:
        """Seconds of training so far, earlier sessions of a resumed run included."""
        return self.before + time.perf_counter() - self.t0

    def line(self) -> str:
        now = time.perf_counter() - self.t0
        done = self.step_no - self.first_step
        per_step = now / done if done else math.nan
        left = (self.total - self.step_no) * per_step
        if self.budget is not None:
            left = min(left, max(0.0, self.budget - self.seconds))
        filled = int(self.width * self.step_no / self.total) if self.total else 0
        bar = "#" * filled + "." * (self.width - filled)
        speed = f"{self.tokens / now / 1000:.1f}k tok/s" if now > 0 else "- tok/s"
        eta = clock(left) if math.isfinite(left) else "?"
        return (f"step {self.step_no:4d}/{self.total} [{bar}] {speed}  train {self.train:.3f}  {self.held}  "
                f"{clock(self.seconds)} < {eta}")

    def step(self, step: int, n_tokens: int, *, train: float) -> None:
        """After a step of ``n_tokens`` tokens with training loss ``train`` (nats/char)."""
        self.step_no, self.train = step, train
        self.tokens += n_tokens
        if self.live:
            self.stream.write("\r" + self.line() + "\x1b[K")  # \x1b[K: clear the rest of the line
            self.stream.flush()

    def evaluated(self, step: int, loss: float, best: float, best_step: int) -> None:
        """After a held-out evaluation: the line is printed and kept."""
        self.held = f"held-out {loss:.3f} (best {best:.3f} @{best_step})"
        self.stream.write(("\r" if self.live else "") + self.line() + ("\x1b[K\n" if self.live else "\n"))
        self.stream.flush()

    def close(self) -> None:
        if self.live:
            self.stream.write("\n")
            self.stream.flush()
            self.live = False
