"""Training on text: held-out scoring, checkpoints, resume after an interruption, early stopping, the command."""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attention_from_scratch import Transformer, TransformerConfig
from attention_from_scratch.softmax import log_softmax
from attention_from_scratch.text import CharTokenizer, Corpus
from attention_from_scratch.text.checkpoints import load_checkpoint, save_checkpoint
from attention_from_scratch.text.evaluate import held_out_stream, model_log_probs
from attention_from_scratch.text.generation import PRETRAINED
from attention_from_scratch.text.progress import Progress, clock
from attention_from_scratch.text.train_cli import main, report
from attention_from_scratch.text.trainer import TrainOptions, learning_rate, make_batch, train_on_text

POEMS = ["床前明月光，疑是地上霜。\n举头望明月，低头思故乡。", "春眠不觉晓，处处闻啼鸟。\n夜来风雨声，花落知多少。",
         "白日依山尽，黄河入海流。\n欲穷千里目，更上一层楼。", "红豆生南国，春来发几枝。\n愿君多采撷，此物最相思。"] * 3
TOK = CharTokenizer.train("".join(POEMS))
TINY = TrainOptions(d_model=16, n_heads=2, n_layers=1, d_ff=32, context=16, batch_size=4, steps=12, lr=1e-2,
                    warmup=2, eval_every=4, patience=0, dtype="float64")


def streams():
    train, held = Corpus("p", tuple(POEMS[:8])), Corpus("p", tuple(POEMS[8:10]))
    return np.asarray(TOK.encode(train.text)), held_out_stream(TOK, held)


def test_held_out_stream_counts_the_characters_its_predicted_tokens_spell():
    held = held_out_stream(TOK, Corpus("p", ("春眠🙂", "ab")))  # 🙂 unseen: 4 byte tokens
    assert TOK.decode(held.ids) == "\n\n春眠🙂\n\nab" and held.n_chars == len("\n春眠🙂\n\nab")


