"""TeX math as plain Unicode text, for the places where the site cannot typeset it.

A browser tab's title, a print header, the navigation, a search result's title and its snippet show
text, not MathJax: ``\\sqrt{d_k}`` there should read ``√dₖ``, and ``n \\times n`` read ``n × n``.
``tex_to_text`` covers the TeX that the course writes (Greek letters, operators, fractions, roots,
fonts, sub- and superscripts, ``align`` blocks); an unknown command ``\\name`` becomes ``name``, and no
backslash or brace is left.
"""

from __future__ import annotations

import re

__all__ = ["tex_to_text"]

_GREEK = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau "
          "upsilon phi chi psi omega").split()
SYMBOLS = {
    **{g: chr(0x3B1 + i + (i > 16)) for i, g in enumerate(_GREEK)},  # α..ω (skipping final sigma ς)
    "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π", "Sigma": "Σ", "Upsilon": "Υ",
    "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω", "varepsilon": "ε", "vartheta": "ϑ", "varphi": "φ", "varsigma": "ς",
    "cdot": "·", "times": "×", "div": "÷", "pm": "±", "mp": "∓", "infty": "∞", "le": "≤", "leq": "≤", "ge": "≥",
    "geq": "≥", "ne": "≠", "neq": "≠", "approx": "≈", "sim": "∼", "simeq": "≃", "equiv": "≡", "propto": "∝",
    "ll": "≪", "gg": "≫", "to": "→", "rightarrow": "→", "Rightarrow": "⇒", "leftarrow": "←", "gets": "←",
    "mapsto": "↦", "iff": "⇔", "in": "∈", "notin": "∉", "subset": "⊂", "subseteq": "⊆", "cup": "∪", "cap": "∩",
    "forall": "∀", "exists": "∃", "sum": "Σ", "prod": "∏", "int": "∫", "partial": "∂", "nabla": "∇", "top": "ᵀ",
    "intercal": "ᵀ", "odot": "⊙", "otimes": "⊗", "oplus": "⊕", "circ": "∘", "ldots": "…", "cdots": "⋯", "dots": "…",
    "vdots": "⋮", "ddots": "⋱", "lvert": "|", "rvert": "|", "vert": "|", "mid": "|", "lVert": "‖", "rVert": "‖",
    "Vert": "‖", "|": "‖", "langle": "⟨", "rangle": "⟩", "lceil": "⌈", "rceil": "⌉", "lfloor": "⌊", "rfloor": "⌋",
    "ell": "ℓ", "prime": "′", "star": "⋆", "ast": "∗", "bullet": "•", "emptyset": "∅", "neg": "¬", "land": "∧",
    "lor": "∨", "triangleq": "≜", "coloneqq": "≔", "lbrace": "{", "rbrace": "}", "checkmark": "✓",
    "quad": " ", "qquad": " ", ",": " ", ";": " ", ":": " ", " ": " ", "!": "", "{": "{", "}": "}", "%": "%",
    "_": "_", "&": "&", "#": "#", "$": "$", "\\": "; ",
}
FONTS = {"mathrm", "text", "textrm", "mathbf", "mathit", "operatorname", "boldsymbol", "bm", "mathsf", "mathtt",
         "texttt", "textbf", "textit", "emph", "mathcal", "mathscr", "hat", "widehat", "tilde", "widetilde", "bar",
         "overline", "vec", "underbrace", "overbrace", "underline", "mbox"}
DROPPED = {"left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr", "displaystyle",
           "textstyle", "limits", "nolimits", "nonumber", "notag"}
DROPPED_WITH_ARG = {"begin", "end", "label", "color", "vphantom", "phantom"}
# binary operators and relations: a space on each side, as TeX typesets them
SPACED = {"cdot", "times", "div", "pm", "mp", "le", "leq", "ge", "geq", "ne", "neq", "approx", "sim", "simeq",
          "equiv", "propto", "ll", "gg", "to", "rightarrow", "Rightarrow", "leftarrow", "gets", "mapsto", "iff", "in",
          "notin", "subset", "subseteq", "cup", "cap", "odot", "otimes", "oplus", "circ", "triangleq", "coloneqq"}
