"""``python -m attention_from_scratch``: the tour runs, prints checked numbers, and fails clearly."""

import argparse
import gettext
import inspect
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import array_api_strict
import numpy as np
import pytest

from attention_from_scratch import __main__ as cli
from attention_from_scratch.course import command_line, tour
from attention_from_scratch.course.i18n import ENV_VAR, render
from attention_from_scratch.infra.backend import gpu_available
from attention_from_scratch.text import train_cli

ROOT = Path(__file__).resolve().parents[1]
NUMPY_ONLY_SECTIONS = {"_tour_training"}  # trains on NumPy whatever the backend (notebook 13 covers the others)


@pytest.fixture(scope="module")
def tour_run():
    """``python -m attention_from_scratch`` (the tour, in English on NumPy) as a user runs it: once per module."""
    return subprocess.run([sys.executable, "-m", "attention_from_scratch"], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120, check=False)


@pytest.fixture(scope="module")
def tour_output(tour_run):
    assert tour_run.returncode == 0, tour_run.stderr
    return tour_run.stdout


def test_tour_runs_and_prints_the_key_numbers(tour_output):
    out = tour_output
    assert "All checks passed." in out
    # the numbers, computed here independently of the package
    assert "= 17" in out
    assert f"{17 / math.sqrt(30 * 14):.4f}" in out  # cos θ
    assert f"{math.sqrt(30):.4f}" in out  # |a|
    z = math.e + math.e**2 + math.e**3
    assert f"[{math.e / z:.4f} {math.e**2 / z:.4f} {math.e**3 / z:.4f}]" in out  # softmax([1, 2, 3])
    assert f"{1 / (1 + math.exp(-10) + math.exp(-20)):.5f}]" in out  # softmax([10, 20, 30])[2]
    assert "nan" in out  # the naive softmax of [1000, 0]
    for row in ("1 0 0 0", "1 1 0 0", "1 1 1 0", "1 1 1 1"):
        assert row in out
    assert "cat" in out and "eats" in out and "fish" in out


def test_tour_sub_command_is_the_default(monkeypatch):
    # no sub-command and "tour" reach the same function (the tour's output: tour_output above)
    ran = []
    monkeypatch.setattr(tour, "run_tour", lambda backend, lang="en": ran.append((backend, lang)) or 0)
    assert cli.main(["tour"]) == 0 and cli.main([]) == 0
    assert ran == [("numpy", "en"), ("numpy", "en")]


def test_every_section_but_training_uses_only_the_array_api_standard(capsys):
    # array-api-strict refuses anything outside the standard: the tour then runs on CuPy too
    names = [fn.__name__ for _, fn in tour.TOUR_SECTIONS if fn.__name__ not in NUMPY_ONLY_SECTIONS]
    assert len(names) == len(tour.TOUR_SECTIONS) - 1
    for _, fn in tour.TOUR_SECTIONS:
        if fn.__name__ not in NUMPY_ONLY_SECTIONS:
            fn(array_api_strict)
    assert f"{17 / math.sqrt(30 * 14):.4f}" in capsys.readouterr().out


def test_every_section_names_the_notebooks_that_explain_it():
    """Each section says where the course explains it (a newcomer's next step): one or two notebooks of the course,
    printed under its title in both languages."""
    from attention_from_scratch.course import parts

    numbers = {nb.stem[:2] for nb in parts.COURSE}
    for title, fn in tour.TOUR_SECTIONS:
        assert 1 <= len(fn.notebooks) <= 2 and set(fn.notebooks) <= numbers, (title, fn.notebooks)
    assert tour.TOUR_SECTIONS[2][1].notebooks == ("03",)  # Var(q·k) = d_k: notebook 03


def test_tour_covers_the_course_in_its_order(capsys):
    # one section per concept notebook that has one, in the notebooks' order
    assert [fn.__name__ for _, fn in tour.TOUR_SECTIONS] == [
        "_tour_dot", "_tour_norm", "_tour_variance", "_tour_softmax", "_tour_averaging", "_tour_three_tokens",
        "_tour_causal", "_tour_multihead", "_tour_rope", "_tour_kv_cache", "_tour_sparse", "_tour_flash",
        "_tour_serving", "_tour_linear", "_tour_applications", "_tour_backprop", "_tour_training"]


