"""Refused calls of the real-text API: a clear error naming the argument, and nothing changed by the refusal
(a checkpoint pair, a tokenizer file, a decoder's caches, an output folder)."""

from __future__ import annotations

import gzip
import json
import re

import numpy as np
import pytest

from attention_from_scratch import Transformer, TransformerConfig
from attention_from_scratch.text import BPETokenizer, CharTokenizer, TextModel
from attention_from_scratch.text.checkpoints import load_checkpoint, save_checkpoint
from attention_from_scratch.text.corpora import load_corpus
from attention_from_scratch.text.decoding import Decoder
from attention_from_scratch.text.evaluate import model_log_probs
from attention_from_scratch.text.generation import generate_ids
from attention_from_scratch.text.heads import head_scores
from attention_from_scratch.text.ngrams import AddK, KneserNey
from attention_from_scratch.text.sampling import sample_next
from attention_from_scratch.text.tokenizers import load_tokenizer
from attention_from_scratch.text.train_cli import main
from attention_from_scratch.text.trainer import TrainOptions

TOK = CharTokenizer.train("床前明月光，疑是地上霜。举头望明月，低头思故乡。")


def model(vocab=None, d=8, layers=2):
    return Transformer(TransformerConfig(vocab or TOK.vocab_size, d, 2, layers, 16, 16), seed=0, dtype=np.float32)


def test_a_refused_save_leaves_the_checkpoint_as_it_was(tmp_path):
    save_checkpoint(tmp_path / "a", model(), TOK, {"step": 1})
    before = [(tmp_path / f"a.{ext}").read_bytes() for ext in ("npz", "json")]
    with pytest.raises(TypeError, match="meta must hold only what JSON can"):
        save_checkpoint(tmp_path / "a", model(d=16), TOK, {"x": object()})
    with pytest.raises(TypeError, match="tokenizer must be one of the package's tokenizers, got NoneType"):
        save_checkpoint(tmp_path / "a", model(d=16), None)
    with pytest.raises(ValueError, match=r"has \d+ tokens but the model's vocab_size is 4"):
        save_checkpoint(tmp_path / "a", model(vocab=4), TOK)
    assert [(tmp_path / f"a.{ext}").read_bytes() for ext in ("npz", "json")] == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "a.npz"]  # no temporary file left
    assert load_checkpoint(tmp_path / "a")[2] == {"step": 1}


def test_a_checkpoint_whose_tokenizer_outgrows_its_model_is_refused_on_load(tmp_path):
    save_checkpoint(tmp_path / "a", model(), TOK)
    info = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    info["tokenizer"] = CharTokenizer.train("".join(chr(0x4E00 + i) for i in range(40))).to_dict()  # 296 > 275 rows
    (tmp_path / "a.json").write_text(json.dumps(info), encoding="utf-8")
    with pytest.raises(ValueError, match=r"ids .* have no embedding row"):
        load_checkpoint(tmp_path / "a")


def test_a_refused_tokenizer_save_leaves_the_file_as_it_was(tmp_path):
    path = tmp_path / "tok.json"
    TOK.save(path)
    before = path.read_bytes()
    bpe = BPETokenizer.train("low lower lowest " * 4, 260)
    bpe.pattern = re.compile(r"\w+|\W+")  # set after construction, which refuses it
    with pytest.raises(TypeError):
        bpe.save(path)
    assert path.read_bytes() == before and load_tokenizer(path) == TOK
    with pytest.raises(TypeError, match="pattern must be a regular expression as a str"):
        BPETokenizer.train("low lower", 260, pattern=re.compile(r"\w+"))
    with pytest.raises(TypeError, match="text must be a str or a list of str"):
        BPETokenizer.train([b"low lower"], 260)
    assert BPETokenizer.train("low low", np.int64(258)).vocab_size <= 258


def test_a_refused_decoder_step_leaves_every_cache_as_it_was():
    decoder = Decoder(model())
    decoder.step(np.array([[1, 2]]))
    for bad, error, words in (({"weights": "x"}, TypeError, "weights must be a list"),
                              ({"tokens": [[1, 999]]}, ValueError, "tokens must lie in 0..vocab_size-1"),
                              ({"tokens": [[-1]]}, ValueError, "tokens must lie in 0..vocab_size-1"),
                              ({"tokens": [1, 2]}, ValueError, r"non-empty \(B, T\) integer array"),
                              ({"tokens": [[1.5]]}, ValueError, r"non-empty \(B, T\) integer array")):
        call = {"tokens": np.array([[3]]), **bad}
        with pytest.raises(error, match=words):
            decoder.step(call.pop("tokens"), **call)
        assert [len(c) for c in decoder.caches] == [2, 2]
    assert decoder.step(np.array([[3]])).shape == (1, 1, TOK.vocab_size)


