"""Training the capstone Transformer on real text: held-out evaluation, the best checkpoint, resume, progress.

One step is the capstone's: ``loss, grads = model.loss_and_grads(tokens, targets)`` (every gradient written by
hand) and ``Adam.step(grads)``; the batch is ``batch_size`` windows of ``context + 1`` tokens cut at
random places of the training stream (``default_rng(seed)``). Around it:

* the learning rate warms up linearly for ``warmup`` steps, then follows a cosine from ``lr`` down to
  ``lr · min_lr_ratio`` at ``steps`` (Loshchilov & Hutter 2017); decoupled weight decay
  (``θ ← θ (1 - lr_t · weight_decay)`` on the matrices, AdamW's) is optional;
* ``input_noise = γ`` replaces each *input* token, with probability γ, by a token drawn from the training
  stream's unigram distribution; the targets stay the true next tokens. Xie et al. 2017 ("Data noising
  as smoothing in neural network language models") show this is to a network what interpolated
  smoothing is to an n-gram: it keeps a small corpus (300 poems) from being memorised;
* ``ema = β`` evaluates and saves an exponential moving average of the parameters instead of the last
  ones, ``θ̄ ← β θ̄ + (1 - β) θ`` after each step, with β_t = min(β, (1 + t) / (10 + t)) so the start is
  not an average with the initialisation (β_0 = 0.1; β = 0.99 is reached only at t = 890) (Polyak &
  Juditsky 1992; the "EMA" of many training recipes):
  the average sits nearer the bottom of the valley the steps bounce across;
* every ``eval_every`` steps the held-out loss per character is measured (``evaluate.py``); the best one
  is saved as ``OUT/best`` (early stopping: the run ends after ``patience`` evaluations without a new
  best, and the best checkpoint is the result, not the last);
* ``OUT/last`` holds everything needed to continue (parameters, Adam's moments, the step, the batch
  generator's state, the history): written at every evaluation and on Ctrl-C, read by ``resume=True``;
  a resumed run draws the same batches as one that was never interrupted (Ctrl-C during a step's update takes
  effect when the update, and the evaluation that step is due for, have ended; a batch whose gradients it cut
  short is drawn again), and ends where that run ends, bit for bit; a run resumed where it had ended (its
  steps, patience or time budget: the options it is resumed with) trains no further;
* ``time_budget`` (seconds) ends the run at the first evaluation past it;
* ``threads`` BLAS threads (default 1): fixed by the caller, never picked from the machine's load, so a
  run does the same arithmetic on a busy machine and an idle one (the committed checkpoints used 1; on
  an idle machine with spare cores, more may be faster for the larger models: measure before choosing);
* ``workers`` (default 1): each batch is computed as that many parts of its rows at the same time, the first
  in this process and the others in worker processes, each with one BLAS thread (``model/data_parallel.py``:
  data parallelism, the parts' gradients averaged by the positions they count). It uses every core for the
  elementwise work too, which BLAS threads do not: on 2 cores (an AMD EPYC virtual machine) 200 steps of
  ``train --corpus devil`` took 0.70-0.78x the time of ``--threads 2`` (``docs/guide/numbers.md``). The numbers equal
  one worker's up to rounding, and the same ``workers`` gives the same bits on any load;
* ``parts_in`` (default ``"processes"``): where the parts beyond the first run, worker processes or ``"threads"`` of
  this process (``BatchParts(in_threads=True)``: no process to start, the whole step in one process; the same bits).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..infra.blas import blas_thread_limit
from ..infra.checks import check_positive_int, check_real
from ..model.data_parallel import BatchParts
from ..model.training import Adam
from ..model.transformer import Transformer, TransformerConfig
from .checkpoints import checkpoint_paths, load_checkpoint, restore_run, save_checkpoint, save_run
from .evaluate import HeldOut, model_log_probs
from .progress import Progress

__all__ = ["TextRun", "TrainOptions", "learning_rate", "make_batch", "train_on_text"]


@dataclass(frozen=True)
class TrainOptions:
    """How to train: the model's shape, the optimiser and the stopping rules (each with its reason)."""

    d_model: int = 128  # residual width
    n_heads: int = 4  # d_k = d_model / n_heads
    n_layers: int = 3
    d_ff: int = 512  # MLP width, 4 · d_model as in GPT-2
    context: int = 128  # tokens per training window = the model's max_len
    batch_size: int = 16
    steps: int = 1000  # the schedule's length (the run may stop earlier)
    lr: float = 3e-3
    warmup: int = 50
    min_lr_ratio: float = 0.1  # the cosine ends at lr · min_lr_ratio
    weight_decay: float = 0.0  # AdamW's decoupled decay on the matrices (not the norm gains)
    input_noise: float = 0.0  # probability of replacing an input token by a unigram draw (module docstring)
    ema: float = 0.0  # decay of the parameters' moving average that is evaluated and saved; 0 = none
    eval_every: int = 50
    patience: int = 4  # evaluations without a new best before stopping; 0 = never stop early
    time_budget: float | None = None  # seconds; None = no limit
    seed: int = 0  # model initialisation and batches
    threads: int = 1  # BLAS threads (see the module docstring)
    workers: int = 1  # parts of each batch computed at the same time, one BLAS thread each (the module docstring)
    parts_in: str = "processes"  # where the parts beyond the first run: "processes" or "threads"
    dtype: str = "float32"

    def __post_init__(self):
        """Every option checked when the options are made, before a folder is created or a step is run."""
        for name in ("d_model", "n_heads", "n_layers", "d_ff", "context", "batch_size", "steps", "eval_every",
                     "threads", "workers"):
            check_positive_int(getattr(self, name), name)
        for name in ("warmup", "patience", "seed"):
            check_positive_int(getattr(self, name), name, minimum=0)
        if self.parts_in not in ("processes", "threads"):
            raise ValueError(f"parts_in must be 'processes' or 'threads', got {self.parts_in!r}")
        check_real(self.lr, "lr", above=0)
        check_real(self.weight_decay, "weight_decay", at_least=0)
        for name, closed in (("min_lr_ratio", True), ("input_noise", False), ("ema", False)):  # fractions
            value = check_real(getattr(self, name), name, at_least=0)
            if value > 1 or (value == 1 and not closed):
                raise ValueError(f"{name} must lie in [0, 1{']' if closed else ')'}, got {value!r}")
        if self.time_budget is not None:
            check_real(self.time_budget, "time_budget", at_least=0, hint=" (seconds; None for no limit)")
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {self.dtype!r}")

    def model_config(self, vocab_size: int) -> TransformerConfig:
        return TransformerConfig(vocab_size, self.d_model, self.n_heads, self.n_layers, self.d_ff, self.context)


