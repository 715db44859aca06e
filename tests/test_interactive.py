"""The interactive figures (course/interactive/): every frame survives the compression the page plays,
the outputs are self-contained, small and the same bytes every run, the controls are what a keyboard and
a screen reader need, and what each figure claims holds (checked here by independent computations).

The browser half (controls moved in Chromium, the picture changes, no request leaves) is
tests/test_site_interactive.py (the standalone page) and tests/test_site_layout.py (the website's pages).
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from attention_from_scratch.course import interactive, plots
from attention_from_scratch.course.interactive import FIGURES, MAX_OUTPUT_BYTES, TWIN_OF
from attention_from_scratch.course.interactive.player import Frame, InteractiveFigure, choice, slider, steps
from attention_from_scratch.course.interactive.scene import Rect, Text


@pytest.fixture(scope="module")
def figures():
    return {name: make() for name, make in FIGURES.items()}


def replay(fig, combo):
    """What the page's script shows for ``combo``: the same lookups as PLAYER_JS's limit(), at() and show()."""
    data, combo = fig.data, list(combo)

    def at(part):
        deps, rows = part
        k = 0
        for c in deps:
            k = k * data["n"][c] + combo[c]
        return rows[k]

    for c, deps, rows in data.get("m", []):
        combo[c] = min(combo[c], at((deps, rows)))

    markup = "".join(data["e"][i] for part in data["p"] for i in at(part))
    return markup, " ".join(at(sentence) for sentence in data["c"])


def test_every_frame_is_replayed_exactly(figures):
    """The compressed tables (shapes stored once, parts per the controls they depend on) lose nothing."""
    for name, fig in figures.items():
        assert len(fig.combos) > 1, name
        for combo in fig.combos:
            markup, caption = replay(fig, combo)
            assert markup == fig.svg_body(combo), (name, combo)
            assert caption == fig.frames[combo].text, (name, combo)


def test_a_part_is_stored_once_per_control_it_depends_on():
    def draw(a, b):  # "a" depends on control 0 only, "b" on control 1 only, "both" on both, "none" on none
        return Frame({"none": [Rect(0, 0, 1, 1)], "a": [Text(0, 10, f"a{a}")], "b": [Text(0, 20, f"b{b}")],
                      "both": [Text(0, 30, f"{a}{b}")]}, (f"a = {a}", "same"))

    fig = InteractiveFigure("t", "t", [slider("a", "a", range(3)), choice("b", "b", "xy")], draw)
    assert [deps for deps, _ in fig.data["p"]] == [[], [0], [1], [0, 1]]
    assert [len(rows) for _, rows in fig.data["p"]] == [1, 3, 2, 6]
    assert [deps for deps, _ in fig.data["c"]] == [[0], []]
    assert len(fig.data["e"]) == 1 + 3 + 2 + 6  # every distinct shape once
    for combo in fig.combos:
        assert replay(fig, combo) == (fig.svg_body(combo), fig.frames[combo].text)


def test_a_step_control_stops_where_another_control_says():
    def draw(a, b):
        return Frame({"x": [Text(0, 10, f"{a} {b}")]}, f"{a} {b}")

    fig = InteractiveFigure("t", "t", [choice("a", "a", "xyz"), steps("b", "b", range(5))], draw,
                            last={"b": lambda a, b: 2 + a})
    assert fig.data["m"] == [[1, [0], [2, 3, 4]]]
    assert fig.frames[0, 4] is fig.frames[0, 2] and fig.frames[1, 4] is fig.frames[1, 3]
    assert 'max="2"' in fig.html()  # the default a = 0 allows b <= 2
    for combo in fig.combos:
        assert replay(fig, combo)[1] == f"{combo[0]} {min(combo[1], 2 + combo[0])}"
    with pytest.raises(ValueError, match="itself"):
        InteractiveFigure("t", "t", [steps("b", "b", range(5))], lambda b: draw(0, b), last={"b": lambda b: b})


def test_frames_must_have_the_same_parts():
    def draw(a):
        return Frame({"x": []} if a else {"y": []}, "c")

    with pytest.raises(ValueError, match="parts"):
        InteractiveFigure("t", "t", [slider("a", "a", range(2))], draw)


def test_outputs_are_small_deterministic_and_self_contained(figures):
    again = {name: make() for name, make in FIGURES.items()}
    for name, fig in figures.items():
        page = fig.html()
        assert len(page.encode()) <= MAX_OUTPUT_BYTES, f"{name}: {len(page.encode())} bytes"
        assert page == again[name].html(), f"{name}: not the same bytes on a second run"
        # one image, the still picture, inline: no other file is referred to
        assert re.findall(r"\b(?:src|href)\s*=\s*\"([^:\"]*:)", page) == ["data:"], name
        assert len(re.findall(r"\b(?:src|href)\s*=", page)) == 1, name
        # the only URL is the SVG namespace, which is a name, never fetched
        assert set(re.findall(r"https?://[^\s\"'<>]+", page)) == {"http://www.w3.org/2000/svg"}, name
        assert page.count("<script") == 2 and "</script>" not in fig.html().split("<script")[1][:-9], name
        assert re.fullmatch(r"InteractiveFigure\('\w+', \d+ frames, \d+ bytes\)", repr(fig))


def test_the_player_stays_small():
    from attention_from_scratch.course.interactive.browser import PLAYER_CSS, PLAYER_JS

    assert len(PLAYER_JS.encode()) < 3000 and len(PLAYER_CSS.encode()) < 1000


def test_the_still_picture_is_the_default_frame(figures):
    """Where no script runs, an <img> shows the defaults' frame: the same markup, as a standalone SVG."""
    from urllib.parse import unquote

    for name, fig in figures.items():
        uri = re.search(r'<img class="afs-still" alt="([^"]+)" src="([^"]+)"', fig.html())
        assert uri and fig.title in html.unescape(uri.group(1)), name
        svg = unquote(uri.group(2).removeprefix("data:image/svg+xml,"))
        assert svg.startswith("<svg xmlns='http://www.w3.org/2000/svg'") and svg.endswith("</svg>")
        assert f"<g>{fig.svg_body()}</g>" in svg, name
        assert uri.group(2).isascii() and not re.search(r'[#&"<>]|%(?![0-9A-F]{2})', uri.group(2)), name