@pytest.mark.parametrize("ids", [[[1.5]], "12", [1.5], [True], 7])
def test_generate_ids_takes_a_list_of_integer_ids(ids):
    with pytest.raises(TypeError, match="ids must be a 1-D list or array of integer token ids"):
        generate_ids(model(), ids, 2)


@pytest.mark.parametrize(("option", "value", "words"), [
    ("steps", 0, "steps must be a positive integer"), ("eval_every", 0, "eval_every must be a positive integer"),
    ("batch_size", 0, "batch_size must be"), ("patience", -1, "patience must be an integer >= 0"),
    ("threads", 0, "threads must be"), ("lr", -1.0, "lr must be a finite real number > 0"),
    ("lr", float("nan"), "lr must be"), ("weight_decay", -100.0, "weight_decay must be"),
    ("input_noise", 2.0, r"input_noise must lie in \[0, 1\)"), ("ema", 1.5, r"ema must lie in \[0, 1\)"),
    ("min_lr_ratio", 5.0, r"min_lr_ratio must lie in \[0, 1\]"), ("time_budget", -1.0, "time_budget must be"),
    ("dtype", "foo", "dtype must be 'float32' or 'float64'"), ("context", 2.5, "context must be a positive integer"),
])
def test_train_options_are_checked_when_made(option, value, words):
    with pytest.raises((ValueError, TypeError), match=words):
        TrainOptions(**{option: value})


def test_the_command_refuses_a_bad_option_before_making_its_folder(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["--corpus", str(tmp_path / "none.txt"), "--out", str(out), "--steps", "0"]) == 2
    assert "steps must be a positive integer, got 0" in capsys.readouterr().err
    assert not out.exists()


def test_the_committed_models_still_generate():
    devil = TextModel.load("devil")
    assert len(generate_ids(devil.model, devil.tokenizer.encode("\n\n"), 3)) == 3


@pytest.mark.parametrize(("logits", "options", "words"), [
    ([1.0, np.nan, 5.0], {}, "no NaN"), ([-np.inf, -np.inf], {}, "at least one finite entry per row"),
    ([1.0, np.inf], {"temperature": 0}, "no NaN and no \\+inf"), ([], {}, "V >= 1"), (3.0, {}, "V >= 1"),
    ([1j, 2], {}, "a real array"), ([True, False], {}, "a real array"),
    ([1.0, 2.0], {"temperature": 0, "top_p": 5}, r"top_p must lie in \(0, 1\]"),
    ([1.0, 2.0], {"temperature": 0, "top_k": 0}, "top_k must be a positive integer"),
])
def test_sample_next_checks_every_argument_greedy_or_not(logits, options, words):
    with pytest.raises(ValueError, match=words):
        sample_next(np.array(logits), np.random.default_rng(0), **options)


def test_sample_next_needs_a_generator_and_skips_removed_tokens():
    with pytest.raises(TypeError, match="rng must be a NumPy Generator"):
        sample_next(np.array([1.0, 2.0]), None)
    draws = [sample_next(np.array([1.0, -np.inf, 5.0]), np.random.default_rng(s)) for s in range(50)]
    assert set(draws) <= {0, 2} and 2 in draws


def test_head_scores_refuses_empty_texts_and_unknown_patterns():
    devil = TextModel.load("devil")
    for texts in ([], "", ["ok", ""]):
        with pytest.raises(ValueError, match="texts must be a non-empty str"):
            head_scores(devil.model, devil.tokenizer, texts)
    scores = head_scores(devil.model, devil.tokenizer, "ABSURDITY, n. A statement or belief.")
    with pytest.raises(ValueError, match="pattern must be one of"):
        scores.best("nope")
    assert scores.best("previous")[2] > 0