def test_strided_scoring_gives_each_token_its_log_prob_from_a_window_with_enough_context():
    model = Transformer(TransformerConfig(TOK.vocab_size, 16, 2, 1, 32, 40), seed=0)
    ids = np.asarray(TOK.encode("\n\n" + POEMS[0] + POEMS[1]))

    def logp(i, s):  # ln p(ids[i] | ids[s:i]) from one forward pass
        return float(log_softmax(model.logits(ids[None, s:i]), axis=-1)[0, -1, ids[i]])

    short = model_log_probs(model, ids[:30])  # fits one window: exactly the full pass
    np.testing.assert_allclose(short, [logp(i, 0) for i in range(1, 30)], atol=1e-12)
    width = 12
    got = model_log_probs(model, ids, context=width, batch_size=3)
    for i in range(1, len(ids)):  # some window start s with width/2 <= i - s <= width (or s = 0) scored it
        candidates = [logp(i, s) for s in range(max(0, i - width), i) if s == 0 or i - s >= width // 2]
        assert min(abs(got[i - 1] - c) for c in candidates) < 1e-12, i


def test_learning_rate_warms_up_then_follows_a_cosine():
    o = TrainOptions(lr=1.0, warmup=4, steps=104, min_lr_ratio=0.1)
    assert [learning_rate(s, o) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert learning_rate(54, o) == pytest.approx(0.55) and learning_rate(104, o) == pytest.approx(0.1)


def test_batches_are_windows_of_the_stream_and_noise_touches_only_the_inputs():
    stream = np.arange(1000) % 97  # every token tells where it is: window k + 1 follows window k
    o = TrainOptions(context=32, batch_size=64)
    tokens, targets = make_batch(stream, np.random.default_rng(0), o)
    assert tokens.shape == targets.shape == (64, 32) and np.all((tokens + 1) % 97 == targets)
    noise = TrainOptions(**{**o.__dict__, "input_noise": 0.5})
    noisy, clean_targets = make_batch(stream, np.random.default_rng(0), noise)
    assert np.array_equal(clean_targets, targets)  # the same windows: only the inputs change
    changed = np.mean((noisy + 1) % 97 != clean_targets)
    assert 0.4 < changed < 0.6  # half redrawn from the unigram distribution (1/97 of redraws hit the same token)


def test_training_keeps_the_best_checkpoint_and_it_loads(tmp_path):
    train_ids, held = streams()
    run = train_on_text(train_ids, held, TOK, TINY, tmp_path / "run", meta={"note": "x"})
    h = run.history
    assert h["step"] == [4, 8, 12] and run.best_loss == min(h["held_out"]) < h["held_out"][0]
    model, tok, meta = load_checkpoint(tmp_path / "run" / "best.npz")
    assert tok == TOK and meta["note"] == "x" and meta["step"] == run.best_step
    assert held.nats_per_char(model_log_probs(model, held.ids)) == pytest.approx(run.best_loss, rel=1e-12)
    assert run.stopped == "reached steps=12"


def test_an_interrupted_run_resumes_to_the_same_parameters(tmp_path):
    train_ids, held = streams()
    averaged = TrainOptions(**{**TINY.__dict__, "ema": 0.8, "input_noise": 0.1})  # the rng and the average resume too
    straight = train_on_text(train_ids, held, TOK, averaged, tmp_path / "a")

    def interrupt(step, state):
        if step == 8:
            raise KeyboardInterrupt

    cut = train_on_text(train_ids, held, TOK, averaged, tmp_path / "b", callback=interrupt, log=lambda _: None)
    assert cut.stopped == "interrupted" and cut.history["step"] == [4, 8]
    resumed = train_on_text(train_ids, held, TOK, averaged, tmp_path / "b", resume=True)
    assert resumed.history["held_out"] == straight.history["held_out"]  # same batches, same arithmetic
    for name in ("last", "best"):
        a, b = (load_checkpoint(tmp_path / d / name)[0].params for d in "ab")
        assert all(np.array_equal(a[k], b[k]) for k in a)
    with pytest.raises(FileExistsError, match="resume"):
        train_on_text(train_ids, held, TOK, TINY, tmp_path / "a")
    with pytest.raises(ValueError, match="same model options"):
        train_on_text(train_ids, held, TOK, TrainOptions(**{**TINY.__dict__, "d_model": 32}), tmp_path / "a",
                      resume=True)


def test_batch_parts_train_as_the_whole_batch_does_and_resume_to_the_same_bits(tmp_path, monkeypatch):
    """workers=2 (two parts of each batch, the second in a worker process): every step goes through BatchParts
    with two workers, the same losses as one worker up to rounding (float64), and an interrupted run resumes to
    the very same parameters as a straight one."""
    from attention_from_scratch.model.data_parallel import BatchParts
    from attention_from_scratch.text import trainer

    calls = []

    class Recorded(BatchParts):
        def loss_and_grads(self, tokens, targets=None):
            calls.append(self.workers)
            return super().loss_and_grads(tokens, targets)

    monkeypatch.setattr(trainer, "BatchParts", Recorded)
    train_ids, held = streams()
    parts = TrainOptions(**{**TINY.__dict__, "workers": 2})
    plain = train_on_text(train_ids, held, TOK, TINY, tmp_path / "a")
    assert calls == [1] * TINY.steps  # one worker: the plain call, through the same object
    calls.clear()
    straight = train_on_text(train_ids, held, TOK, parts, tmp_path / "b")
    assert calls == [2] * TINY.steps
    np.testing.assert_allclose(straight.history["held_out"], plain.history["held_out"], rtol=1e-9)

    def interrupt(step, state):
        if step == 8:
            raise KeyboardInterrupt

    train_on_text(train_ids, held, TOK, parts, tmp_path / "c", callback=interrupt, log=lambda _: None)
    resumed = train_on_text(train_ids, held, TOK, parts, tmp_path / "c", resume=True)
    assert resumed.history["held_out"] == straight.history["held_out"]
    b, c = (load_checkpoint(tmp_path / d / "last")[0].params for d in "bc")
    assert all(np.array_equal(b[k], c[k]) for k in b)
    with pytest.raises(ValueError, match="threads must be 1, got 2"):
        train_on_text(train_ids, held, TOK, TrainOptions(**{**parts.__dict__, "threads": 2}), tmp_path / "d")
    with pytest.raises(ValueError, match="workers"):
        train_on_text(train_ids, held, TOK, TrainOptions(**{**TINY.__dict__, "workers": 0}), tmp_path / "e")
    assert not (tmp_path / "d").exists() and not (tmp_path / "e").exists()  # refused before anything is written
    # the parts beyond the first on threads of this process: the same arithmetic, the same bits
    threaded = train_on_text(train_ids, held, TOK, TrainOptions(**{**parts.__dict__, "parts_in": "threads"}),
                             tmp_path / "f")
    assert threaded.history["held_out"] == straight.history["held_out"]
    f = load_checkpoint(tmp_path / "f" / "last")[0].params
    assert all(np.array_equal(b[k], f[k]) for k in b)
    with pytest.raises(ValueError, match="parts_in must be 'processes' or 'threads', got 'thread'"):
        TrainOptions(**{**parts.__dict__, "parts_in": "thread"})


def test_ctrl_c_in_the_middle_of_a_step_resumes_to_the_same_bits(tmp_path, monkeypatch):
    """A real SIGINT while a step's gradients are computed (step 6: that batch is drawn again on resume) and while
    Adam is half-way through its parameters: at step 9 (the update ends first, then the run stops), at step 8 (an
    evaluation is due: it runs, and is saved, before the run stops) and at step 12, the last (the resumed run
    trains no further). Each resumed run, with its training losses since the last evaluation, ends where a straight
    run ends, bit for bit. A second Ctrl-C during the interrupted run's save waits for the save, then is dropped."""
    import signal

    from attention_from_scratch.model.transformer import Transformer as Plain
    from attention_from_scratch.text import trainer

    train_ids, held = streams()
    straight = train_on_text(train_ids, held, TOK, TINY, tmp_path / "a")
    calls, ends = [0], {}

    class Interrupted(Plain):
        def loss_and_grads(self, tokens, targets=None):
            calls[0] += 1
            if calls[0] == 6:
                signal.raise_signal(signal.SIGINT)  # Python's handler: KeyboardInterrupt, here
            return super().loss_and_grads(tokens, targets)

    saves = {}

    def save_twice_interrupted(*args):  # trainer._save_last, recording the steps it saves
        saves.setdefault(name, []).append(args[5]["step"])
        if isinstance(sys.exc_info()[1], KeyboardInterrupt):  # the interrupted run's save: a second Ctrl-C
            signal.raise_signal(signal.SIGINT)
        real_save(*args)

    real_save = trainer._save_last
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # a terminal's Ctrl-C (a test runner's
    try:  # worker may ignore SIGINT: older pytest-xdist's do)
        for name, patch in (("gradients", ("Transformer", Interrupted)), ("update", ("Adam", _adam_cut_at(9))),
                            ("evaluation", ("Adam", _adam_cut_at(8))), ("last", ("Adam", _adam_cut_at(12)))):
            calls[0] = 0
            with monkeypatch.context() as m:
                m.setattr(trainer, *patch)
                m.setattr(trainer, "_save_last", save_twice_interrupted)
                try:
                    first = train_on_text(train_ids, held, TOK, TINY, tmp_path / name, log=lambda _: None)
                except KeyboardInterrupt:
                    pytest.fail(f"{name}: the second Ctrl-C escaped train_on_text")
            ends[name] = _resume_and_compare(first, name, train_ids, held, straight, tmp_path, TINY)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert ends == {"gradients": 5, "update": 9, "evaluation": 8, "last": 12}
    assert saves == {"gradients": [4, 5], "update": [4, 8, 9], "evaluation": [4, 8, 8], "last": [4, 8, 12, 12]}


def _adam_cut_at(update):
    """Adam whose ``update``-th step is split in two calls with a real SIGINT between them (held until it is whole)."""
    import signal

    from attention_from_scratch.text import trainer

    class HalfWay(trainer.Adam):
        def step(self, grads):
            first, *rest = grads.items()
            super().step(dict([first]))
            self.t -= 1  # one step, in two calls
            if self.t + 1 == update:
                signal.raise_signal(signal.SIGINT)
            super().step(dict(rest))

    return HalfWay


def _resume_and_compare(first, name, train_ids, held, straight, tmp_path, options):
    """The step where the interrupted run stopped, after checking that its resumed run ends as ``straight`` did
    (where, with the same training losses and held-out losses, the same parameters and the same reason)."""
    end = json.loads((tmp_path / name / "last.json").read_text())["meta"]["state"]["step"]
    assert first.stopped == ("interrupted" if end < straight.history["step"][-1] else straight.stopped)
    resumed = train_on_text(train_ids, held, TOK, options, tmp_path / name, resume=True)
    for key in ("step", "train", "held_out"):  # the training losses' means too (not the seconds)
        assert resumed.history[key] == straight.history[key], key
    a, b = (load_checkpoint(tmp_path / d / "last")[0].params for d in ("a", name))
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert resumed.stopped == straight.stopped
    return end


@pytest.mark.parametrize("rule", ["early stopping", "time budget"])
def test_ctrl_c_in_the_update_of_the_step_that_ends_the_run_resumes_to_that_end(tmp_path, monkeypatch, rule):
    """The run ends at an evaluation (no new best for ``patience`` evaluations, or the time budget spent); a Ctrl-C
    held during that step's update: the evaluation runs, ends the run (its reason kept), and the resumed run, at
    the same options, trains no further."""
    import signal

    from attention_from_scratch.text import trainer

    options = TrainOptions(**{**TINY.__dict__, **({"lr": 0.5, "patience": 1, "steps": 40} if rule == "early stopping"
                                                    else {"time_budget": 0.0})})
    train_ids, held = streams()
    straight = train_on_text(train_ids, held, TOK, options, tmp_path / "a")
    assert rule in straight.stopped and straight.history["step"][-1] < options.steps
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with monkeypatch.context() as m:
            m.setattr(trainer, "Adam", _adam_cut_at(straight.history["step"][-1]))
            first = train_on_text(train_ids, held, TOK, options, tmp_path / "b", log=lambda _: None)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert _resume_and_compare(first, "b", train_ids, held, straight, tmp_path, options) == straight.history["step"][-1]


def test_the_saved_model_is_the_moving_average_of_the_parameters(tmp_path):
    train_ids, held = streams()
    options = {**TINY.__dict__, "ema": 0.5, "warmup": 5}  # the first steps' lr does not depend on steps
    train_on_text(train_ids, held, TOK, TrainOptions(**{**options, "steps": 1, "eval_every": 1}), tmp_path / "a")
    train_on_text(train_ids, held, TOK, TrainOptions(**{**options, "steps": 2, "eval_every": 2}), tmp_path / "b")
    theta_0 = Transformer(TINY.model_config(TOK.vocab_size), seed=TINY.seed).params
    theta_1, theta_2 = (load_checkpoint(tmp_path / d / "last")[0].params for d in "ab")
    best = load_checkpoint(tmp_path / "b" / "best")[0].params
    beta_0, beta_1 = 1 / 10, 2 / 11  # min(0.5, (1 + t) / (10 + t)) at t = 0, 1
    for name in best:
        average = beta_1 * (beta_0 * theta_0[name] + (1 - beta_0) * theta_1[name]) + (1 - beta_1) * theta_2[name]
        np.testing.assert_allclose(best[name], average, rtol=1e-12, atol=1e-15)
    assert not np.allclose(best["0.w_q"], theta_2["0.w_q"])


def test_early_stopping_and_the_time_budget(tmp_path):
    train_ids, held = streams()
    run = train_on_text(train_ids, held, TOK, TrainOptions(**{**TINY.__dict__, "lr": 0.5, "patience": 1,
                                                              "steps": 40}), tmp_path / "a")
    assert "early stopping" in run.stopped and len(run.history["step"]) < 10
    run = train_on_text(train_ids, held, TOK, TrainOptions(**{**TINY.__dict__, "time_budget": 0.0}), tmp_path / "b")
    assert "time budget" in run.stopped and run.history["step"] == [4]


def test_checkpoint_refuses_a_wrong_shape(tmp_path):
    model = Transformer(TransformerConfig(TOK.vocab_size, 16, 2, 1, 32, 16), seed=0)
    save_checkpoint(tmp_path / "m", model, TOK)
    info = json.loads((tmp_path / "m.json").read_text())
    info["config"]["d_ff"] = 64
    (tmp_path / "m.json").write_text(json.dumps(info))
    with pytest.raises(ValueError, match=r"'0.w_1' should be \(16, 64\), got \(16, 32\)"):
        load_checkpoint(tmp_path / "m")
    with pytest.raises(FileNotFoundError, match=r"NAME\.npz beside NAME\.json"):
        load_checkpoint(tmp_path / "none")


def test_progress_prints_one_line_per_evaluation_off_a_terminal():
    stream = io.StringIO()
    p = Progress(100, stream=stream)
    p.step(10, 640, train=2.5)
    assert stream.getvalue() == ""
    p.evaluated(10, 2.25, 2.25, 10)
    line = stream.getvalue()
    assert line.count("\n") == 1 and "step   10/100" in line and "held-out 2.250 (best 2.250 @10)" in line
    assert "tok/s" in line and "train 2.500" in line
    assert clock(75.2) == "1:15" and clock(3725) == "1:02:05" and math.isnan(Progress(5).train)


@pytest.fixture
def kept(monkeypatch):
    """The command's call of ``keep_freed_memory``, recorded instead of made: it would change this whole
    test process's allocator (tests/test_allocator.py runs it in a child process)."""
    from attention_from_scratch.text import train_cli

    calls = []
    monkeypatch.setattr(train_cli, "keep_freed_memory", lambda: calls.append(1) or True)
    return calls


def test_the_command_trains_on_a_text_file_and_prints_the_comparison(tmp_path, capsys, kept):
    path = tmp_path / "poems.txt"
    path.write_text("\n\n".join(POEMS[:4]), encoding="utf-8")
    (tmp_path / "more.txt").write_text("\n\n".join(p[::-1] for p in POEMS[:4]), encoding="utf-8")
    args = ["--corpus", str(path), "--extra", str(tmp_path / "more.txt"), "--held-out", "0.25", "--d-model", "16",
            "--n-heads", "2", "--n-layers", "1", "--d-ff", "32", "--context", "16", "--batch-size", "4", "--steps",
            "6", "--eval-every", "3", "--workers", "2", "--out", str(tmp_path / "out")]
    assert main(args) == 0 and kept == [1]
    out = capsys.readouterr().out
    assert "unigram (add-1)" in out and "Kneser-Ney" in out and "Transformer (best, step" in out and "nats" in out
    _, _tok, meta = load_checkpoint(tmp_path / "out" / "best")
    assert meta["options"]["workers"] == 2  # the batch in two parts (model/data_parallel.py)
    assert meta["command"] == "python -m attention_from_scratch train " + " ".join(args[:2] + args[-2:] + args[2:-2])
    assert all(name in out for name in meta["baselines"])


def test_the_package_command_trains_in_seconds_and_writes_only_into_out(tmp_path, capsys, kept):
    """``python -m attention_from_scratch train``: the same options, the run in --out, nothing else written."""
    from attention_from_scratch import __main__ as cli

    root = Path(__file__).resolve().parents[1]
    before = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout
    path, extra = tmp_path / "poems.txt", tmp_path / "more.txt"
    path.write_text("\n\n".join(POEMS), encoding="utf-8")
    extra.write_text("\n\n".join(POEMS[:2]), encoding="utf-8")
    args = ["train", "--corpus", str(path), "--out", str(tmp_path / "run"), "--extra", str(extra), "--d-model", "16",
            "--n-heads", "2", "--n-layers", "1", "--d-ff", "32", "--context", "16", "--batch-size", "4", "--steps", "4",
            "--eval-every", "2"]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{path} + {extra}: ")  # what the training side holds, the added text named
    assert "Transformer (best, step" in out and "bigram (Kneser-Ney)" in out
    _, _, meta = load_checkpoint(tmp_path / "run" / "best")
    assert meta["command"] == "python -m attention_from_scratch " + " ".join(args)
    assert meta["options"]["steps"] == 4 and meta["options"]["d_model"] == 16
    assert cli.main(["train", "--corpus", str(tmp_path / "missing.txt")]) == 2  # a clear error, no traceback
    assert "no text file" in capsys.readouterr().err
    after = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout
    assert after == before  # no runs/ folder, no checkpoint, nothing written into the repository
    help_text = subprocess.run([sys.executable, "-m", "attention_from_scratch", "train", "--help"], cwd=root,
                               capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)}).stdout
    assert "--corpus" in help_text and "--steps" in help_text and "--resume" in help_text


