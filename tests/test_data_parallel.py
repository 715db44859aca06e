"""BatchParts: a batch's loss and gradients from parts of its rows equal the whole batch's (the weighted mean of
the parts' means), on every backend; on NumPy the parts run at the same time in worker processes, with BLAS held
to one thread; its errors, and the processes' end."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from multiprocessing.shared_memory import SharedMemory
from pathlib import Path

import numpy as np
import pytest

from attention_from_scratch.infra.allocator import freed_memory_kept
from attention_from_scratch.infra.blas import blas_thread_limit, blas_threads
from attention_from_scratch.model import part_processes
from attention_from_scratch.model.data_parallel import BatchParts
from attention_from_scratch.model.part_processes import PartProcesses
from attention_from_scratch.model.transformer import Transformer, TransformerConfig

CONFIG = TransformerConfig(vocab_size=7, d_model=8, n_heads=2, n_layers=2, d_ff=12, max_len=10)
TOKENS = np.random.default_rng(1).integers(0, 7, (5, 9))  # B = 5: parts of 2 and 3 rows, or 1, 2 and 2


def whole_and_parts(model, workers, tokens, targets=None):
    with BatchParts(model, workers) as parts:
        return model.loss_and_grads(tokens, targets), parts.loss_and_grads(tokens, targets)


def assert_same(a, b, rtol):
    (loss_a, grads_a), (loss_b, grads_b) = a, b
    assert loss_b == pytest.approx(loss_a, rel=rtol)
    assert grads_b.keys() == grads_a.keys()
    for name in grads_a:
        np.testing.assert_allclose(grads_b[name], grads_a[name], rtol=rtol, atol=rtol * 1e-2)


@pytest.mark.parametrize("workers", [2, 8])
def test_parts_give_the_whole_batch_loss_and_gradients(workers):
    """Next-token targets (targets=None): every row counts T - 1 positions; 8 workers on 5 rows: one row each."""
    assert_same(*whole_and_parts(Transformer(CONFIG, seed=2), workers, TOKENS), rtol=1e-12)


def test_parts_with_uneven_counts_are_weighted_by_the_positions_they_count():
    """Ignored targets (-1) in the first rows: the two parts count 2 and 21 positions, and the plain mean of
    their losses (unweighted) is another number; the weighted one is the whole batch's loss."""
    model = Transformer(CONFIG, seed=3)
    tokens, targets = TOKENS[:, :-1], TOKENS[:, 1:].copy()
    targets[:2, 1:] = -1  # rows 0 and 1 count 1 position each (part 1: rows 0-1)
    targets[2, :3] = -1  # row 2 counts 5, rows 3 and 4 count 8 each (part 2: rows 2-4)
    whole, parts = whole_and_parts(model, 2, tokens, targets)
    assert_same(whole, parts, rtol=1e-12)
    first, second = model.loss_and_grads(tokens[:2], targets[:2]), model.loss_and_grads(tokens[2:], targets[2:])
    assert abs((first[0] + second[0]) / 2 - whole[0]) > 1e-3  # the unweighted mean is a different number
    n_first, n_second = 2, int(np.sum(targets[2:] >= 0))
    assert whole[0] == pytest.approx((n_first * first[0] + n_second * second[0]) / (n_first + n_second), rel=1e-12)


def test_a_part_that_counts_nothing_adds_nothing():
    model = Transformer(CONFIG, seed=4)
    tokens, targets = TOKENS[:4, :-1], TOKENS[:4, 1:].copy()  # three parts: rows 0, 1 and 2-3
    targets[0] = -1  # the first part counts no position: the model alone would refuse it
    with pytest.raises(ValueError, match="at least one position"):
        model.loss_and_grads(tokens[:1], targets[:1])
    assert_same(*whole_and_parts(model, 3, tokens, targets), rtol=1e-12)
    targets[1] = -1  # now only the last part counts anything, so the plain call is made
    whole, parts = whole_and_parts(model, 3, tokens, targets)
    assert parts[0] == whole[0] and all(np.array_equal(parts[1][k], whole[1][k]) for k in whole[1])