def test_ngram_models_check_their_sizes_and_contexts():
    for bad in (0, -3, "3", 2.7, True):
        with pytest.raises(ValueError, match="vocab_size must be a positive integer"):
            AddK(3, bad)
    assert AddK(np.int64(2), np.int64(5)).order == 2
    model = AddK(3, 3)
    with pytest.raises(ValueError, match="fit the model on training ids first"):
        model.next_probs([0, 1])
    model.fit([0, 1, 2, 0, 1, 2, 1])
    assert model.next_probs([0, 1]).argmax() == 2 and np.isclose(model.next_probs([1, 2]).sum(), 1)
    for context in ([0, 7], [-1, 2]):
        with pytest.raises(ValueError, match=r"context must lie in 0\.\.2"):
            model.next_probs(context)
    for context in ([0.5, 1], [[0, 1]], "01"):  # the one check of token ids (infra.checks.check_token_ids)
        with pytest.raises(TypeError, match="context must be a 1-D list or array of integer token ids"):
            model.next_probs(context)
    with pytest.raises(TypeError, match="ids must be a 1-D list or array of integer token ids"):
        AddK(2, 3).fit([0.5, 1.0])


def test_char_tokenizer_training_takes_a_str_and_a_positive_count():
    for bad in (None, b"bytes", ["a list"]):
        with pytest.raises(TypeError, match="text must be a str"):
            CharTokenizer.train(bad)
    for bad in (0, -5, 1.5, "2", True):
        with pytest.raises(ValueError, match="min_count must be a positive integer"):
            CharTokenizer.train("春眠不觉晓", min_count=bad)


@pytest.mark.parametrize(("data", "words"), [
    ([1, 2], r"must be an object with keys \['kind'\], got a list"), ("char", "must be an object"),
    ({"chars": "明月"}, "lacks 'kind'"), ({"kind": ["char"]}, r"'kind' must be a str, got \['char'\]"),
    ({"kind": "words"}, "unknown tokenizer kind 'words'"), ({"kind": "char"}, "lacks 'chars'"),
    ({"kind": "char", "chars": 5}, "'chars' must be a str, got 5"), ({"kind": "bpe"}, "lacks 'merges'"),
    ({"kind": "bpe", "merges": 5}, "'merges' must be a list, got 5"),
    ({"kind": "bpe", "merges": [[97]]}, r"merges must be a list of pairs \[a, b\] of integer token ids"),
    ({"kind": "bpe", "merges": [["a", "b"]]}, "integer token ids"),
    ({"kind": "bpe", "merges": [[97.5, 98]]}, "integer token ids"),  # int() had truncated it to 97
    ({"kind": "bpe", "merges": [], "pattern": 5}, "'pattern' must be a str or None, got 5"),
])
def test_a_malformed_tokenizer_file_is_refused_naming_the_file(tmp_path, data, words):
    path = tmp_path / "tok.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(str(path)) + ".*" + words):
        load_tokenizer(path)


def test_a_tokenizer_file_that_is_not_json_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "tok.json"
    path.write_text("{'kind': 'char'}", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(str(path)) + " is not JSON"):
        load_tokenizer(path)


@pytest.mark.parametrize(("change", "words"), [
    (lambda info: [info], r"must be an object with keys \['config', 'format', 'meta', 'tokenizer'\], got a list"),
    (lambda info: info.pop("config"), "lacks 'config'"),
    (lambda info: info.update(config=[8, 2]), "'config' must be a dict"),
    (lambda info: info["config"].pop("d_model"), r": config .*lacks 'd_model'"),
    (lambda info: info["config"].update(bogus=1), r": config .*has unknown 'bogus'"),
    (lambda info: info["config"].update(d_model="8"), ": config: d_model must be a positive integer, got '8'"),
    (lambda info: info.update(tokenizer=[1]), "'tokenizer' must be a dict"),
    (lambda info: info["tokenizer"].pop("chars"), r": tokenizer .*lacks 'chars'"),
    (lambda info: info.update(format=2), "has checkpoint format 2; this package reads format 1"),
])
def test_a_malformed_checkpoint_file_is_refused_naming_the_file(tmp_path, change, words):
    save_checkpoint(tmp_path / "a", model(), TOK)
    info = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    changed = change(info)
    info = changed if isinstance(changed, list) else info  # the one change that replaces the whole file
    (tmp_path / "a.json").write_text(json.dumps(info), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(str(tmp_path / "a.json")) + ".*" + words):
        load_checkpoint(tmp_path / "a")


@pytest.mark.parametrize("name", ["tang", "song", "devil"])
@pytest.mark.parametrize("text", ["Hello world, this is text.\nSecond line.\n\nAnother paragraph here.\nMore.\n",
                                  "just words\nno punctuation\n", ""])
def test_a_named_corpus_refuses_a_file_in_another_format(tmp_path, name, text):
    path = tmp_path / "plain.txt"  # a plain text file: tang had read it as 1 poem (lines 1-2 as title and author) or 0
    path.write_text(text, encoding="utf-8")
    expected = "a dictd dictionary" if name == "devil" else "a fortune file"
    with pytest.raises(ValueError, match=re.escape(repr(str(path))) + f".*expected {expected}"):
        load_corpus(name, path=path)