def test_the_report_says_which_baselines_are_not_beaten():
    table = report({"unigram": 3.0, "5-gram": 1.4}, 1.5, 700)
    assert "Transformer (best, step 700)   1.500   2.164" in table and table.endswith("does NOT beat: 5-gram")
    assert report({"unigram": 3.0}, 1.5, 7).endswith("the Transformer beats every baseline")


def test_the_numbers_page_quotes_the_committed_checkpoints():
    """docs/guide/numbers.md's real-text table: every loss as stored in the checkpoints' meta."""
    page = Path(__file__).resolve().parents[1] / "docs" / "guide" / "numbers.md"
    if not page.is_file():
        pytest.skip("docs/ not in this checkout")
    cells = [[c.strip().replace("**", "") for c in line.split("|")[1:4]] for line in page.read_text().splitlines()
             if line.startswith("| ")]
    rows = {name.split(" (best")[0]: (tang, devil) for name, tang, devil in cells}
    for column, corpus in enumerate(("tang", "devil")):
        meta = json.loads((PRETRAINED / f"{corpus}.json").read_text(encoding="utf-8"))["meta"]
        base = meta["baselines"]
        expected = {name: base[name] for name in ("unigram (add-1)", "bigram (add-1)", "bigram (Kneser-Ney)")}
        for kind in ("Kneser-Ney", "modified Kneser-Ney"):
            expected[f"best n-gram ({kind})"] = min(v for k, v in base.items() if k.endswith(f"-gram ({kind})"))
        expected["Transformer"] = meta["held_out_nats_per_char"]
        for name, nats in expected.items():
            assert rows[name][column].startswith(f"{nats:.3f} ({nats / math.log(2):.3f})"), (corpus, name)
        assert f"step {meta['step']}" in rows["Transformer"][column]
