"""Store the tokenizer trade-off of the real-text notebook: ``attention_from_scratch/text/checkpoints/tokenizers.json``.

    python tools/store_text_tradeoff.py

For each corpus (tang with the Song poems on the training side, as its checkpoint; devil) and each
tokenizer (characters; byte-level BPE with 512 and 1,024 tokens): vocabulary size, characters per token,
and a Kneser-Ney 3-gram's held-out loss per character (``text.data.tokenizer_tradeoff``). Training a BPE
takes seconds to minutes in pure Python, too slow for the notebook, which recomputes the character rows
and checks them against this file. Needs Debian's ``fortunes-zh`` and ``dict-devil``.
"""

from __future__ import annotations

import json

from attention_from_scratch.text.data import tokenizer_tradeoff
from attention_from_scratch.text.generation import PRETRAINED

COMMAND = "python tools/store_text_tradeoff.py"
EXTRA = {"tang": ["song"], "devil": []}


def main() -> None:
    result = {"command": COMMAND, "order": 3,
              "corpora": {name: tokenizer_tradeoff(name, extra=extra) for name, extra in EXTRA.items()}}
    path = PRETRAINED / "tokenizers.json"
    path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(path)


if __name__ == "__main__":
    main()