_SUB = dict(zip("0123456789+-=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ", strict=True))
_SUP = dict(zip("0123456789+-=()niT−", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱᵀ⁻", strict=True))
_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|.", re.DOTALL)


def _wrap(text: str) -> str:
    """``text`` as one operand: in parentheses when it has more than one term."""
    return f"({text})" if re.search(r"[\s+\-−·×/,=]", text.strip()) else text.strip()


def _script(text: str, table: dict[str, str], mark: str) -> str:
    text = text.strip()
    if text and all(c in table for c in text):
        return "".join(table[c] for c in text)
    return mark + (text if re.fullmatch(r"\w+", text) else f"({text})")


class _Reader:
    def __init__(self, tex: str):
        self.tokens, self.i = _TOKEN.findall(tex), 0

    def _next(self) -> str | None:
        token = self.tokens[self.i] if self.i < len(self.tokens) else None
        self.i += 1
        return token

    def argument(self) -> str:
        """The next argument: a ``{group}`` or a single token, as text."""
        while self.i < len(self.tokens) and self.tokens[self.i].isspace():
            self.i += 1
        if self.i < len(self.tokens) and self.tokens[self.i] == "{":
            self.i += 1
            return self.text(until="}")
        token = self._next()
        return "" if token is None else self.convert(token)

    def text(self, until: str | None = None) -> str:
        out = []
        while (token := self._next()) is not None and token != until:
            out.append(self.convert(token))
        return "".join(out)

    def convert(self, token: str) -> str:
        word = re.fullmatch(r"\\[A-Za-z]+", token) is not None
        if word:  # TeX ignores the spaces after a control word
            while self.i < len(self.tokens) and self.tokens[self.i].isspace():
                self.i += 1
        text = self._convert(token)
        following = self.tokens[self.i] if self.i < len(self.tokens) else ""
        if word and re.fullmatch(r"[A-Za-z]{2,}", text) and re.match(r"[A-Za-z0-9\\]", following):
            text += " "  # an operator name before its argument: cos θ, log x
        return text

    def _convert(self, token: str) -> str:
        if token == "{":
            return self.text(until="}")
        if token in ("}", "&"):
            return " " if token == "&" else ""
        if token == "~":
            return " "
        if token in ("^", "_"):
            arg = self.argument()
            return _script(arg, _SUP, "^") if token == "^" else _script(arg, _SUB, "_")
        if not token.startswith("\\"):
            return "−" if token == "-" else token
        name = token[1:]
        if name in SYMBOLS:
            return f" {SYMBOLS[name]} " if name in SPACED else SYMBOLS[name]
        if name in ("frac", "dfrac", "tfrac"):
            numerator, denominator = self.argument(), self.argument()
            return f"{_wrap(numerator)}/{_wrap(denominator)}"
        if name == "sqrt":
            if self.i < len(self.tokens) and self.tokens[self.i] == "[":
                self.text(until="]")  # the root's degree: rare in the course, dropped
            return "√" + _wrap(self.argument())
        if name == "mathbb":
            arg = self.argument()
            return {"R": "ℝ", "N": "ℕ", "Z": "ℤ", "E": "𝔼"}.get(arg, arg)
        if name in FONTS:
            return self.argument()
        if name == "tag":
            return f" ({self.argument()})"
        if name in DROPPED_WITH_ARG:
            self.argument()
            return " "
        if name in DROPPED:
            if name in ("left", "right") and self.i < len(self.tokens) and self.tokens[self.i] == ".":
                self.i += 1  # \left. : an invisible delimiter
            return ""
        return name  # an operator name or a command we do not know: its name reads better than nothing


def tex_to_text(tex: str) -> str:
    """The TeX of one formula (without its ``$`` or ``\\(`` delimiters) as Unicode text on one line."""
    text = _Reader(tex).text()
    return re.sub(r"\s+", " ", text.replace("^ᵀ", "ᵀ")).strip()
