"""What runs in the reader's browser: the player script and its style, written inline into every figure.

The script finds its figure (the element around it), reads the figure's JSON (``.afs-data``) and, on every
move of a control, joins the stored SVG markup of each part for the current positions and the caption's
sentences (lookups only: every number was computed in Python). It enables the controls, which the page
holds disabled until then, swaps the still picture for the live SVG, and keeps the controls' keys to
themselves (JupyterLab would otherwise take the arrows as notebook shortcuts). Data layout
(:class:`.player.InteractiveFigure`): ``n`` the controls' sizes, ``v`` their value labels, ``e`` the
distinct shapes' markup, ``p`` the parts and ``c`` the caption's sentences as ``[controls it depends on,
rows in row-major order]``, ``m`` the step controls whose last position depends on other controls.
"""

__all__ = ["PLAYER_CSS", "PLAYER_JS"]

PLAYER_CSS = (
    ".afs-fig{font-family:sans-serif;max-width:760px;margin:.5em 0;color:#222}"
    ".afs-fig svg,.afs-fig img{width:100%;height:auto;background:#fff;border:1px solid #ccc}"
    ".afs-fig svg{display:none}.afs-fig.afs-live svg{display:block}"
    ".afs-controls{display:flex;flex-wrap:wrap;gap:.4em 1.2em;align-items:center;margin:.3em 0}"
    ".afs-controls label{display:flex;gap:.4em;align-items:center}"
    ".afs-controls output{min-width:4.5em;font-family:monospace}"
    ".afs-fig button{font-size:90%;padding:.1em .6em}"
    ".afs-caption{margin:.2em 0;font-size:90%;min-height:2.6em}"
    ".afs-fig.afs-live .afs-static{display:none}.afs-static{font-size:85%;color:#555}"
)

PLAYER_JS = """(function () {
var me = document.currentScript, figs = document.querySelectorAll(".afs-fig:not([data-live])");
var root = me ? me.parentNode : figs[figs.length - 1];
if (!root || root.hasAttribute("data-live")) return;
root.setAttribute("data-live", "1");
var D = JSON.parse(root.querySelector(".afs-data").textContent), timer = null;
var svg = root.querySelector("svg > g"), still = root.querySelector("img"), cap = root.querySelector(".afs-caption");
var inputs = root.querySelectorAll("input[data-c], select[data-c]"), play = root.querySelector("[data-play]");
function at(part) {
  var k = 0;
  part[0].forEach(function (c) { k = k * D.n[c] + Number(inputs[c].value); });
  return part[1][k];
}
function limit() {  // a step control whose last position depends on other controls (e.g. the tile size)
  (D.m || []).forEach(function (m) {
    var el = inputs[m[0]], last = at([m[1], m[2]]);
    el.max = last;
    if (Number(el.value) > last) el.value = last;
  });
}
function show() {
  limit();
  svg.innerHTML = D.p.map(function (p) { return at(p).map(function (e) { return D.e[e]; }).join(""); }).join("");
  cap.textContent = D.c.map(at).join(" ");
  [].forEach.call(inputs, function (el, c) {
    if (el.type !== "range") return;
    el.setAttribute("aria-valuetext", D.v[c][Number(el.value)]);
    el.nextElementSibling.textContent = D.v[c][Number(el.value)];
  });
}
function move(c, by) {
  var v = Number(inputs[c].value) + by;
  if (v < 0 || v > Number(inputs[c].max)) return false;
  inputs[c].value = v; show(); return true;
}
function stop() {
  if (timer) clearInterval(timer);
  timer = null;
  if (play) { play.textContent = "\\u25B6 play"; play.setAttribute("aria-pressed", "false"); }
}
[].forEach.call(inputs, function (el) {
  el.disabled = false;
  el.addEventListener("input", function () { stop(); show(); });
  el.addEventListener("change", show);
});
[].forEach.call(root.querySelectorAll("button[data-c]"), function (b) {
  var c = Number(b.getAttribute("data-c"));
  b.disabled = false;
  b.addEventListener("click", function () {
    if (b !== play) { stop(); move(c, Number(b.getAttribute("data-step"))); return; }
    if (timer) { stop(); return; }
    if (inputs[c].value === inputs[c].max) { inputs[c].value = 0; show(); }
    b.textContent = "\\u275A\\u275A pause"; b.setAttribute("aria-pressed", "true");
    timer = setInterval(function () { if (!move(c, 1)) stop(); }, 900);
  });
});
// keys pressed in the controls are theirs: a notebook (JupyterLab) must not take the arrows as shortcuts
root.querySelector(".afs-controls").addEventListener("keydown", function (e) { e.stopPropagation(); });
if (still) still.parentNode.removeChild(still);
root.classList.add("afs-live");
show();
})();"""
