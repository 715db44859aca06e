"""The interactive figures on their standalone page, in a real browser (headless Chromium), opened from disk.

The page of every figure (``course.interactive.write_page``, built here in a second) is opened as a file
(``file://``), every http(s)/ws URL blocked in the browser. On each figure (``site_figures.exercise``): its script
ran (the controls are enabled); from the defaults with the step controls half-way, every slider and choice is moved
with the keyboard, and each time a screenshot of the picture differs from the one before; "next" pressed with Enter
steps forward and changes the picture, "back" returns to the same picture; moved back to its defaults, the picture
the script builds is the one Python wrote into the page. Play advances by itself at a readable pace and pause stops
it (on a clock the test ticks). The page logs no console error, and no request other than ``file:``/``data:`` is
even attempted. Screenshots go to ``$SITE_SCREENSHOTS`` when set (to be looked at), else to a temporary folder.

The website's notebook pages that hold figures are opened from disk and their figures moved by
``test_site_layout.py``, beside each page's layout check (each page is opened once).
"""

from __future__ import annotations

from site_figures import RESET, exercise, open_offline, page_problems, python_figures, value

from attention_from_scratch.course.interactive import write_page

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
            driver.execute_script(RESET, fig, [0 if i == c else value(fig, i) for i in range(n)])
            players.append((fig.get_dom_attribute("data-figure"), fig, c, play))
    driver.execute_script(_CLOCK)
    for *_, play in players:
        play.click()
    problems, asked = [], driver.execute_script("return window.clock.asked;")
    if len(asked) != len(players) or not all(300 <= ms <= 2000 for ms in asked):
        problems.append(f"the players asked for timers of {asked} ms: one per player, 300-2000 ms a step, expected")
    playing = [play.get_dom_attribute("aria-pressed") for *_, play in players]
    driver.execute_script("window.clock.tick(); window.clock.tick();")
    moved = [value(fig, c) for _, fig, c, _ in players]
    for *_, play in players:
        play.click()  # pause
    driver.execute_script("window.clock.tick(); window.clock.tick();")
    for (name, fig, c, play), pressed, at in zip(players, playing, moved, strict=True):
        if pressed != "true" or at != 2 or value(fig, c) != 2 or play.get_dom_attribute("aria-pressed") != "false":
            problems.append(f"{name}: play did not advance by itself, or pause did not stop it")
    if driver.execute_script("return window.clock.running();"):
        problems.append("a timer still runs after every player was paused")
    return problems


def test_the_standalone_page_offline(browser, shots, tmp_path):
    figures = python_figures()
    page = write_page(tmp_path / "interactive.html", list(figures.values()))
    open_offline(browser, page.as_uri())
    found = browser.find_elements("css selector", ".afs-fig")
    assert [f.get_dom_attribute("data-figure") for f in found] == list(figures)
    problems = []
    for fig in found:
        problems += exercise(browser, fig, figures[fig.get_dom_attribute("data-figure")], shots, "page", "full")
    steps = [name for name, fig in figures.items() if any(c.kind == "steps" for c in fig.controls)]
    assert len(steps) >= 3, f"play is checked on {steps} only: too few figures with steps"
    assert len(browser.find_elements("css selector", "button[data-play]")) == len(steps), "a play button is missing"
    problems += _play_and_pause(browser, found)
    problems += page_problems(browser)
    assert not problems, "\n".join(problems)
