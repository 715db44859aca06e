"""The interactive figures in a real browser (headless Chromium), opened from disk with the network blocked.

Two places are read, both as files (``file://``), every http(s)/ws URL blocked in the browser:

* the standalone page of every figure (``course.interactive.write_page``), built here in a second;
* the built website's notebook pages that hold interactive figures, English and Chinese (the session's
  ``site`` fixture of ``tests/site_fixtures.py``, the build ``test_site.py`` tests: ``$SITE_DIR``, or
  README's build, made once per run); there the step buttons and play,
  already exercised on the standalone page, are left out, and on the Chinese pages only the first
  control of each figure is moved (the same outputs; this checks that the page runs them).

On each figure: its script ran (the controls are enabled); from the defaults with the step controls
half-way, every slider and choice is moved with the keyboard, and each time a screenshot of the picture
differs from the one before; "next" pressed with Enter steps forward and changes the picture, "back"
returns to the same picture, play advances by itself at a readable pace and pause stops it (on a clock the
test ticks); moved back to its defaults,
the picture the script builds is the one Python wrote into the page.
Each page logs no console error, and no request other than ``file:``/``data:`` is even attempted.
Screenshots go to ``$SITE_SCREENSHOTS`` when set (to be looked at), else to a temporary folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlparse

import pytest
from site_fixtures import REPO

from attention_from_scratch.course.interactive import FIGURES, write_page

BLOCKED = ["http://*", "https://*", "ws://*", "wss://*"]


def _notebooks_with_figures(folder: Path) -> dict[str, int]:
    """{notebook stem: number of interactive figures in its stored outputs}."""
    found = {}
    for nb in sorted(folder.glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        n = sum('class="afs-fig"' in "".join(o.get("data", {}).get("text/html", ""))
                for c in cells if c["cell_type"] == "code" for o in c["outputs"])
        if n:
            found[nb.stem] = n
    return found


@pytest.fixture(scope="module")
def figures():
    """The figures as Python writes them, by name: what each page must show before anything moves."""
    return {name: make() for name, make in FIGURES.items()}


def _open_offline(driver, url: str) -> None:
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": BLOCKED})
    driver.get_log("browser"), driver.get_log("performance")  # start with empty logs
    driver.get(url)


def _page_problems(driver) -> list[str]:
    """Console errors, and any request that was not for a file of the page or an inline resource."""
    problems = [f"console: {e['message']}" for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    messages = [json.loads(e["message"])["message"] for e in driver.get_log("performance")]
    urls = {m["params"]["request"]["url"] for m in messages if m["method"] == "Network.requestWillBeSent"}
    assert urls, "the request log is empty: this check would see nothing"
    problems += [f"request: {u}" for u in sorted(urls) if urlparse(u).scheme not in ("file", "data")]
    return problems


_SAME_AS_PYTHON = """
const [fig, markup] = arguments;
const g = fig.querySelector("svg > g");
const parsed = document.createElementNS("http://www.w3.org/2000/svg", "g");
parsed.innerHTML = markup;
return parsed.innerHTML === g.innerHTML;
"""

_RESET = """
const fig = arguments[0];
fig.querySelectorAll("input[data-c], select[data-c]").forEach((el, c) => {
  el.value = arguments[1][c];
  el.dispatchEvent(new Event("input"));
});
"""


def _picture(fig) -> bytes:
    return fig.find_element("css selector", "svg").screenshot_as_png


_VALUES = 'return [...arguments[0].querySelectorAll("input[data-c], select[data-c]")].map((el) => Number(el.value));'


def _value(fig, c) -> int:
    """The current value of control ``c`` (one round trip to the browser)."""
    return fig.parent.execute_script(_VALUES, fig)[c]


def _exercise(driver, fig, expected, folder: Path, tag: str, depth: str = "full") -> list[str]:
    """Move the controls of one figure; what went wrong, in words (empty: all well).

    ``depth``: "full" (every control, the step buttons, the defaults' picture), "controls"
    (every slider and choice), "first" (the first control: the figure is alive).
    """
    from selenium.webdriver.common.keys import Keys

    name, problems = fig.get_dom_attribute("data-figure"), []
    if fig.get_dom_attribute("data-live") != "1":
        return [f"{name}: its script did not run"]
    driver.execute_script("arguments[0].scrollIntoView()", fig)
    controls = fig.find_elements("css selector", "input[data-c], select[data-c]")
    if any(not el.is_enabled() for el in controls):
        problems.append(f"{name}: a control is still disabled")
    # from the defaults with each step control half-way (at step 0 some choices change nothing yet)
    start = [len(ctl.values) // 2 if ctl.kind == "steps" else ctl.default for ctl in expected.controls]
    driver.execute_script(_RESET, fig, start)
    before = _picture(fig)
    for c, el in enumerate(controls[:1] if depth == "first" else controls):
        old = _value(fig, c)
        if el.tag_name == "select":
            el.send_keys(Keys.ARROW_UP if old == len(expected.controls[c].values) - 1 else Keys.ARROW_DOWN)
        else:  # a step control may stop before its last value (the page sets its max)
            el.send_keys(Keys.ARROW_LEFT if old == int(el.get_dom_attribute("max")) else Keys.ARROW_RIGHT)
        after = _picture(fig)
        if _value(fig, c) == old:
            problems.append(f"{name}: the keyboard did not move {expected.controls[c].name}")
        elif after == before:
            problems.append(f"{name}: moving {expected.controls[c].name} did not change the picture")
        (folder / f"{tag}_{name}_{expected.controls[c].name}.png").write_bytes(after)
        before = after
    if depth != "full":
        return problems
    for steps in fig.find_elements("css selector", "span:has(> button[data-play])"):
        back, play, forward = steps.find_elements("css selector", "button")
        c = int(play.get_dom_attribute("data-c"))
        at_zero = [0 if i == c else _value(fig, i) for i in range(len(controls))]
        driver.execute_script(_RESET, fig, at_zero)
        start = _picture(fig)
        forward.send_keys(Keys.ENTER)  # the keyboard presses a focused button
        one = _picture(fig)
        if _value(fig, c) != 1 or one == start:
            problems.append(f"{name}: 'next' did not step forward and change the picture")
        back.click()
        if _value(fig, c) != 0 or _picture(fig) != start:
            problems.append(f"{name}: 'back' did not return to the same picture")
    driver.execute_script(_RESET, fig, list(expected.default))
    if not driver.execute_script(_SAME_AS_PYTHON, fig, expected.svg_body()):
        problems.append(f"{name}: at its defaults the script draws another picture than Python wrote")
    return problems


# the page's clock in the test's hands: from now on setInterval keeps the function and the period the page asked for,
# and ``clock.tick()`` runs every timer still set once (clearInterval removes one), so a player steps exactly when
# the test says, with no wait
_CLOCK = """
if (!window.clock) {
  const timers = new Map();
  let next = 1;
  window.clock = {asked: [], running: () => timers.size, tick: () => [...timers.values()].forEach((f) => f())};
  window.setInterval = (f, ms) => { window.clock.asked.push(ms); timers.set(next, f); return next++; };
  window.clearInterval = (id) => { timers.delete(id); };
}
"""


def _play_and_pause(driver, found) -> list[str]:
    """What went wrong with play and pause, in words. Play is pressed on every figure's step control, each at step 0:
    each asks for a timer of a readable pace (0.3-2 s a step) and shows "pause"; two ticks of the clock (``_CLOCK``)
    take each to step 2; pause stops the timer, and two more ticks move nothing."""
    players = []
    for fig in found:
        n = len(fig.find_elements("css selector", "input[data-c], select[data-c]"))
        for play in fig.find_elements("css selector", "span:has(> button[data-play]) > button[data-play]"):
            c = int(play.get_dom_attribute("data-c"))
            driver.execute_script(_RESET, fig, [0 if i == c else _value(fig, i) for i in range(n)])
            players.append((fig.get_dom_attribute("data-figure"), fig, c, play))
    driver.execute_script(_CLOCK)
    for *_, play in players:
        play.click()
    problems, asked = [], driver.execute_script("return window.clock.asked;")
    if len(asked) != len(players) or not all(300 <= ms <= 2000 for ms in asked):
        problems.append(f"the players asked for timers of {asked} ms: one per player, 300-2000 ms a step, expected")
    playing = [play.get_dom_attribute("aria-pressed") for *_, play in players]
    driver.execute_script("window.clock.tick(); window.clock.tick();")
    moved = [_value(fig, c) for _, fig, c, _ in players]
    for *_, play in players:
        play.click()  # pause
    driver.execute_script("window.clock.tick(); window.clock.tick();")
    for (name, fig, c, play), pressed, at in zip(players, playing, moved, strict=True):
        if pressed != "true" or at != 2 or _value(fig, c) != 2 or play.get_dom_attribute("aria-pressed") != "false":
            problems.append(f"{name}: play did not advance by itself, or pause did not stop it")
    if driver.execute_script("return window.clock.running();"):
        problems.append("a timer still runs after every player was paused")
    return problems


def test_the_standalone_page_offline(browser, figures, shots, tmp_path):
    page = write_page(tmp_path / "interactive.html", list(figures.values()))
    _open_offline(browser, page.as_uri())
    found = browser.find_elements("css selector", ".afs-fig")
    assert [f.get_dom_attribute("data-figure") for f in found] == list(figures)
    problems = []
    for fig in found:
        problems += _exercise(browser, fig, figures[fig.get_dom_attribute("data-figure")], shots, "page", "full")
    steps = [name for name, fig in figures.items() if any(c.kind == "steps" for c in fig.controls)]
    assert len(steps) >= 3, f"play is checked on {steps} only: too few figures with steps"
    assert len(browser.find_elements("css selector", "button[data-play]")) == len(steps), "a play button is missing"
    problems += _play_and_pause(browser, found)
    problems += _page_problems(browser)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_site_pages_offline(lang, browser, figures, site, shots):
    """Every notebook page with interactive figures, opened from disk: each figure plays (English: every
    slider and choice moves the picture; Chinese: the first control does)."""
    folder = REPO / "notebooks" / ("zh" if lang == "zh" else "")
    pages = _notebooks_with_figures(folder)
    if not pages:
        pytest.skip("no notebook holds an interactive figure yet")
    problems = []
    for stem, n in pages.items():
        path = site / ("zh" if lang == "zh" else "") / "notebooks" / f"{stem}.html"
        _open_offline(browser, path.as_uri())
        found = browser.find_elements("css selector", ".afs-fig")
        if len(found) != n:
            problems.append(f"{path.name}: {len(found)} interactive figures on the page, {n} in the notebook")
        for fig in found:
            depth = "controls" if lang == "en" else "first"  # the buttons and play: on the standalone page
            problems += _exercise(browser, fig, figures[fig.get_dom_attribute("data-figure")], shots, f"{lang}_{stem}",
                                  depth)
        problems += [f"{path.name}: {p}" for p in _page_problems(browser)]
    assert not problems, "\n".join(problems)
