"""The `bench` sub-command's discovery of benchmark scripts, and the benchmarks' figure code on fake data.

The benchmarks themselves are timed runs, too slow for the test suite; run them with
``python -m attention_from_scratch bench`` (quick) or ``python benchmarks/bench_*.py`` (full)."""

from __future__ import annotations

import importlib
from pathlib import Path

import matplotlib
import pytest

from attention_from_scratch.course.bench import BENCHMARKS, run_bench

matplotlib.use("Agg")
BENCH_DIR = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name):
    return importlib.import_module(name)  # benchmarks/ is on pytest's pythonpath (pyproject.toml)


def test_bench_runs_each_script_quick_and_reports_missing_and_broken(tmp_path, capsys):
    (tmp_path / "bench_flash.py").write_text(
        "import pathlib\n"
        "def main(quick=False):\n"
        "    pathlib.Path(__file__).with_suffix('.ran').write_text(str(quick))\n"
    )
    (tmp_path / "bench_zzz_broken.py").write_text("def main(quick=False):\n    raise RuntimeError('boom')\n")
    (tmp_path / "bench_nomain.py").write_text("x = 1\n")
    assert run_bench(tmp_path) == 1
    assert (tmp_path / "bench_flash.ran").read_text() == "True"
    out, err = capsys.readouterr()
    for name in BENCHMARKS:
        if name != "bench_flash":
            assert f"benchmarks/{name}.py is not in this checkout" in out
    assert "bench_nomain.py has no main" in out
    assert "bench_zzz_broken failed: RuntimeError: boom" in err
    assert "FAILED: bench_zzz_broken" in out


def test_bench_without_benchmarks_folder_says_why(tmp_path, capsys):
    assert run_bench(tmp_path / "missing") == 2
    assert "not of the installed package" in capsys.readouterr().err


@pytest.mark.skipif(not BENCH_DIR.is_dir(), reason="benchmarks/ not in this checkout")
def test_benchmark_figures_draw_from_measured_rows():
    flash = _load("bench_flash")
    rows = [
        {"H": h, "n": n, "plain": 1e-9 * n * n, "flash": 8e-10 * n * n, "flash_w2": 5e-10 * n * n,
         "mem_plain": 8 * n * n, "mem_flash": 2**22}
        for h, ns in ((1, (1024, 2048)), (8, (2048,)))
        for n in ns
    ]
    times = {"plain": 1.0, "128": 1.5, "128 w2": 0.8, "512": 0.9, "512 w2": 0.5}
    fig = flash.plot(rows, [128, 512], times, (8, 2048))
    assert len(fig.axes) == 3 and len(fig.axes[0].lines) == 6
    scores = _load("bench_scores")
    fig = scores.plot([{"n": 8, "dot": 1e-5, "additive": 1e-3}], [{"n": 4, "loop": 1e-2, "vectorised": 1e-5}])
    assert len(fig.axes) == 2
    backends = _load("bench_backends")
    fig = backends.plot([{"n": 512, "H": 1, "plain numpy": 0.01, "flash numpy": 0.02}], [], ["numpy"])
    assert "no GPU" in fig._suptitle.get_text()


@pytest.mark.skipif(not BENCH_DIR.is_dir(), reason="benchmarks/ not in this checkout")
def test_sparse_benchmark_crossover_and_figure_from_rows():
    sparse = _load("bench_sparse")
    # dense grows like S, sparse is flat: they cross where S·1e-3 = 3, at S = 3000 (log-log interpolation)
    rows = [{"context": s, "dense_ms": 1e-3 * s, "sparse_ms": 3.0, "indexer_ms": 1.0} for s in (1000, 2000, 4000, 8000)]
    assert sparse.crossover(rows) == pytest.approx(3000, rel=1e-9)
    assert sparse.crossover([{**r, "sparse_ms": 100.0} for r in rows]) is None  # never crosses
    fig = sparse.plot(rows, sparse.crossover(rows))
    assert len(fig.axes) == 2 and len(fig.axes[0].lines) == 4  # dense, sparse, indexer, the crossover line


def test_every_benchmark_script_reads_its_arguments_with_argparse():
    """``python benchmarks/bench_X.py --help`` prints the options and runs nothing (one script ignored --help and
    started its full minute-long run); read from the sources, so that no script is run here."""
    scripts = sorted(BENCH_DIR.glob("bench_*.py"))
    assert len(scripts) >= len(BENCHMARKS)
    plain = [p.name for p in scripts if "ArgumentParser(" not in p.read_text(encoding="utf-8")
             or "sys.argv" in p.read_text(encoding="utf-8")]
    assert not plain, f"scripts that read sys.argv themselves: {plain}"


@pytest.mark.skipif(not BENCH_DIR.is_dir(), reason="benchmarks/ not in this checkout")
def test_block_size_sweep_times_each_block_on_the_backend_it_is_given():
    from attention_from_scratch.infra.backend import namespace_for

    times = _load("bench_backends").block_rows(namespace_for("numpy"), 8, 2, (2, 4, 8), repeat=1)
    assert list(times) == [2, 4, 8] and all(t > 0 for t in times.values())


def test_the_gpu_check_script_parses_and_runs_every_stage():
    script = BENCH_DIR.parent / "tools" / "gpu_check.sh"
    if not script.is_file():
        pytest.skip("tools/ not in this checkout")
    import subprocess

    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    text = script.read_text()
    for stage in ("env", "tour", "backend", "notebook", "bench", "tests"):
        assert f"\nstage {stage} " in text, stage
    assert "-m gpu tests" in text and "notebooks/zh/25_gpu.ipynb" in text
