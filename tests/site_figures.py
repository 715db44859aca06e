"""The interactive figures' checks in a real browser, shared by the tests that open pages holding them.

``test_site_interactive.py`` exercises every figure on their standalone page; ``test_site_layout.py`` opens the
website's notebook pages that hold figures from disk with the network blocked (the figures' promise: no kernel, no
network) and exercises them there, beside the page's layout check.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from urllib.parse import urlparse

import build_translations as bt  # tools/, on pytest's pythonpath

from attention_from_scratch.course.interactive import FIGURES

BLOCKED = ["http://*", "https://*", "ws://*", "wss://*"]


def code_outputs(nb: Path) -> list[dict]:
    """Every stored output of the notebook's code cells, in order (read with ``build_translations.load``)."""
    return [out for cell in bt.load(nb)["cells"] if cell["cell_type"] == "code" for out in cell["outputs"]]


def notebooks_with_figures(folder: Path) -> dict[str, int]:
    """{notebook stem: number of interactive figures in its stored outputs}."""
    found = {}
    for nb in sorted(folder.glob("*.ipynb")):
        n = sum('class="afs-fig"' in "".join(o.get("data", {}).get("text/html", "")) for o in code_outputs(nb))
        if n:
            found[nb.stem] = n
    return found


@functools.cache
def python_figures() -> dict:
    """The figures as Python writes them, by name: what each page must show before anything moves."""
    return {name: make() for name, make in FIGURES.items()}


def open_offline(driver, url: str) -> None:
    """Open ``url`` with every network URL blocked (until :func:`allow_network`) and the logs emptied first."""
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": BLOCKED})
    driver.get_log("browser"), driver.get_log("performance")  # start with empty logs
    driver.get(url)


def allow_network(driver) -> None:
    """Undo :func:`open_offline`'s block, for the pages opened next."""
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})


def page_problems(driver) -> list[str]:
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

RESET = """
const fig = arguments[0];
fig.querySelectorAll("input[data-c], select[data-c]").forEach((el, c) => {
  el.value = arguments[1][c];
  el.dispatchEvent(new Event("input"));
});
"""


def picture(fig) -> bytes:
    return fig.find_element("css selector", "svg").screenshot_as_png


_VALUES = 'return [...arguments[0].querySelectorAll("input[data-c], select[data-c]")].map((el) => Number(el.value));'


def value(fig, c) -> int:
    """The current value of control ``c`` (one round trip to the browser)."""
    return fig.parent.execute_script(_VALUES, fig)[c]


def exercise(driver, fig, expected, folder: Path, tag: str, depth: str = "full") -> list[str]:
    """Move the controls of one figure; what went wrong, in words (empty: all well).

    ``depth``: "full" (every control, the step buttons, the defaults' picture) or "controls"
    (every slider and choice).
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
    driver.execute_script(RESET, fig, start)
    before = picture(fig)
    for c, el in enumerate(controls):
        old = value(fig, c)
        if el.tag_name == "select":
            el.send_keys(Keys.ARROW_UP if old == len(expected.controls[c].values) - 1 else Keys.ARROW_DOWN)
        else:  # a step control may stop before its last value (the page sets its max)
            el.send_keys(Keys.ARROW_LEFT if old == int(el.get_dom_attribute("max")) else Keys.ARROW_RIGHT)
        after = picture(fig)
        if value(fig, c) == old:
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
        at_zero = [0 if i == c else value(fig, i) for i in range(len(controls))]
        driver.execute_script(RESET, fig, at_zero)
        start = picture(fig)
        forward.send_keys(Keys.ENTER)  # the keyboard presses a focused button
        one = picture(fig)
        if value(fig, c) != 1 or one == start:
            problems.append(f"{name}: 'next' did not step forward and change the picture")
        back.click()
        if value(fig, c) != 0 or picture(fig) != start:
            problems.append(f"{name}: 'back' did not return to the same picture")
    driver.execute_script(RESET, fig, list(expected.default))
    if not driver.execute_script(_SAME_AS_PYTHON, fig, expected.svg_body()):
        problems.append(f"{name}: at its defaults the script draws another picture than Python wrote")
    return problems