def test_a_corpus_with_no_document_is_refused_and_valid_files_still_load(tmp_path):
    (tmp_path / "blank.txt").write_text("\n  \n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="holds no document: expected UTF-8 text, documents separated by blank lines"):
        load_corpus(tmp_path / "blank.txt")
    (tmp_path / "poems").write_text("\x1b[32m《春晓》\x1b[m\n作者：孟浩然\n春眠不觉晓，处处闻啼鸟。\n%\n其一\n无\n%\n",
                                    encoding="utf-8")
    assert load_corpus("tang", path=tmp_path / "poems").documents == ("春眠不觉晓，处处闻啼鸟。",)
    body = b"CAT, n.  A pet.\n"
    (tmp_path / "d.dict.dz").write_bytes(gzip.compress(body))
    (tmp_path / "d.index").write_text(f"cat\tA\t{'ABCDEFGHIJKLMNOPQ'[len(body)]}\n", encoding="utf-8")
    assert load_corpus("devil", path=tmp_path / "d.dict.dz").documents == ("CAT, n.  A pet.",)
    (tmp_path / "d.index").write_text("cat A Q\n", encoding="utf-8")  # spaces, not tabs
    with pytest.raises(ValueError, match=r"d\.index' line 1: 'cat A Q' is not 'headword TAB offset TAB length'"):
        load_corpus("devil", path=tmp_path / "d.dict.dz")


@pytest.mark.parametrize(("option", "value", "error", "words"), [
    ("seed", -1, ValueError, "seed must be an integer >= 0, got -1"), ("seed", 1.5, ValueError, "seed must be"),
    ("threads", 0, ValueError, r"threads \(None or a number of BLAS threads\) must be a positive integer, got 0"),
    ("threads", 2.0, ValueError, "threads .* must be a positive integer"),
    ("cache", "no", TypeError, "cache must be True or False, got 'no'"), ("cache", 1, TypeError, "cache must be"),
])
def test_generate_ids_checks_its_options(option, value, error, words):
    with pytest.raises(error, match=words):
        generate_ids(model(), [1, 2], 2, **{option: value})


def test_generate_ids_takes_the_documented_thread_counts():
    assert generate_ids(model(), [1, 2], 2, threads=None) == generate_ids(model(), [1, 2], 2, threads=2)


@pytest.mark.parametrize(("option", "value", "words"), [
    ("batch_size", 0, "batch_size must be a positive integer, got 0"),  # range() had refused its step 0
    ("batch_size", 2.5, "batch_size must be a positive integer, got 2.5"),
    ("context", 2.7, "context must be a positive integer, got 2.7"),  # int() had read it as 2
    ("threads", 0, r"threads \(None or a number of BLAS threads\) must be a positive integer, got 0"),
])
def test_model_log_probs_checks_its_options(option, value, words):
    with pytest.raises(ValueError, match=words):
        model_log_probs(model(), [1, 2, 3, 4, 5], **{option: value})
    with pytest.raises(TypeError, match="ids must be a 1-D list or array of integer token ids"):
        model_log_probs(model(), [1.5, 2.5, 3.5])  # had been truncated to [1, 2, 3]


@pytest.mark.parametrize("tokenizer", [BPETokenizer.train("low lower lowest " * 4, 260), TOK])
def test_decode_refuses_ids_that_are_not_integers(tokenizer):
    for ids in ([65.7], [65.0], np.array([65.7]), [[65]], "65", [True]):  # int(65.7) had decoded to 'A'
        with pytest.raises(TypeError, match="ids must be a 1-D list or array of integer token ids"):
            tokenizer.decode(ids)
    assert tokenizer.decode(np.array([65, 66])) == tokenizer.decode([np.int64(65), 66]) == "AB"


def test_a_chunk_pattern_with_a_capture_group_is_refused_as_such():
    for pattern in (r"(\w+)|\W+", r"( ?\w+)|(\s+)|[^\w\s]+"):  # findall returns the groups: had said 'skips characters'
        with pytest.raises(ValueError, match=r"capturing group.*re\.findall would return the groups.*\(\?:"):
            BPETokenizer.train("low lower", 260, pattern=pattern)
    with pytest.raises(ValueError, match=r"capturing group"):
        BPETokenizer([], pattern=r"(\w+)|\W+")
    with pytest.raises(ValueError, match=r"pattern '\(\\\\w\+' is not a regular expression"):
        BPETokenizer.train("low lower", 260, pattern=r"(\w+")
    assert BPETokenizer.train("low low", 258, pattern=r"(?:\w+)|\W+").encode("low") == [257]


def test_an_ngram_loss_needs_a_token_to_predict():
    for model in (AddK(2, 3).fit([0, 1, 2, 1]), KneserNey(2, 3).fit([0, 1, 2, 1])):
        for ids in ([0], []):  # the mean of no log-probability had been NaN
            with pytest.raises(ValueError, match=r"ids must hold at least 2 tokens .*got \d"):
                model.loss(ids)
        assert np.isfinite(model.loss([0, 1]))


@pytest.mark.parametrize(("k", "error"), [(np.inf, ValueError), (np.nan, ValueError), (0, ValueError),
                                          (-1.0, ValueError), ("1", TypeError), (True, TypeError)])
def test_add_k_needs_a_finite_positive_k(k, error):
    with pytest.raises(error, match="k must be a finite real number > 0"):  # k = inf had made every p NaN
        AddK(2, 3, k=k)


def test_a_checkpoint_without_an_array_is_refused_naming_it(tmp_path):
    save_checkpoint(tmp_path / "a", model(), TOK)
    with np.load(tmp_path / "a.npz") as stored:
        arrays = {name: stored[name] for name in stored.files if name != "embed"}
    np.savez(tmp_path / "a.npz", **arrays)  # the embedding dropped: its dtype had been read first (a KeyError)
    with pytest.raises(ValueError, match=re.escape(str(tmp_path / "a.npz")) + r": array 'embed' should be .*missing"):
        load_checkpoint(tmp_path / "a")


@pytest.mark.parametrize(("damage", "words"), [
    ("meta", r"last\.json: meta .*lacks 'adam_t'"),
    ("state", r"last\.json: meta's state .*lacks 'step'"),
    ("rng", r"last\.json: meta's rng is not a PCG64 state"),
    ("npz", r"last\.npz: array 'adam_v/0\.w_q' should be .*missing"),
])
def test_resuming_from_a_damaged_checkpoint_is_refused_naming_the_file(tmp_path, damage, words):
    from attention_from_scratch.text.trainer import train_on_text

    ids = np.asarray(TOK.encode("床前明月光，疑是地上霜。举头望明月，低头思故乡。" * 8))
    held, options = ids[:40], TrainOptions(d_model=8, n_heads=2, n_layers=1, d_ff=16, context=8, batch_size=4,
                                           steps=8, eval_every=4, warmup=1)
    from attention_from_scratch.text.evaluate import HeldOut

    held = HeldOut(held, n_chars=len(held))
    cut = train_on_text(ids, held, TOK, options, tmp_path / "r", callback=lambda step, state: (_ for _ in ()).throw(
        KeyboardInterrupt) if step == 4 else None, log=lambda _: None)
    assert cut.stopped == "interrupted"
    last = tmp_path / "r" / "last"
    if damage in ("meta", "state", "rng"):
        info = json.loads(last.with_suffix(".json").read_text(encoding="utf-8"))
        if damage == "meta":
            del info["meta"]["adam_t"]
        elif damage == "state":
            del info["meta"]["state"]["step"]  # had raised a KeyError once the run started
        else:
            info["meta"]["rng"] = {"bit_generator": "PCG64", "state": {"state": "x"}}
        last.with_suffix(".json").write_text(json.dumps(info), encoding="utf-8")
    else:
        with np.load(last.with_suffix(".npz")) as stored:
            arrays = {name: stored[name] for name in stored.files if name != "adam_v/0.w_q"}
        np.savez(last.with_suffix(".npz"), **arrays)
    with pytest.raises(ValueError, match=words):
        train_on_text(ids, held, TOK, options, tmp_path / "r", resume=True, log=lambda _: None)


def test_attention_maps_and_ngram_samples_take_integer_ids_only():
    from attention_from_scratch.text.heads import attention_maps

    with pytest.raises(TypeError, match="ids"):
        attention_maps(model(), [1.7, 2.0])  # int(1.7) had read token 1
    with pytest.raises(ValueError, match="threads"):
        attention_maps(model(), [1, 2], threads=0)
    bigram = AddK(2, 5).fit([0, 1, 2, 3, 4, 0, 1])
    with pytest.raises(TypeError, match="context"):
        bigram.sample([1.5], 3)
    assert len(bigram.sample([1], 3)) == 3