def test_later_sections_print_numbers_computed_here(tour_output):
    out = tour_output
    for i in range(4):  # the uniform causal average: row i holds i + 1 weights of 1/(i + 1)
        assert " ".join([f"{1 / (i + 1):.4f}"] * (i + 1) + ["0.0000"] * (3 - i)) in out
    assert "query 5 sees keys [0, 3, 4, 5]" in out  # window 3: keys 3..5, plus sink 0
    assert f"{576 * 2 + 128 + 4:,} bytes/token/layer" in out  # DSA: the latent row in BF16 + the FP8 indexer key
    assert f"{(4 - 1) * 2 * (2 * 12 * 8 * 8):,} bytes sent" in out  # ring of 4: 3 hops of k and v, float64
    # linear attention: one d_k x d_v = 8 x 8 state per head, against 24 cached keys and values of width 8
    assert "the state holds 64 numbers per head at any T, the KV cache of 24 tokens 384" in out
    # DSA's crossover, in closed form: per token and layer, dense MLA does H (2 d_c + d_r) multiply-adds per
    # cached token; DSA H_I (d_I + 1) per cached token plus H (2 d_c + d_r) for each of the k = 2048 kept ones
    mla, indexer, top = 128 * (2 * 512 + 64), 64 * (128 + 1), 2048
    crossing = math.floor(top * mla / (mla - indexer)) + 1  # the first S with S·mla > S·indexer + top·mla
    assert f"from {crossing:,} cached tokens" in out and f"{(576 * 2 + 132) / (576 * 2) - 1:.1%} more than V3" in out
    # DeepSeek-V4-Flash at n = 2^20 tokens beside V3.2 (61 layers), in closed form: V3.2 caches 656 + 132 bytes per
    # token and layer (FP8 latent record, FP8 indexer key); V4 per layer 127 window rows of 583 bytes, an entry
    # (583 + a 68-byte FP4 indexer key) per 4 tokens in its 21 CSA layers, one per 128 in its 20 HCA layers, and
    # the compressors' float32 state. Multiply-adds: V3.2 64·129 per key + 128·1088 per kept key (2048); V4 2·64·512
    # per key read: a window of 128, 512 selected entries (CSA) or all n/128 (HCA), + the indexer's 64·129 per entry
    n = 2**20
    v4_bytes = 2 * 127 * 583 + 21 * (127 * 583 + n // 4 * 651 + 81920) + 20 * (127 * 583 + n // 128 * 583 + 524288)
    v4_macs = 2 * 64 * 512 * (43 * 128 + 21 * 512 + 20 * n // 128) + 21 * 64 * 129 * n // 4
    v32_macs = 61 * (64 * 129 * n + 128 * 1088 * 2048)
    assert f"caches {v4_bytes / (n * 788 * 61):.1%} of V3.2's bytes and does {v4_macs / v32_macs:.1%}" in out


def test_rope_section_matches_rotation_matrices(capsys):
    # the tour's q·k, recomputed with explicit 2 x 2 rotations of each pair by m θ_r (θ_r = 10000^(-2r/8))
    from attention_from_scratch.infra.backend import random_normal

    q, k = (np.asarray(random_normal((1, 8), seed=s))[0] for s in (0, 1))

    def rotated(x, m):
        out = np.empty(8)
        for i in range(4):
            a = m * 10000.0 ** (-2 * i / 8)
            rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
            out[2 * i : 2 * i + 2] = rot @ x[2 * i : 2 * i + 2]
        return out

    tour.TOUR_SECTIONS[[fn.__name__ for _, fn in tour.TOUR_SECTIONS].index("_tour_rope")][1](np)
    out = capsys.readouterr().out
    for m, n in ((5, 2), (105, 102), (5, 3)):
        assert f"q at {m}, k at {n}: q·k = {rotated(q, m) @ rotated(k, n):+.6f}" in out


def test_help_explains_the_tour():
    res = subprocess.run(
        [sys.executable, "-m", "attention_from_scratch", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert res.returncode == 0
    assert "tour" in res.stdout and "--backend" in res.stdout


@pytest.mark.skipif(gpu_available(), reason="a GPU is usable here, so cupy would work")
@pytest.mark.parametrize(
    "argv", [["--backend", "cupy"], ["tour", "--backend", "cupy"], ["--backend", "cupy", "tour"]]
)
def test_cupy_without_a_gpu_gives_a_clear_message(argv, capsys):
    assert cli.main(argv) != 0
    captured = capsys.readouterr()
    assert "needs CuPy and a usable CUDA GPU" in captured.err
    assert "All checks passed." not in captured.out
    assert cli.main([*argv, "--lang", "zh"]) == 2  # in the learner's language, as README.zh promises
    captured = capsys.readouterr()
    assert "错误：后端 'cupy' 需要 CuPy 和一块可用的 CUDA GPU" in captured.err and "needs CuPy" not in captured.err


def test_tour_as_a_subprocess_exits_zero_quickly(tour_run):
    assert tour_run.returncode == 0, tour_run.stderr
    assert tour_run.stderr == ""  # no warnings leak out of the tour
    assert "All checks passed." in tour_run.stdout


def test_every_command_is_dispatched_to_its_module(monkeypatch):
    # each row's "module:function" is called with the parsed arguments, and its exit status returned
    import importlib

    seen = {}
    for name, (_, options, target) in cli.COMMANDS.items():
        module, function = target.split(":")
        mod = importlib.import_module(f"attention_from_scratch.{module}")
        monkeypatch.setattr(mod, function, lambda args, name=name: seen.setdefault(name, args) and 7)
        positional = [option for option in options if not option.startswith("-")]  # e.g. student's OUTDIR
        assert cli.main([name, *(f"value-of-{option}" for option in positional)]) == 7
        for option, kwargs in options.items():
            expected = kwargs["default"] if option.startswith("-") else f"value-of-{option}"
            expected = [expected] if kwargs.get("nargs") == "+" else expected  # e.g. grade's SUBMISSION...
            assert getattr(seen[name], option.lstrip("-").replace("-", "_")) == expected
    assert set(seen) == set(cli.COMMANDS)
    seen.clear()
    assert cli.main([]) == 7 and cli.DEFAULT_COMMAND in seen  # no sub-command: the default one


@pytest.mark.parametrize("argv", [["--backend", "cupy", "tour"], ["tour", "--backend", "cupy"], ["--backend", "cupy"]])
def test_backend_choice_reaches_the_tour_wherever_it_is_given(argv, monkeypatch):
    chosen = []
    monkeypatch.setattr(tour, "run_tour", lambda backend, lang="en": chosen.append(backend) or 0)
    assert cli.main(argv) == 0
    assert chosen == ["cupy"]


def test_language_choice_reaches_the_tour(monkeypatch):
    chosen = []
    monkeypatch.setattr(tour, "run_tour", lambda backend, lang="en": chosen.append(lang) or 0)
    assert cli.main(["--lang", "zh"]) == 0 and cli.main(["tour", "--lang", "zh"]) == 0 and cli.main([]) == 0
    assert chosen == ["zh", "zh", "en"]


# --- --help and argparse's refusals speak the command's language ------------------------------------------------

# words a Chinese help may keep: sub-command names, option values, names (code is taken out by _english_words)
_NAMES = {"python", "tour", "figures", "bench", "student", "grade", "train", "outdir", "en", "zh", "numpy", "cupy",
          "tang", "song", "devil", "char", "bpe", "notebook", "Transformer", "n-gram", "None", "int", "processes",
          "Jupyter", "nbclient", "corpora", "Debian", "apt-get", "macOS", "Windows"}


def _english_words(text: str) -> list[str]:
    """The English words of ``text`` outside code: options, {choices}, METAVARS, 'quoted values', ``code``, paths
    and identifiers (d_model, float32, UTF-8) are left out, and so are :data:`_NAMES`."""
    text = re.sub(r"``[^`]*``|\{[^}]*\}|'[^']*'|\S*/\S*|(?<![\w-])--?[\w-]+", " ", text)
    words = {w.strip(".-") for w in re.findall(r"[A-Za-z][\w.-]*", text)}
    return sorted(w for w in words - _NAMES if not w.isupper() and not re.search(r"[\d_]", w))


def _run(main, argv, capsys) -> tuple[int, str, str]:
    """``main(argv)``'s exit status (SystemExit's for --help and refusals), stdout and stderr."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    assert argparse._ is gettext.gettext  # argparse's words are English again once the command has parsed
    return code, out, err


def _helps(argv) -> list:
    """The help messages a --help of ``argv``'s command shows (the top-level one: its description, the
    sub-commands and the tour's options)."""
    name = next((word for word in argv if word in cli.COMMANDS), None)
    if name is None:
        return [cli._DESCRIPTION, *(text for text, _, _ in cli.COMMANDS.values()),
                *(kwargs["help"] for kwargs in cli.COMMANDS[cli.DEFAULT_COMMAND][1].values())]
    return [kwargs["help"] for kwargs in cli.COMMANDS[name][1].values()]


@pytest.mark.parametrize("argv", [["--help"], *([name, "--help"] for name in cli.COMMANDS)])
def test_help_in_english_is_argparse_s_with_every_help_message(argv, monkeypatch, capsys):
    monkeypatch.delenv(ENV_VAR, raising=False)
    code, out, _ = _run(cli.main, argv, capsys)
    assert code == 0 and out.startswith("usage: python -m attention_from_scratch")
    assert "\noptions:\n  -h, --help  " in out and "show this help message and exit" in out
    assert not re.search(r"[\u4e00-\u9fff]", out)
    flat = "".join(out.split())  # textwrap breaks lines at hyphens too ("multi-|head")
    for text in _helps(argv):
        assert "".join(render(text, "en").split()) in flat


def test_help_in_english_is_unchanged_where_short(monkeypatch, capsys):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("COLUMNS", "100")
    assert _run(cli.main, ["figures", "--help"], capsys)[1] == (
        "usage: python -m attention_from_scratch figures [-h] [--out OUT]\n\noptions:\n"
        "  -h, --help  show this help message and exit\n  --out OUT   output folder (default: figures/)\n")


@pytest.mark.parametrize("argv, env", [
    (["--lang", "zh", "--help"], None), (["tour", "--lang", "zh", "--help"], None),
    (["student", "--help", "--lang", "zh"], None), (["figures", "--help", "--lang=zh"], None),
    (["train", "--help"], "zh"), (["--help"], "zh"), (["--lang", "zh", "bench", "--help"], "en")])
def test_help_speaks_chinese_with_lang_zh_or_the_course_wide_language(argv, env, monkeypatch, capsys):
    """`--lang zh` anywhere on the command line, else ATTENTION_FROM_SCRATCH_LANG: every help message, argparse's
    own words, and no English sentence left (option names, metavars, values and file names stay)."""
    monkeypatch.setenv(ENV_VAR, env) if env else monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = _run(cli.main, argv, capsys)
    assert code == 0 and out.startswith("用法：python -m attention_from_scratch")
    assert re.search(r"\n选项[:：]\n  -h, --help", out) and "显示这条帮助信息并退出" in out
    flat = "".join(out.split())  # lines of Chinese break anywhere: compare without the white space
    for text in _helps(argv):
        assert "".join(render(text, "zh").split()) in flat
    assert not _english_words(out), _english_words(out)
    assert max(command_line.columns(line) for line in out.splitlines()) <= 78  # a Chinese character is two columns


def test_train_cli_s_own_help_speaks_the_course_wide_language(monkeypatch, capsys):
    monkeypatch.setenv(ENV_VAR, "zh")
    code, out, _ = _run(train_cli.main, ["--help"], capsys)
    assert train_cli._DESCRIPTION.template == train_cli.__doc__.split("\n\n")[0]  # the module says what it does
    assert code == 0 and "".join(render(train_cli._DESCRIPTION, "zh").split()) in "".join(out.split())
    assert "语料的预设值，没有预设时为 0.003" in out and not _english_words(out), _english_words(out)
    monkeypatch.setenv(ENV_VAR, "en")
    assert "preset, else 0.003" in _run(train_cli.main, ["--help"], capsys)[1]


@pytest.mark.parametrize("argv, env, refusal", [
    (["--lang", "zh", "--backend", "tpu"], None, "无效的选择：'tpu'（可选：'numpy', 'cupy'）"),
    (["nosuch"], "zh",
     "无效的选择：'nosuch'（可选：'tour', 'figures', 'bench', 'student', 'grade', 'corpora', 'train'）"),
    (["student", "--lang", "zh"], None, "缺少必需的参数：outdir"),
    (["train", "--steps", "x"], "zh", "无效的 int 值：'x'"),
    (["--lang", "zh", "figures", "--bogus"], None, "无法识别的参数：--bogus")])
def test_a_refused_command_line_is_refused_in_chinese(argv, env, refusal, monkeypatch, capsys):
    monkeypatch.setenv(ENV_VAR, env) if env else monkeypatch.delenv(ENV_VAR, raising=False)
    code, out, err = _run(cli.main, argv, capsys)
    assert code == 2 and not out and err.startswith("用法：python -m attention_from_scratch")
    assert "错误：" in err and refusal in err
    assert not _english_words(err), err  # "argument --x: " too, which Python 3.10's argparse does not offer gettext
    monkeypatch.setenv(ENV_VAR, "en")
    assert "error: " in _run(cli.main, [word for word in argv if word not in ("--lang", "zh")], capsys)[2]


def test_python_m_with_lang_zh_still_runs_the_tour_in_chinese(monkeypatch, capsys):
    monkeypatch.delenv(ENV_VAR, raising=False)
    code, out, err = _run(cli.main, ["--lang", "zh"], capsys)
    assert code == 0 and "所有检查均已通过。" in out and not err


def test_a_language_the_environment_gets_wrong_leaves_the_help_in_english(monkeypatch, capsys):
    monkeypatch.setenv(ENV_VAR, "fr")
    assert command_line.command_language([]) == "en" and command_line.command_language(["--lang", "zh"]) == "zh"
    assert command_line.command_language(["--lang", "zh", "--lang", "en"]) == "en"  # argparse keeps the last one too
    assert _run(cli.main, ["--help"], capsys)[1].startswith("usage: ")


def test_a_wrong_language_in_the_environment_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    """The tour and the student command speak the course-wide language: a wrong one is an error naming the
    variable (exit 2), not a traceback; --lang on the command line does not need the environment's."""
    monkeypatch.setenv(ENV_VAR, "fr")
    monkeypatch.chdir(tmp_path)
    for argv in ([], ["tour"], ["student", "unused-folder"]):
        code, out, err = _run(cli.main, argv, capsys)
        assert code == 2 and not out and err.startswith("error: the environment variable ATTENTION_FROM_SCRATCH_LANG")
        assert "'fr'" in err and "Traceback" not in err
    assert not (tmp_path / "unused-folder").exists()
    code, out, err = _run(cli.main, ["--lang", "zh"], capsys)
    assert code == 0 and "所有检查均已通过。" in out


def test_argparse_s_words_are_the_ones_it_asks_for_with_their_fields():
    """Each of ARGPARSE_WORDS is a text argparse passes to gettext (else its Chinese would never show), and its
    Chinese keeps the %-fields argparse fills in."""
    source = inspect.getsource(argparse)
    asked = [text.template for text in command_line.ARGPARSE_WORDS if f"_({text.template!r})" in source]
    unasked = {"argument %(argument_name)s: %(message)s"} if sys.version_info < (3, 11) else set()
    assert set(asked) == {text.template for text in command_line.ARGPARSE_WORDS} - unasked
    for text in command_line.ARGPARSE_WORDS:
        fields = re.findall(r"%(?:\(\w+\))?[sr]", text.template)
        assert sorted(re.findall(r"%(?:\(\w+\))?[sr]", text.render("zh"))) == sorted(fields), text.template


def test_figures_command_prints_the_paths_it_writes(tmp_path, monkeypatch, capsys):
    from attention_from_scratch.course import plots

    monkeypatch.setattr(plots, "FIGURES", {"one.png": lambda: plots.plt.figure(figsize=(1, 1))})
    assert cli.main(["figures", "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out.split() == [str(tmp_path / "one.png")]
    assert (tmp_path / "one.png").read_bytes().startswith(b"\x89PNG")


def test_figures_command_refuses_output_paths_it_cannot_use(tmp_path, monkeypatch, capsys):
    from attention_from_scratch.course import plots

    monkeypatch.setattr(plots, "FIGURES", {"one.png": lambda: plots.plt.figure(figsize=(1, 1))})
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    for out, message in ((a_file, "is a file, not a folder"), (a_file / "sub", "which is a file"), ("", "empty")):
        assert cli.main(["figures", "--out", str(out)]) == 2
        assert message in capsys.readouterr().err
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if not os.access(locked, os.W_OK):
            assert cli.main(["figures", "--out", str(locked)]) == 2
            assert "Permission denied" in capsys.readouterr().err
    finally:
        locked.chmod(0o700)
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "PYTHONPATH": str(ROOT)}
    code = ("import sys; from attention_from_scratch.course import plots;"
            "from attention_from_scratch import __main__ as c;"
            "plots.FIGURES = {'one.png': lambda: plots.plt.figure(figsize=(1, 1))};"
            f"sys.exit(c.main(['figures', '--out', {str(tmp_path / '图')!r}]))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, encoding="ascii")
    assert run.returncode == 0 and "\\u56fe" in run.stdout, run.stderr