def test_one_worker_and_one_row_are_the_plain_call_bit_for_bit():
    model = Transformer(CONFIG, seed=5)
    for workers, tokens in ((1, TOKENS), (4, TOKENS[:1])):
        whole, parts = whole_and_parts(model, workers, tokens)
        assert parts[0] == whole[0] and all(np.array_equal(parts[1][k], whole[1][k]) for k in whole[1])


def test_the_same_parts_give_the_same_bits_and_lists_are_accepted():
    model = Transformer(CONFIG, seed=6)
    with BatchParts(model, 2) as parts:
        a, b = parts.loss_and_grads(TOKENS), parts.loss_and_grads(TOKENS.tolist())
    assert a[0] == b[0] and all(np.array_equal(a[1][k], b[1][k]) for k in a[1])


def test_parts_equal_the_whole_batch_on_every_backend(xp):
    """The combination uses only the Array API: the parts' gradients stay on the model's backend, device and dtype."""
    model = Transformer(CONFIG, seed=7, xp=xp.ns, device=xp.device, dtype=xp.dtype)
    tokens = xp.asarray(TOKENS, dtype=np.int64)
    with BatchParts(model, 3) as parts:
        loss, grads = parts.loss_and_grads(tokens)
    whole_loss, whole = model.loss_and_grads(tokens)
    assert loss == pytest.approx(whole_loss, rel=xp.rtol)
    assert all(g.dtype == xp.dtype for g in grads.values())
    for name in whole:
        xp.assert_close(grads[name], whole[name])


class Spy(Transformer):
    """A Transformer whose every part leaves a note in the folder ``$SPY_DIR`` (the environment reaches the worker
    processes; a monkeypatched method would not): ``arrived-PID-N`` with the BLAS thread counts it saw and whether
    the process keeps freed memory (``infra/allocator.py``), then what
    ``$SPY_DIR/mode`` says ("meet": wait until two processes have arrived; "caller fails": the caller's part raises
    while the workers' parts sleep; "worker fails": a worker's part raises; "ctrl-c": the workers' parts sleep
    and the caller is sent SIGINT once it waits for them, "ctrl-c, ctrl-c" a second one while it closes them;
    "worker dies, caller fails": the worker process exits, the caller's part raises), then ``ended-PID-N``."""

    def loss_and_grads(self, tokens, targets=None):
        folder, pid = Path(os.environ["SPY_DIR"]), os.getpid()
        note = f"{pid}-{len(list(folder.glob(f'arrived-{pid}-*')))}"
        (folder / f"arrived-{note}").write_text(" ".join(map(str, blas_threads())) + f"; {freed_memory_kept()}")
        mode, in_caller = (folder / "mode").read_text(), pid == int(os.environ["SPY_CALLER"])
        try:
            if mode == "meet":
                deadline = time.monotonic() + 20
                while len({f.name.split("-")[1] for f in folder.glob("arrived-*")}) < 2:
                    if time.monotonic() > deadline:
                        raise TimeoutError("the other part never ran at the same time")
                    time.sleep(0.005)
            elif mode == "caller fails" and in_caller:
                raise ValueError("the caller's part is refused")
            elif mode == "caller fails":
                time.sleep(0.5)  # the caller's error is ready long before this part ends
            elif mode == "worker fails" and not in_caller:
                raise ValueError("a worker's part is refused")
            elif mode.startswith("ctrl-c") and in_caller:  # a Ctrl-C once the caller waits for the worker
                for seconds in (0.2, 0.5)[:mode.count("ctrl-c")]:  # "ctrl-c, ctrl-c": the second while it closes
                    ctrl_c = (threading.main_thread().ident, signal.SIGINT)
                    threading.Timer(seconds, signal.pthread_kill, ctrl_c).start()
            elif mode.startswith("ctrl-c"):
                time.sleep(1.0)
            elif mode == "worker dies, caller fails" and in_caller:
                raise ValueError("the caller's part is refused")
            elif mode == "worker dies, caller fails":
                os._exit(1)  # as the kernel's out-of-memory killer would end it
            return super().loss_and_grads(tokens, targets)
        finally:
            (folder / f"ended-{note}").write_text("")