class _Controls(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.controls, self.buttons = [], [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("input", "select"):
            self.controls.append((tag, a, "label" in self.stack))
        if tag == "button":
            self.buttons.append(a)
        if tag not in ("input",):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in self.stack:
            del self.stack[len(self.stack) - 1 - self.stack[::-1].index(tag):]


def test_controls_are_labelled_keyboard_controls(figures):
    for name, fig in figures.items():
        page = _Controls()
        page.feed(fig.html())
        assert len(page.controls) == len(fig.controls), name
        for (tag, attrs, labelled), control in zip(page.controls, fig.controls, strict=True):
            assert labelled, f"{name}: {control.name} has no <label>"
            if control.kind == "choice":
                assert tag == "select"
            else:
                assert tag == "input" and attrs["type"] == "range" and attrs["aria-valuetext"] == control.values[
                    control.default]
            assert "disabled" in attrs  # until the script runs: a still picture never pretends to move
        n_steps = sum(c.kind == "steps" for c in fig.controls)
        assert len(page.buttons) == 3 * n_steps and all(b["type"] == "button" for b in page.buttons), name


def test_each_figure_has_its_twin_in_the_figures_command(figures):
    assert len(FIGURES) >= 8
    assert {fig.png for fig in figures.values()} == set(TWIN_OF) == set(interactive.TWINS)
    for png, make in TWIN_OF.items():
        assert figures[make.__name__].png == png
        assert png in plots.FIGURES  # python -m attention_from_scratch figures writes it
        assert figures[make.__name__].twin, f"{png}: no states chosen for print"


def test_a_twin_is_the_same_bytes_twice(tmp_path):
    first, second = (plots.save_figure(interactive.TWINS["15_interactive_kv_cache.png"](), tmp_path / f"{n}.png")
                     for n in "ab")
    assert first.read_bytes() == second.read_bytes()


def test_the_standalone_page_holds_every_figure(tmp_path):
    path = interactive.write_page(tmp_path / "page.html")
    text = path.read_text(encoding="utf-8")
    assert text.count('class="afs-fig"') == len(FIGURES)
    assert interactive.main([str(tmp_path / "b.html")]) == 0
    assert interactive.main([]) == 2


# --- what the figures show, computed independently ----------------------------------------------------

def _softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def test_softmax_sliders_numbers():
    from attention_from_scratch.course.interactive.scores import D_KS, TEMPERATURES, _softmax_numbers

    numbers = _softmax_numbers()
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal(max(D_KS)), rng.standard_normal((8, max(D_KS)))
    for (a, b, c), (logits, p, jac) in numbers.items():
        d = D_KS[a]
        expected = (k[:, :d] @ q[:d]) / (np.sqrt(d) if b else 1) / TEMPERATURES[c]
        np.testing.assert_allclose(logits, expected, rtol=1e-12)
        np.testing.assert_allclose(p, _softmax(expected), rtol=1e-12)
        np.testing.assert_allclose(jac, np.linalg.norm(np.diag(p) - np.outer(p, p)), rtol=1e-12)
    # the point of the figure: unscaled, d_k = 1024 saturates; divided by √d_k it does not
    assert numbers[5, 0, 2][1].max() > 0.99 and numbers[5, 1, 2][1].max() < 0.9


def test_mask_explorer_masks_by_loops():
    from attention_from_scratch.course.interactive.scores import N_SINKS, SIZES, N, _masks

    masks = _masks()
    for s, size in enumerate(SIZES):
        exists, causal = masks[0, s]
        for p in range(N):
            assert exists[p] == (p >= N - size)
            if exists[p]:
                assert [causal[p, j] for j in range(N)] == [j <= p for j in range(N)]
        _, padded = masks[1, s]
        assert all(padded[p, j] == (j <= p and j < size and p < size) for p in range(N) for j in range(N))
        _, window = masks[2, s]
        assert all(window[p, j] == (j <= p and (p - size < j or j < N_SINKS)) for p in range(N) for j in range(N))
        _, topk = masks[3, s]
        assert all(topk[p].sum() == min(size, p + 1) and not topk[p, p + 1:].any() for p in range(N))


def test_rope_score_stays_put_when_both_positions_shift(figures):
    fig = figures["rope_dials"]
    names = list(fig.frames[fig.combos[0]].parts)
    score = names.index("score")
    deps = fig.data["p"][score][0]
    assert deps == [0, 1]  # the text names m and n, so it moves with the shift ...
    values = {combo: re.search(r"so q·k = (-?\d+\.\d+)", fig.frames[combo].text).group(1) for combo in fig.combos}
    for shift, delta in fig.combos:  # ... but the score is the same for every shift of one distance
        assert values[shift, delta] == values[0, delta]
    assert len({values[0, d] for d in range(len(fig.controls[1].values))}) > 1  # and changes with m - n


def test_online_softmax_reaches_the_exact_output():
    from attention_from_scratch.course.interactive.inference import FLASH_BLOCKS, FLASH_S, _online_states

    scores, exact, runs = _online_states()
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((4, 4)), rng.standard_normal((16, 4))
    v = rng.standard_normal((16, 2))
    np.testing.assert_allclose(scores, q @ k.T / 2, rtol=1e-12)
    weights = np.array([_softmax(row) for row in scores])
    np.testing.assert_allclose(exact, weights @ v, rtol=1e-12)
    for block in FLASH_BLOCKS:
        history = runs[block]
        assert len(history) == FLASH_S // block + 1
        for n_tiles, (m, l, acc) in enumerate(history[1:], start=1):  # the state of the keys read so far
            seen = scores[:, : n_tiles * block]
            np.testing.assert_allclose(m[:, 0], seen.max(axis=1), rtol=1e-12)
            np.testing.assert_allclose(l[:, 0], np.exp(seen - m).sum(axis=1), rtol=1e-12)
            np.testing.assert_allclose(acc, np.exp(seen - m) @ v[: n_tiles * block], rtol=1e-12)


def test_kv_cache_counts(figures):
    fig = figures["kv_cache_steps"]
    for mode, t in fig.combos:
        text = fig.frames[mode, t].text
        total = t + 1 if mode == 0 else (t + 1) * (t + 2) // 2
        assert f"Rows projected so far: {total} " in text
        if mode == 0:  # float64 keys and values of 2 heads of 4 for each cached token
            assert f"{(t + 1) * 2 * 2 * 4 * 8} bytes" in text


def test_paged_cache_shares_copies_and_frees():
    from attention_from_scratch.course.interactive.serving import SCRIPT, _paged_snapshots

    snaps = _paged_snapshots()
    assert len(snaps) == len(SCRIPT)
    tables, _, refs, _, _ = snaps[4]  # after the fork
    assert tables[2] == tables[0] and all(refs[b] == 2 for b in tables[0])
    tables, _, refs, pool, _ = snaps[5]  # s2 wrote into the shared, partly full block: copied first
    assert tables[2][0] == tables[0][0] and tables[2][1] != tables[0][1]
    assert refs[tables[0][1]] == 1 and list(pool[tables[2][1]]) == [4, 5, 6, 7]
    tables, _, refs, _, in_use = snaps[10]  # s0 freed: the block s2 still reads stays
    assert 0 not in tables and refs[tables[2][0]] == 1 and in_use == sum(len(t) for t in tables.values())


def test_ring_bytes_and_placement(figures):
    from attention_from_scratch.course.interactive.serving import RING_D, RING_DEVICES, RING_N, _chunks

    per_round = 2 * RING_N * RING_D * 8  # K and V of every device, float64
    fig = figures["ring_steps"]
    for causal, zigzag, step in fig.combos:
        assert f"Bytes sent so far: {min(step, RING_DEVICES - 1) * per_round} " in fig.frames[causal, zigzag, step].text
    zig = _chunks(True)
    assert sorted(p for spans in zig for s in spans for p in range(*s)) == list(range(RING_N))
    assert all(spans[0][0] + spans[1][0] == RING_N - RING_N // (2 * RING_DEVICES) for spans in zig)


def test_ring_devices_stay_clear_of_the_grid(figures):
    """The ring's device boxes never cover the (query, key) grid, whatever the round (they once did past key 13)."""
    from attention_from_scratch.course.interactive.scene import Cells
    from attention_from_scratch.course.interactive.serving import RING_N

    fig = figures["ring_steps"]
    for combo in fig.combos:
        parts = fig.frames[combo].parts
        right = max(c.origin[0] + RING_N * c.unit for c in parts["pairs"] if isinstance(c, Cells))  # the grid's edge
        boxes = [r for r in parts["devices"] if isinstance(r, Rect)]
        assert len(boxes) == 4 and min(r.x for r in boxes) > right + 8, combo


def test_labels_of_markers_stay_inside_the_figure(figures):
    """The indexer's recall label sits inside the figure at every k (at k = 16 it once ran past the right edge)."""
    fig = figures["indexer_topk"]
    for combo in fig.combos:
        (label,) = [t for t in fig.frames[combo].parts["marker"] if isinstance(t, Text)]
        width = 0.65 * label.size * len(label.text)  # bold digits: at most about 0.65 em each
        left = {"start": label.x, "middle": label.x - width / 2, "end": label.x - width}[label.anchor]
        assert 0 <= left and left + width <= fig.width, (combo, label)


def test_indexer_recall_orders_and_stored_choice():
    from attention_from_scratch import topk_mask
    from attention_from_scratch.course.interactive.sparse import _rank_scores
    from attention_from_scratch.course.results import load

    stored, orders = load("indexer"), load("indexer_orders")
    for name in ("random", "trained"):  # the stored ranking keeps the keys the stored k = 8 masks keep
        kept = np.asarray(topk_mask(_rank_scores(orders[name], 32), stored["k"]))[0]
        np.testing.assert_array_equal(kept, np.asarray(stored[name]["mask"], dtype=bool))
        assert [len(row) for row in orders[name]] == list(range(1, 33))  # every visible key, once
        assert all(sorted(row) == list(range(t + 1)) for t, row in enumerate(orders[name]))


def test_indexer_figure_recall_ranks(figures):
    fig = figures["indexer_topk"]
    recall = {combo: float(re.search(r"hold (\d+\.\d)%", fig.frames[combo].text).group(1)) for combo in fig.combos}
    for c in range(len(fig.controls[1].values)):
        assert recall[2, c] >= recall[0, c] >= recall[1, c]  # oracle >= trained >= random
    for i in range(3):
        assert all(recall[i, c] <= recall[i, c + 1] for c in range(len(fig.controls[1].values) - 1))


def test_control_values_are_checked():
    with pytest.raises(ValueError, match="default"):
        steps("s", "s", range(3), 3)
    with pytest.raises(ValueError, match="kind"):
        from attention_from_scratch.course.interactive.player import Control

        Control("x", "x", ("a",), 0, "knob")