@dataclass
class TextRun:
    """What a run returns: its model (the best checkpoint's), history and where its files are."""

    model: Transformer
    best_loss: float  # held-out nats per character
    best_step: int
    # "step", "train" (nats/char: the mean batch loss per token since the last evaluation, of the weights being
    # trained, on noised inputs, divided by the training stream's mean characters per token), "held_out"
    # (nats/char, of the averaged weights when ema > 0), "seconds"
    history: dict = field(default_factory=dict)
    stopped: str = ""  # why the run ended
    out: Path | None = None


def learning_rate(step: int, o: TrainOptions) -> float:
    """Linear warm-up to ``lr``, then a cosine down to ``lr · min_lr_ratio`` at ``steps``."""
    if step < o.warmup:
        return o.lr * (step + 1) / o.warmup
    progress = min(1.0, (step - o.warmup) / max(1, o.steps - o.warmup))
    return o.lr * (o.min_lr_ratio + (1 - o.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def make_batch(train_ids, rng, o: TrainOptions):
    """``(tokens, targets)``, ``(batch_size, context)`` each: windows of the stream at random starts, the
    targets one token ahead; with ``input_noise`` some input tokens replaced by unigram draws."""
    starts = rng.integers(0, len(train_ids) - o.context, size=o.batch_size)  # (B,)
    batch = train_ids[starts[:, None] + np.arange(o.context + 1)]  # (B, context + 1)
    tokens, targets = batch[:, :-1], batch[:, 1:]  # (B, context) each: predict the next token
    if o.input_noise:
        noisy = rng.random(tokens.shape) < o.input_noise  # (B, context)
        tokens = np.where(noisy, train_ids[rng.integers(0, len(train_ids), tokens.shape)], tokens)  # unigram draws
    return tokens, targets


def train_on_text(train_ids, held: HeldOut, tokenizer, options: TrainOptions, out, *, resume=False,
                  meta: dict | None = None, chars_per_token: float = 1.0, log=print, callback=None) -> TextRun:
    """Train a Transformer on the token stream ``train_ids``; keep the best by ``held``'s loss in ``out``.

    ``meta`` is stored in each checkpoint (the command, the corpus, the baselines); ``chars_per_token``
    (of the training stream) turns the training loss per token into nats per character.
    ``callback(step, state)`` runs after each evaluation (a KeyboardInterrupt it raises acts as Ctrl-C).
    """
    train_ids, out = np.asarray(train_ids, dtype=np.int64), Path(out)
    o = options
    if o.workers > 1 and o.threads != 1:
        raise ValueError(f"workers={o.workers} runs each part on one BLAS thread, so threads must be 1, got "
                         f"{o.threads}: choose one way of using the cores")
    if len(train_ids) <= o.context + 1:
        raise ValueError(f"the training stream has {len(train_ids)} tokens; context={o.context} needs more")
    model = Transformer(o.model_config(tokenizer.vocab_size), seed=o.seed, dtype=getattr(np, o.dtype))
    parts = BatchParts(model, o.workers, in_threads=o.parts_in == "threads")  # checked before anything is written
    optimizer, rng = Adam(model.params, lr=o.lr), np.random.default_rng(o.seed)
    averaged = Transformer(model.config, seed=o.seed, dtype=getattr(np, o.dtype)) if o.ema else None
    state = {"step": 0, "best_loss": math.inf, "best_step": -1, "seconds": 0.0,
             "history": {"step": [], "train": [], "held_out": [], "seconds": []}}
    last = out / "last"
    if resume:
        state = restore_run(last, model, optimizer, rng, averaged)
    elif checkpoint_paths(last)[1].exists():
        raise FileExistsError(f"{out} already holds a run (last.json): resume it, or choose another output folder")
    out.mkdir(parents=True, exist_ok=True)
    meta = {**(meta or {}), "options": dataclasses.asdict(o)}
    progress = Progress(o.steps, o.time_budget, start_step=state["step"], start_seconds=state["seconds"])
    window_losses = state.setdefault("window", [])  # the training losses since the last evaluation (saved in last)
    evaluated = state["history"]["step"][-1:] == [state["step"]]  # at an evaluation: where a run may have ended
    stopped = _stop_reason(state, o) if evaluated else ""  # a resumed run that had ended ends at once
    drawn = None
    with blas_thread_limit(o.threads), parts:
        try:
            while not stopped:
                step = state["step"]
                drawn = rng.bit_generator.state  # Ctrl-C before this batch is trained on: it is drawn again on resume
                loss, grads = parts.loss_and_grads(*make_batch(train_ids, rng, o))  # model.loss_and_grads's
                if not math.isfinite(loss):
                    raise FloatingPointError(f"the loss became {loss} at step {step}; try a smaller lr")
                with _whole_step():  # the update, its bookkeeping and a due evaluation: Ctrl-C waits for their end
                    drawn = None
                    _update(model, optimizer, averaged, grads, step, o)
                    state["step"] = step = step + 1
                    window_losses.append(loss / chars_per_token)
                    progress.step(step, o.batch_size * o.context, train=window_losses[-1])
                    due = step % o.eval_every == 0 or step == o.steps
                    if due:  # a second or two: the history, the best checkpoint and last stay whole
                        scored = model if averaged is None else averaged  # the average, when there is one
                        stopped = _evaluate(scored, held, tokenizer, o, state, window_losses, progress, out, meta)
                        state["window"] = window_losses = []
                        _save_last(last, model, optimizer, rng, tokenizer, state, progress, averaged)
                if due and callback is not None:
                    callback(step, state)
        except KeyboardInterrupt:
            if drawn is not None:
                rng.bit_generator.state = drawn
            with contextlib.suppress(KeyboardInterrupt), _whole_step():  # a second Ctrl-C: the save ends first
                _save_last(last, model, optimizer, rng, tokenizer, state, progress, averaged)
            progress.close()
            if not stopped:  # (a Ctrl-C held until the evaluation that ended the run: the run had ended)
                log(f"interrupted at step {state['step']}: saved {last}.npz; run again with resume to continue")
                stopped = "interrupted"
    progress.close()
    best = load_checkpoint(out / "best")[0] if checkpoint_paths(out / "best")[0].exists() else model
    return TextRun(best, state["best_loss"], state["best_step"], state["history"], stopped, out)


def _update(model, optimizer, averaged, grads, step, o):
    """One step's change of the parameters: Adam from ``grads``, then weight decay, then the running average."""
    optimizer.lr = learning_rate(step, o)
    optimizer.step(grads)
    if o.weight_decay:
        for name, p in model.params.items():
            if p.ndim == 2:
                model.params[name] = p * (1 - optimizer.lr * o.weight_decay)
    if averaged is not None:
        beta = min(o.ema, (1 + step) / (10 + step))
        for name, p in model.params.items():
            averaged.params[name] = beta * averaged.params[name] + (1 - beta) * p


@contextlib.contextmanager
def _whole_step():
    """Ctrl-C (SIGINT) inside the block waits until the block has ended, then acts as it would have: a step's update,
    its bookkeeping or a checkpoint's files are never left half done. Only the main thread can hold a signal;
    elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            signal.raise_signal(signal.SIGINT)  # now the previous handler's (Python's: KeyboardInterrupt)


def _evaluate(model, held, tokenizer, o, state, window_losses, progress, out, meta) -> str:
    """Held-out loss now; a new best is saved. Returns why to stop ('' to go on)."""
    loss = held.nats_per_char(model_log_probs(model, held.ids, context=o.context, threads=o.threads))
    h, step = state["history"], state["step"]
    h["step"].append(step)
    h["train"].append(float(np.mean(window_losses)))
    h["held_out"].append(loss)
    h["seconds"].append(progress.seconds)
    if loss < state["best_loss"]:
        state["best_loss"], state["best_step"] = loss, step
        save_checkpoint(out / "best", model, tokenizer, {**meta, "step": step, "held_out_nats_per_char": loss,
                                                          "history": h})
    progress.evaluated(step, loss, state["best_loss"], state["best_step"])
    return _stop_reason(state, o)


def _stop_reason(state, o) -> str:
    """Why the run ends at its last evaluation ('' to go on): the schedule's end, early stopping, the time budget."""
    seconds = state["history"]["seconds"][-1]  # when it was measured (a resumed run asks again: the same answer)
    since_best = sum(1 for s in state["history"]["step"] if s > state["best_step"])
    if state["step"] >= o.steps:
        return f"reached steps={o.steps}"
    if o.patience and since_best >= o.patience:
        return f"no new best held-out loss in {o.patience} evaluations (early stopping)"
    if o.time_budget is not None and seconds >= o.time_budget:
        return f"time budget of {o.time_budget:g} s spent"
    return ""


def _save_last(last, model, optimizer, rng, tokenizer, state, progress, averaged):
    state["seconds"] = progress.seconds  # the time so far, which a resumed run's progress continues from
    save_run(last, model, optimizer, rng, tokenizer, state, averaged)