@pytest.fixture
def spy_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SPY_DIR", str(tmp_path))
    monkeypatch.setenv("SPY_CALLER", str(os.getpid()))
    return tmp_path


def notes(folder, kind):
    """``{pid: [text of each note of that kind]}`` left by Spy's parts."""
    found = {}
    for f in sorted(folder.glob(f"{kind}-*")):
        found.setdefault(int(f.name.split("-")[1]), []).append(f.read_text())
    return found


@pytest.mark.skipif(not blas_threads(), reason="threadpoolctl (the dev extra) sets and reads BLAS's thread count")
def test_the_parts_run_at_the_same_time_in_processes_with_blas_held_to_one_thread(spy_dir, monkeypatch):
    """Each part waits until the other has arrived (so they overlap in time; a part alone would time out), the
    worker's in another process; each sees one BLAS thread, inside a caller's count of two that is back after.
    The worker takes the caller's allocator setting (here said to be set, without changing pytest's process)."""
    (spy_dir / "mode").write_text("meet")
    monkeypatch.setattr(part_processes, "freed_memory_kept", lambda: True)
    model = Spy(CONFIG, seed=8)
    with blas_thread_limit(2), BatchParts(model, 2) as parts:
        assert all(n == 2 for n in blas_threads())
        loss, grads = parts.loss_and_grads(TOKENS)
        assert all(n == 2 for n in blas_threads())
    arrived = notes(spy_dir, "arrived")
    assert len(arrived) == 2 and os.getpid() in arrived  # the caller and one worker process
    assert all(set(text.split(";")[0].split()) == {"1"} for texts in arrived.values() for text in texts)
    assert [text.split("; ")[1] for text in arrived[os.getpid()]] == ["False"]  # pytest's own allocator, untouched
    assert [text.split("; ")[1] for pid in arrived if pid != os.getpid() for text in arrived[pid]] == ["True"]
    assert_same((loss, grads), Transformer.loss_and_grads(model, TOKENS), rtol=1e-12)


def test_an_error_in_any_part_is_raised_after_every_part_has_ended(spy_dir):
    """Three parts (the caller's and two workers'). The caller's part fails at once while the workers' sleep: the
    error reaches the caller only once both have ended (nothing left running). Then a worker's part fails: its
    error, raised in the caller; the processes still serve the next batch."""
    model = Spy(CONFIG, seed=9)
    with BatchParts(model, 3) as parts:
        (spy_dir / "mode").write_text("caller fails")
        with pytest.raises(ValueError, match="the caller's part is refused"):
            parts.loss_and_grads(TOKENS)
        ended = notes(spy_dir, "ended")
        assert len(ended) == 3 and sum(map(len, ended.values())) == 3  # every part, each in its own process
        (spy_dir / "mode").write_text("worker fails")
        with pytest.raises(ValueError, match="a worker's part is refused"):
            parts.loss_and_grads(TOKENS)
        (spy_dir / "mode").write_text("")
        assert_same(parts.loss_and_grads(TOKENS), Transformer.loss_and_grads(model, TOKENS), rtol=1e-12)


def test_close_ends_the_processes_and_frees_the_memory_and_a_later_call_starts_new_ones():
    model = Transformer(CONFIG, seed=10)
    parts, before = BatchParts(model, 3), set(multiprocessing.active_children())
    first = parts.loss_and_grads(TOKENS)
    workers = set(multiprocessing.active_children()) - before
    assert len(workers) == 2  # parts 1 and 2 (the caller computes part 0)
    for process in workers:  # Ctrl-C reaches a terminal's whole process group: the workers leave it to the caller
        os.kill(process.pid, signal.SIGINT)
    again = parts.loss_and_grads(TOKENS)
    assert again[0] == first[0] and all(np.array_equal(again[1][k], first[1][k]) for k in first[1])
    names = parts._processes.block_names  # the shared-memory blocks: the parameters, parts 1 and 2's gradients
    assert len(names) == 3
    parts.close()
    assert not any(p.is_alive() for p in workers) and set(multiprocessing.active_children()) <= before
    for name in names:
        with pytest.raises(FileNotFoundError):
            SharedMemory(name=name)
    parts.close()  # a second close does nothing
    again = parts.loss_and_grads(TOKENS)
    assert again[0] == first[0]
    parts.close()


