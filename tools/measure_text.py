"""Measure a real-text checkpoint: held-out loss vs the baselines, form, sampling knobs, heads, the KV cache.

    python tools/measure_text.py                    # the committed tang and devil checkpoints
    python tools/measure_text.py --checkpoint runs/tang/best --samples 10

Everything printed is computed here from the checkpoint and the installed corpus (the split and the
tokenizer options are read from the checkpoint's meta). Timings (the KV cache's speed-up) are medians
of a few runs on whatever machine this is: quote them with the machine's load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from attention_from_scratch.text import KneserNey, TextModel, head_scores, model_log_probs, prepare_text
from attention_from_scratch.text.form import definition_form, distinct_ngrams, poem_form, repeated_ngrams
from attention_from_scratch.text.generation import PRETRAINED, generate_ids
from attention_from_scratch.text.train_cli import report


def measure(path, n_samples: int, n_new: int) -> None:
    lm = TextModel.load(path)
    meta, tok = lm.meta, lm.tokenizer
    data = prepare_text(meta["corpus"], **meta["data"])
    assert tok == data.tokenizer, "the checkpoint's tokenizer differs from the one its meta rebuilds"
    loss = data.held_out.nats_per_char(model_log_probs(lm.model, data.held_out.ids))
    print(f"== {path}: {meta['corpus']}, trained by: {meta.get('made_by', {}).get('command', meta['command'])}")
    print(report(meta["baselines"], loss, meta["step"]))
    form = poem_form if meta["corpus"] in ("tang", "song") else definition_form
    start = tok.encode("\n\n")
    sampled = {"held-out text": data.held.text}
    sampled["Transformer, T=1"] = "\n\n".join(lm.generate("", n_new, seed=s) for s in range(n_samples))
    sampled["Transformer, top-p 0.9"] = "\n\n".join(lm.generate("", n_new, seed=s, top_p=0.9) for s in range(n_samples))
    for order in (2, 3):
        ngram = KneserNey(order, tok.vocab_size).fit(data.train_ids)
        samples = (tok.decode(ngram.sample(start, n_new, seed=s)) for s in range(n_samples))
        sampled[f"{order}-gram KN"] = "\n\n".join(samples)
    print(f"form ({form.__name__}), {n_samples} samples of {n_new} tokens each:")
    for name, text in sampled.items():
        print(f"  {name:24}", "  ".join(f"{k} {v:.3f}" for k, v in form(text).items()))
    print("sampling knobs: distinct 2-grams (diversity), repeated 4-grams (repetition), mean over the samples")
    for knobs in ({"temperature": 0}, {"temperature": 0.7}, {"temperature": 1.0}, {"temperature": 1.3},
                  {"top_k": 5}, {"top_p": 0.5}, {"top_p": 0.9}):
        texts = [lm.generate("", n_new, seed=s, **knobs) for s in range(n_samples)]
        diversity = statistics.mean(distinct_ngrams(t) for t in texts)
        repetition = statistics.mean(repeated_ngrams(t) for t in texts)
        print(f"  {knobs!s:24} distinct-2 {diversity:.3f}  repeated-4 {repetition:.3f}")
    print("one sample, top-p 0.9:\n" + lm.generate("", n_new, seed=0, top_p=0.9))
    heads = head_scores(lm.model, tok, list(data.held.documents[:20]))
    print("heads (mean attention on the pattern's keys; uniform head in brackets):")
    for pattern, scores in heads.scores.items():
        layer, head, best = heads.best(pattern)
        print(f"  {pattern:12} best layer {layer} head {head}: {best:.3f} [{heads.uniform[pattern]:.3f}]; all:",
              " ".join(f"{x:.2f}" for x in scores.ravel()))
    times = {True: [], False: []}
    for _ in range(3):
        for cache in (True, False):
            t0 = time.perf_counter()
            generate_ids(lm.model, start, lm.model.config.max_len - len(start), seed=0, cache=cache)
            times[cache].append(time.perf_counter() - t0)
    with_cache, without = statistics.median(times[True]), statistics.median(times[False])
    print(f"KV cache: {lm.model.config.max_len - len(start)} tokens in {with_cache:.2f} s with the cache, "
          f"{without:.2f} s recomputing: {without / with_cache:.1f}x (medians of 3; load {os.getloadavg()[0]:.1f})")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", action="append", help="default: the committed tang and devil checkpoints")
    p.add_argument("--samples", type=int, default=8)
    p.add_argument("--tokens", type=int, default=60, help="tokens per sample")
    args = p.parse_args(argv)
    for path in args.checkpoint or [PRETRAINED / "tang", PRETRAINED / "devil"]:
        measure(path, args.samples, args.tokens)
    return 0


if __name__ == "__main__":
    sys.exit(main())
