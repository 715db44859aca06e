"""Training the capstone Transformer: Adam, a plain loop, and the recipes of the training notebook.

Adam (Kingma & Ba 2015, Algorithm 1) keeps two running averages per parameter, of the gradient and
of its square, and steps by their ratio:

    m ← β1 m + (1 - β1) g,    v ← β2 v + (1 - β2) g²
    m̂ = m / (1 - β1^t),       v̂ = v / (1 - β2^t)          (bias correction: m, v start at 0)
    θ ← θ - lr · m̂ / (sqrt(v̂) + eps)

The tasks (:mod:`.tasks`) are small enough to learn in seconds on a CPU, and each can only be solved by
attention.

Everything is seeded: the same seed gives the same batches and, on one machine, the same loss curve.

The model runs on any backend (``Transformer(..., xp=...)``); the arithmetic of a step is the model's.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

from ..infra.backend import get_namespace, narrow, widen
from ..infra.blas import blas_thread_limit, one_blas_thread
from ..infra.checks import check_adam, check_positive_int
from .tasks import CopyTask
from .transformer import Transformer, TransformerConfig

__all__ = [
    "RECIPES", "SCALE_LRS", "SCALE_SEEDS", "Adam", "TrainingHistory", "blas_threads_for", "fit", "train", "warmup_lr",
]

# Where the BLAS may use all cores: when the MLP's first matmul (B·T · d_model · d_ff, the step's
# largest) has at least this many multiply-adds. The choice depends on the step's size only, never on
# the machine's current load (a result that changed with other processes would not be reproducible);
# ``train(threads=...)`` overrides it. Measured with benchmarks/bench_training.py on a shared 2-core machine
# (float32, interleaved medians): README's model (736 · 32 · 64 = 1.5e6) was 17x slower on two threads
# than on one at a load of 7 (waking BLAS threads costs more than its tiny matmuls); the large model
# (4096 · 256 · 1024 = 1.1e9) was 8.6x slower on two threads at a load of 8 (BLAS threads spinning
# against the other processes). On the idle machine two threads gave README's model nothing (9.6 ms
# against 9.5) and the large one 0.74-0.76x the one-thread step (README's table). The threshold
# lies between the two sizes, not measured finer. One thread also keeps the losses independent of the
# thread count; notebook 13's recipes all lie far below the threshold.
MULTI_THREAD_WORK = 2**24


def blas_threads_for(config, n_tokens: int) -> int | None:
    """BLAS threads for a training step on ``n_tokens = B·T`` tokens, by the step's size alone: 1 where the
    step is overhead-bound (its largest matmul below MULTI_THREAD_WORK multiply-adds), None (the BLAS
    default: all cores) where its matmuls are large. See MULTI_THREAD_WORK; ``train(threads=...)``
    overrides it."""
    return 1 if n_tokens * config.d_model * config.d_ff < MULTI_THREAD_WORK else None


class Adam:
    """Adam with bias correction over a dict of parameters, updated in place of the dict's entries.

    Each step replaces a parameter with a new array (the caller's arrays are never written) and updates
    the moments ``m`` and ``v``, the optimizer's own buffers, in place. Half-precision parameters keep their
    moments and compute their step in float32, as the layers compute in float32 (``backend.widen``): in float16
    eps = 1e-8 rounds to 0 and (1 - β2)·g² underflows for |g| below about 8e-3, so the step would be m / 0; the
    parameter is then stored back in its own dtype (an update below its rounding step is lost there).

    ``lr > 0`` (a negative one would climb the loss), ``0 <= beta1, beta2 < 1`` (β = 1 makes the bias
    correction 1 - β^t zero) and ``eps > 0`` are checked here, before any step.
    """

    def __init__(self, params: dict, *, lr=1e-2, betas=(0.9, 0.999), eps=1e-8):
        lr, betas, eps = check_adam(lr, betas, eps)
        self.params, self.lr, (self.beta1, self.beta2), self.eps = params, lr, betas, eps
        self.m = {name: _zero_moment(p) for name, p in params.items()}  # first moment
        self.v = {name: _zero_moment(p) for name, p in params.items()}  # second moment
        self.t = 0

    def step(self, grads: dict):
        """One update ``θ ← θ - lr · m̂ / (sqrt(v̂) + eps)`` for every parameter, from ``grads``."""
        self.t += 1
        c1, c2 = 1.0 - self.beta1**self.t, 1.0 - self.beta2**self.t  # bias corrections
        for name, g in grads.items():
            xp = get_namespace(g)
            g, m, v = widen(g, xp), self.m[name], self.v[name]  # the optimizer's own buffers: updated in place
            m *= self.beta1
            m += (1.0 - self.beta1) * g  # m = β1 m + (1 - β1) g
            g_sq = (1.0 - self.beta2) * g
            g_sq *= g  # (1 - β2)·g first, as PyTorch's addcmul: g² alone overflows float32 from |g| > 1.8e19
            v *= self.beta2
            v += g_sq  # v = β2 v + (1 - β2) g²
            denominator = xp.sqrt(v)  # sqrt(v̂) + eps = sqrt(v) / sqrt(c2) + eps
            denominator *= 1.0 / math.sqrt(c2)
            denominator += self.eps
            step = m * (self.lr / c1)  # lr · m̂
            step /= denominator  # lr · m̂ / (sqrt(v̂) + eps)
            p = self.params[name]
            self.params[name] = narrow(widen(p, xp) - step, p.dtype, xp)  # a new array: the caller's are not written


def _zero_moment(p):
    """Exact zeros in p's (widened) dtype on p's device, whatever p holds (inf, NaN): an Adam moment before step 1."""
    xp = get_namespace(p)
    return xp.zeros_like(widen(p, xp))


@dataclass
class TrainingHistory:
    """What :func:`train` returns: the loss of every step and the wall-clock seconds taken."""

    loss: list = field(default_factory=list)
    seconds: float = 0.0

    def final(self, last: int = 20) -> float:
        """The mean loss of the last ``last`` steps (all when fewer): the number the notebook compares runs by."""
        last = check_positive_int(last, "last (how many final steps to average)")
        if not self.loss:
            raise ValueError("this history holds no losses yet: train(...) fills it")
        return sum(self.loss[-last:]) / len(self.loss[-last:])


def warmup_lr(lr: float, step: int, warmup: int) -> float:
    """The learning rate of step ``step`` (0-based) under a linear warm-up of ``warmup`` steps (0 = none):

        lr_step = lr · min(1, (step + 1) / warmup)

    so the first step already moves (lr / warmup) and step ``warmup - 1`` reaches the full ``lr``.
    """
    return lr * min(1.0, (step + 1) / warmup) if warmup else lr


def train(model, batches, *, steps, lr, betas=(0.9, 0.999), eps=1e-8, warmup=0, log_every=None, threads="auto"):
    """Train ``model`` with Adam for ``steps`` steps on ``batches`` -> :class:`TrainingHistory`.

    ``batches``: an iterator of token arrays ``(B, T)`` (next-token targets) or of pairs ``(tokens,
    targets)``, e.g. ``task.batches(batch_size, seed=0)``. ``warmup`` ramps the learning rate
    linearly over the first steps; ``log_every=n`` prints the loss every n steps. ``threads``: the BLAS
    threads of the steps -- ``"auto"`` (the default) picks them from the first batch's size alone
    (:func:`blas_threads_for`: one thread for small steps, all cores for large ones), an int fixes them,
    None leaves the BLAS as it is. Every argument is checked before the first step, and a list of fewer
    than ``steps`` batches is refused.
    """
    steps = check_positive_int(steps, "steps")
    warmup = check_positive_int(warmup, "warmup (steps of linear warm-up, 0 = none)", minimum=0)
    log_every = None if log_every is None else check_positive_int(log_every, "log_every")
    if threads != "auto" and threads is not None:
        threads = check_positive_int(threads, 'threads (BLAS threads: "auto", an int >= 1, or None)')
    if hasattr(batches, "__len__") and not isinstance(batches, tuple) and len(batches) < steps:
        raise ValueError(f"batches holds {len(batches)} batches but steps={steps}: pass at least as many "
                         f"(or an endless stream such as task.batches(batch_size))")
    optimizer, history, t0 = Adam(model.params, lr=lr, betas=betas, eps=eps), TrainingHistory(), time.perf_counter()
    batches = iter(batches)
    first = next(batches)  # its size picks the BLAS threads (see MULTI_THREAD_WORK)
    tokens = first[0] if isinstance(first, tuple) else first
    n_tokens = math.prod(getattr(tokens, "shape", None) or (len(tokens), len(tokens[0])))
    if threads == "auto":
        threads = 1 if not hasattr(model, "config") else blas_threads_for(model.config, n_tokens)
    with one_blas_thread() if threads == 1 else blas_thread_limit(threads):
        _loop(model, itertools.chain([first], batches), optimizer, history, steps, lr, warmup, log_every)
    history.seconds = time.perf_counter() - t0
    return history


def _loop(model, batches, optimizer, history, steps, lr, warmup, log_every):
    for step in range(steps):
        batch = next(batches, None)
        if batch is None:
            raise ValueError(f"batches ran out after {step} batches, before steps={steps}: pass an endless "
                             f"stream such as task.batches(batch_size), or fewer steps")
        tokens, targets = batch if isinstance(batch, tuple) else (batch, None)
        loss, grads = model.loss_and_grads(tokens, targets)
        if not math.isfinite(loss):
            raise FloatingPointError(f"the loss became {loss} at step {step}; try a smaller lr")
        optimizer.lr = warmup_lr(lr, step, warmup)
        optimizer.step(grads)
        history.loss.append(loss)
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {loss:.4f}")


def fit(task, config, *, steps, lr, batch_size=32, warmup=0, seed=0, full_sequence=False):
    """Build ``Transformer(config, seed=seed)`` and train it on ``task``: ``(model, history)``.

    Refused up front when the task's longest sequence does not fit ``config.max_len`` (the model reads
    all of it with ``full_sequence``, all but the last token otherwise).
    """
    read = task.max_sequence_length - (0 if full_sequence else 1)
    if read > config.max_len:
        raise ValueError(f"{task} makes sequences of up to {task.max_sequence_length} tokens, so the model reads "
                         f"{read} > config.max_len={config.max_len}; use a larger max_len or a shorter length")
    model = Transformer(config, seed=seed)
    batches = task.batches(batch_size, seed=seed, full_sequence=full_sequence)
    return model, train(model, batches, steps=steps, lr=lr, warmup=warmup)


# The runs of notebook 13 and its figures (``fit(**RECIPES[name])``), chosen to finish in seconds on a CPU.
_COPY = {"task": CopyTask(8, 5), "steps": 250, "lr": 1e-2, "warmup": 10, "full_sequence": True}
_SMALL = {"vocab_size": 8, "d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32, "max_len": 16}
RECIPES = {
    # induction: n (the first half's length) varies per batch (4..12), so only "find the earlier copy" works,
    # not "look n - 1 back"
    "induction": {"task": CopyTask(16, (4, 12)), "steps": 600, "lr": 1e-2, "warmup": 30,
                  "config": TransformerConfig(16, 32, 2, 2, 64, 24)},
    "copy": _COPY | {"config": TransformerConfig(**_SMALL)},
    "no_mask": _COPY | {"config": TransformerConfig(**_SMALL, causal=False)},
    "flash": _COPY | {"steps": 20, "config": TransformerConfig(**_SMALL, attention="flash", block_size=4)},
}
# Ablation 1 (no 1/sqrt(d_k)): one head of d_k = 64, whose unscaled scores have a standard deviation of ~8.
# Each variant is trained at each learning rate of SCALE_LRS on seed 0 and keeps its best (lowest final
# loss), then runs on every seed of SCALE_SEEDS at that rate: "scale_{scale}_lr{lr:g}_{seed}".
SCALE_SEEDS = (0, 1, 2)
SCALE_LRS = (5e-4, 1e-3, 2e-3, 5e-3, 1e-2)  # wide enough that each variant's best is inside
for _scale in (True, False):
    for _lr in SCALE_LRS:
        for _seed in SCALE_SEEDS:
            RECIPES[f"scale_{_scale}_lr{_lr:g}_{_seed}"] = {
                "task": CopyTask(12, 6), "steps": 150, "lr": _lr, "warmup": 20, "seed": _seed,
                "config": TransformerConfig(12, 64, 1, 2, 128, 16, scale=_scale),
            }