def test_a_refused_shared_memory_block_leaves_none_behind(monkeypatch):
    """The third block cannot be made (as when /dev/shm is full): the two made before it are freed, no process has
    started, and the error is the system's."""
    made, real = [], part_processes.SharedMemory

    def third_refused(*args, create=False, **kwargs):
        if create and len(made) == 2:
            raise OSError("No space left on device: /dev/shm")
        block = real(*args, create=create, **kwargs)
        made.append(block.name)
        return block

    monkeypatch.setattr(part_processes, "SharedMemory", third_refused)
    before = set(multiprocessing.active_children())
    with BatchParts(Transformer(CONFIG, seed=13), 3) as parts, pytest.raises(OSError, match="No space left"):
        parts.loss_and_grads(TOKENS)
    assert len(made) == 2 and set(multiprocessing.active_children()) <= before
    for name in made:
        with pytest.raises(FileNotFoundError):
            SharedMemory(name=name)


def test_the_workers_read_the_callers_parameters_at_every_call():
    """An optimizer replaces the caller's parameters between batches: the next call's parts see the new ones."""
    model = Transformer(CONFIG, seed=12)
    with BatchParts(model, 2) as parts:
        parts.loss_and_grads(TOKENS)
        model.params = {name: p * 0.5 for name, p in model.params.items()}
        assert_same(parts.loss_and_grads(TOKENS), model.loss_and_grads(TOKENS), rtol=1e-12)


def test_bad_inputs_are_refused_with_clear_messages():
    """The whole batch is checked before it is cut: the messages name the caller's shapes and values."""
    model = Transformer(CONFIG, seed=11)
    with pytest.raises(ValueError, match="workers"):
        BatchParts(model, 0)
    with BatchParts(model, 2) as parts:
        with pytest.raises(ValueError, match=r"tokens must be a non-empty \(B, T\) integer array, got int64 \(9,\)"):
            parts.loss_and_grads(TOKENS[0])
        with pytest.raises(ValueError, match=r"non-empty .* got float64 \(5, 9\)"):
            parts.loss_and_grads(TOKENS.astype(float))
        with pytest.raises(ValueError, match=r"non-empty .* \(0, 9\)"):  # an empty batch: no part to cut
            parts.loss_and_grads(TOKENS[:0])
        with pytest.raises(ValueError, match=r"targets must have the tokens' shape \(5, 8\), got \(5, 7\)"):
            parts.loss_and_grads(TOKENS[:, :-1], TOKENS[:, 2:])
        with pytest.raises(ValueError, match=r"lie in 0..vocab_size-1 = 6, got 0..13"):  # the whole batch's range
            parts.loss_and_grads(TOKENS + 7 * (np.arange(5)[:, None] == 4))
        with pytest.raises(ValueError, match="at least one position"):  # no part counts anything
            parts.loss_and_grads(TOKENS[:, :-1], np.full((5, 8), -1))


def test_the_returned_gradients_are_the_callers_own_arrays():
    """They outlive the shared memory they were computed in (views of it would point at freed memory once the
    processes are closed or collected) and the next call, which reuses that memory."""
    model = Transformer(CONFIG, seed=14)
    tokens, targets = model.inputs_and_targets(TOKENS)
    processes = PartProcesses(model, 2)
    first = processes.run(model, [(tokens[:2], targets[:2]), (tokens[2:], targets[2:])])
    processes.run(model, [(tokens[:3], targets[:3]), (tokens[3:], targets[3:])])  # writes part 1's block again
    processes.close()
    for got, part in zip(first, [(tokens[:2], targets[:2]), (tokens[2:], targets[2:])], strict=True):
        assert_same(got, model.loss_and_grads(*part), rtol=1e-12)


def test_part_processes_refuse_bad_arguments_before_making_anything(monkeypatch):
    made = []
    monkeypatch.setattr(part_processes, "SharedMemory", lambda *a, **k: made.append(1))
    model = Transformer(CONFIG, seed=15)
    for workers in (0, 1, 2.5, "2", True):
        with pytest.raises(ValueError, match=rf"workers \(the caller's .*\) must be an integer >= 2, got {workers!r}"):
            PartProcesses(model, workers)
    good = model.params
    for params, seen in ((None, "params None"), ({"w": [1.0, 2.0]}, r"params of types \['list'\]"), ({}, "params {}")):
        model.params = params
        with pytest.raises(TypeError, match=rf"model.params, a dict of NumPy arrays .* got Transformer with {seen}"):
            PartProcesses(model, 2)
    model.params = {**good, "embed": good["embed"].astype(np.float32)}  # the blocks hold one dtype: model.dtype
    with pytest.raises(TypeError, match=r"must all be model.dtype = float64 .* got float32 for \['embed'\]"):
        PartProcesses(model, 2)
    assert made == []


def test_run_refuses_parameters_that_changed_shape_or_dtype_before_writing_any():
    """The blocks were laid out for the parameters' names, dtype and shapes: a float64 or reshaped parameter, or one
    added, is refused (a silent cast would run the parts at two precisions), and the shared parameters are left as
    they were."""
    model = Transformer(CONFIG, seed=16, dtype=np.float32)
    tokens, targets = model.inputs_and_targets(TOKENS)
    parts = [(tokens[:2], targets[:2]), (tokens[2:], targets[2:])]
    processes = PartProcesses(model, 2)
    try:
        processes.run(model, parts)
        shared = {name: view.copy() for name, view in processes._views[0].items()}
        good = dict(model.params)
        for name, bad, seen in (("unembed", good["unembed"].astype(np.float64), r"float64 \(8, 7\)"),
                                ("0.w_1", good["0.w_1"][:, :6], r"float32 \(8, 6\)"),
                                ("embed", None, "'NoneType'"), ("extra", np.zeros(3, np.float32), None)):
            model.params = {**{k: v * 2 for k, v in good.items()}, name: bad}  # every other parameter changed
            message = (rf"model.params\['{name}'\] must stay a float32 array of shape \(.*\) \(as when these "
                       rf"processes were made\), got {seen}" if seen else r"must keep the names .* \['extra'\] added")
            with pytest.raises(ValueError, match=message):
                processes.run(model, parts)
            assert all(np.array_equal(processes._views[0][k], shared[k]) for k in shared)
        model.params = good
        for wrong in ([], parts * 2):
            with pytest.raises(ValueError, match=rf"parts must be 1 to 2 \(tokens, targets\) .* got {len(wrong)}"):
                processes.run(model, wrong)
        assert not processes.closed
        assert_same(processes.run(model, parts)[1], model.loss_and_grads(*parts[1]), rtol=1e-6)
    finally:
        processes.close()


@pytest.mark.parametrize("presses", ["ctrl-c", "ctrl-c, ctrl-c"])
def test_ctrl_c_while_parts_run_ends_the_processes_and_the_next_call_starts_new_ones(spy_dir, presses):
    """SIGINT reaches the caller while it waits for a worker's part: the KeyboardInterrupt comes out of the call
    only once that part has ended and its processes are closed (a part left running would write into the next
    call's gradients); the next call starts new processes and gives the whole batch's numbers. A second SIGINT
    while the call closes the processes (waiting for the part) cuts the wait short, but the shared memory is freed
    all the same, and the worker ends once its part has."""
    model = Spy(CONFIG, seed=17)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # (older pytest-xdist workers ignore it)
    try:
        with BatchParts(model, 2) as parts:
            (spy_dir / "mode").write_text("")
            parts.loss_and_grads(TOKENS)  # the worker process is up: its part starts at once
            (worker,) = parts._processes._pool._processes.values()
            for note in spy_dir.glob("*ed-*"):
                note.unlink()
            (spy_dir / "mode").write_text(presses)
            with pytest.raises(KeyboardInterrupt):
                parts.loss_and_grads(TOKENS)
            cut = parts._processes
            assert cut.closed
            for name in cut.block_names:
                with pytest.raises(FileNotFoundError):
                    SharedMemory(name=name)
            if presses == "ctrl-c":
                assert len(notes(spy_dir, "ended")) == 2 and not worker.is_alive()  # the worker's part had ended
            else:
                assert len(notes(spy_dir, "ended")) == 1  # the caller's only: the wait for the worker was cut short
                # the pool's own thread ends the worker and reaps it; a join here can race that thread's (both wait
                # for the one exit status: the loser's join returns while the Process still reads as alive until the
                # winner records it), so wait for it to read as ended
                deadline = time.monotonic() + 20
                while worker.is_alive() and time.monotonic() < deadline:
                    time.sleep(0.02)
                assert len(notes(spy_dir, "ended")) == 2 and not worker.is_alive()
            (spy_dir / "mode").write_text("")
            assert_same(parts.loss_and_grads(TOKENS), Transformer.loss_and_grads(model, TOKENS), rtol=1e-12)
            assert parts._processes is not cut
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_as_a_part_is_handed_to_a_worker_ends_the_processes(monkeypatch):
    """The KeyboardInterrupt comes out of the pool's submit after the part was queued (the moment SIGINT lands on
    the statement after the put): the call knows fewer parts than run, so it closes the processes (waiting for
    that part) rather than leave it to write into the next call's gradients."""
    model = Transformer(CONFIG, seed=20)
    tokens, targets = model.inputs_and_targets(TOKENS)
    processes = PartProcesses(model, 3)
    parts = [(tokens[:1], targets[:1]), (tokens[1:3], targets[1:3]), (tokens[3:], targets[3:])]
    processes.run(model, parts)
    workers = list(processes._pool._processes.values())
    real = processes._pool.submit

    def queued_then_interrupted(*args):
        real(*args)
        raise KeyboardInterrupt

    monkeypatch.setattr(processes._pool, "submit", queued_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        processes.run(model, parts)
    assert processes.closed and not any(w.is_alive() for w in workers)
    with pytest.raises(RuntimeError, match="these worker processes are closed: make a new PartProcesses"):
        processes.run(model, parts)


class OtherConstructor(Transformer):
    """A subclass the workers cannot rebuild as ``cls(config, dtype=...)``."""

    def __init__(self, config, scale, dtype=np.float64):
        super().__init__(config, seed=18, dtype=dtype)
        self.scale = scale


def test_a_dead_worker_gives_a_clear_error_and_the_next_call_starts_new_processes(spy_dir):
    """A worker killed between calls (as by the kernel when memory runs out), and workers that cannot rebuild the
    model: a RuntimeError that says what happened (not concurrent.futures' BrokenProcessPool on every later call),
    the processes closed, and the next call starts new ones."""
    model = Spy(CONFIG, seed=19)
    (spy_dir / "mode").write_text("")  # as a Transformer, until told otherwise
    with BatchParts(model, 2) as parts:
        first = parts.loss_and_grads(TOKENS)
        (worker,) = parts._processes._pool._processes.values()
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(10)
        with pytest.raises(RuntimeError, match=r"a worker process ended before its part was done .* closed"):
            parts.loss_and_grads(TOKENS)
        assert parts._processes.closed
        again = parts.loss_and_grads(TOKENS)
        assert again[0] == first[0]
    with BatchParts(model, 2) as parts:  # the worker dies during a call whose own part fails: closed too
        parts.loss_and_grads(TOKENS)
        (spy_dir / "mode").write_text("worker dies, caller fails")
        with pytest.raises(RuntimeError, match="a worker process ended before its part was done"):
            parts.loss_and_grads(TOKENS)
        assert parts._processes.closed
        (spy_dir / "mode").write_text("")
        assert parts.loss_and_grads(TOKENS)[0] == first[0]
    with BatchParts(OtherConstructor(CONFIG, 2.0), 2) as parts:
        for _ in range(2):
            with pytest.raises(RuntimeError, match=r"rebuild the model as OtherConstructor\(config, dtype=...\)"):
                parts.loss_and_grads(TOKENS)


CALLER_KILLED = """
import os, signal
import numpy as np
from attention_from_scratch.model.data_parallel import BatchParts
from attention_from_scratch.model.transformer import Transformer, TransformerConfig

parts = BatchParts(Transformer(TransformerConfig(7, 8, 2, 1, 12, 10), seed=1), 3)
parts.loss_and_grads(np.random.default_rng(1).integers(0, 7, (4, 9)))
workers = [p.pid for p in parts._processes._pool._processes.values()]
print(" ".join(map(str, workers)), " ".join(parts._processes.block_names), flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # no cleanup can run: the workers must notice on their own
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and /dev/shm")
def test_workers_end_and_their_memory_is_freed_when_the_caller_is_killed():
    run = subprocess.run([sys.executable, "-c", CALLER_KILLED], capture_output=True, text=True, timeout=60)
    assert run.returncode == -signal.SIGKILL, run.stderr
    words = run.stdout.split()
    pids, names = [int(w) for w in words[:2]], words[2:]
    assert len(names) == 3

    def gone():
        alive = [pid for pid in pids if Path(f"/proc/{pid}/stat").exists()
                 and Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"]  # a zombie has ended
        return not alive and not any(Path("/dev/shm", name.lstrip("/")).exists() for name in names)

    deadline = time.monotonic() + 20
    while not gone() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert gone()


def test_parts_in_threads_give_the_same_bits_as_in_processes_and_run_at_the_same_time():
    """in_threads=True: the parts beyond the first on threads of this process, the same arithmetic as in worker
    processes (one BLAS thread each, combined in the same order): the same bits; no process is started."""
    model, before = Transformer(CONFIG, seed=21), set(multiprocessing.active_children())
    with BatchParts(model, 3) as in_processes:
        expected = in_processes.loss_and_grads(TOKENS)
    seen, both = set(), threading.Barrier(3, timeout=10)  # every part waits for the others: they run at once

    class Meeting(Transformer):
        def loss_and_grads(self, tokens, targets=None):
            seen.add(threading.current_thread().name)
            both.wait()
            return super().loss_and_grads(tokens, targets)

    met = Meeting(CONFIG, seed=21)
    with BatchParts(met, 3, in_threads=True) as in_threads:
        loss, grads = in_threads.loss_and_grads(TOKENS)
        assert set(multiprocessing.active_children()) <= before  # threads only
        assert len(seen) == 3 and sum(name.startswith("attention_from_scratch-part") for name in seen) == 2
    assert loss == expected[0] and all(np.array_equal(grads[k], expected[1][k]) for k in grads)
    assert not any(t.name.startswith("attention_from_scratch-part") for t in threading.enumerate())  # closed
    with pytest.raises(TypeError, match="in_threads must be True or False, got 'yes'"):
        BatchParts(model, 2, in_threads="yes")


def test_parts_in_threads_raise_an_error_once_every_part_has_ended_and_serve_the_next_batch():
    ended, fail = [], {"part": None}

    class Failing(Transformer):
        def loss_and_grads(self, tokens, targets=None):
            try:
                if tokens.shape[0] == fail["part"]:  # parts of 1 and 2 rows when B = 3 ... here 5 rows: 2 and 3
                    raise ValueError(f"a part of {tokens.shape[0]} rows is refused")
                time.sleep(0.2)
                return super().loss_and_grads(tokens, targets)
            finally:
                ended.append(tokens.shape[0])

    model = Failing(CONFIG, seed=22)
    with BatchParts(model, 2, in_threads=True) as parts:
        for rows in (2, 3):  # the caller's part (rows 0-1), then the thread's (rows 2-4)
            fail["part"], ended[:] = rows, []
            with pytest.raises(ValueError, match=f"a part of {rows} rows is refused"):
                parts.loss_and_grads(TOKENS)
            assert sorted(ended) == [2, 3]  # the other part had ended too, although it slept
        fail["part"] = None
        assert_same(parts.loss_and_grads(TOKENS), Transformer.loss_and_grads(model, TOKENS), rtol=1e-12)
