"""Corpora: the readers on small files written here, the installed texts when Debian's packages are present."""

from __future__ import annotations

import gzip

import pytest

from attention_from_scratch.text import CORPORA, Corpus, CorpusNotFoundError, load_corpus
from attention_from_scratch.text.corpora import _dictd_number, read_dictd, read_fortunes

FORTUNE = (
    "\x1b[32m《静夜思》\x1b[m\n\x1b[33m作者：李白\x1b[m\n床前明月光，疑是地上霜。\n举头望明月，低头思故乡。\n%\n"
    "\x1b[32m题目:《二首》\x1b[m\n\x1b[33m作者:某（９４６－９９９）\x1b[m\n\n            其一\n\n"
    "一二三四五，六七八九十。\n  \n%    \n"
    "\x1b[32m《春晓》\x1b[m\n\x1b[33m作者：孟浩然\x1b[m\n春眠不觉晓，处处闻啼鸟。\n%\n"
)


def installed(name):
    return CORPORA[name].installed() is not None


def test_fortunes_reader_strips_colours_titles_headings_and_blank_lines(tmp_path):
    path = tmp_path / "poems"
    path.write_text(FORTUNE, encoding="utf-8")
    assert read_fortunes(path) == ["床前明月光，疑是地上霜。\n举头望明月，低头思故乡。", "一二三四五，六七八九十。",
                                   "春眠不觉晓，处处闻啼鸟。"]
    with_titles = read_fortunes(path, titles=True)
    assert with_titles[0].startswith("《静夜思》\n作者：李白\n床前")
    assert all("\x1b" not in p for p in with_titles)


def test_dictd_numbers_and_reader(tmp_path):
    assert _dictd_number("A") == 0 and _dictd_number("BdqM") == ((1 * 64 + 29) * 64 + 42) * 64 + 12
    body = b"00-database-info\nheader\nCAT, n.  A pet.   \n\nDOG, n.  Another.\n\n"
    start, dog_start = body.index(b"CAT"), body.index(b"DOG")
    (tmp_path / "t.dict.dz").write_bytes(gzip.compress(body))
    digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    cat, dog = (start, dog_start - start), (dog_start, len(body) - dog_start)
    index = [f"00databaseinfo\tA\t{digits[start]}", f"cat\t{digits[cat[0]]}\t{digits[cat[1]]}",
             f"dog\t{digits[dog[0]]}\t{digits[dog[1]]}", f"kitty\t{digits[cat[0]]}\t{digits[cat[1]]}"]
    (tmp_path / "t.index").write_text("\n".join(index) + "\n", encoding="utf-8")
    # the header left out, trailing spaces stripped, an entry shared by two headwords read once
    assert read_dictd(tmp_path / "t.dict.dz") == ["CAT, n.  A pet.", "DOG, n.  Another."]


def test_missing_named_corpus_names_the_package_and_the_file_alternative(tmp_path):
    for name, package in (("tang", "fortunes-zh"), ("devil", "dict-devil")):
        with pytest.raises(CorpusNotFoundError, match=f"apt-get install {package}") as e:
            load_corpus(name, path=tmp_path / "not-here")
        assert "any UTF-8 text file" in str(e.value) and isinstance(e.value, FileNotFoundError)
    with pytest.raises(FileNotFoundError, match="named corpora are devil, song, tang"):
        load_corpus(tmp_path / "nope.txt")


def test_any_text_file_is_split_into_paragraphs(tmp_path):
    (tmp_path / "mine.txt").write_text("One line.\nTwo.  \n\n\nThird para.\r\n \r\nOne line.\nTwo.\n", encoding="utf-8")
    c = load_corpus(tmp_path / "mine.txt")
    assert c.documents == ("One line.\nTwo.", "Third para.") and c.name == "mine.txt"  # the repeat kept once
    (tmp_path / "gbk.txt").write_bytes("中文".encode("gb18030"))
    with pytest.raises(ValueError, match="not UTF-8"):
        load_corpus(tmp_path / "gbk.txt")


def test_split_holds_out_whole_documents_seeded():
    c = Corpus("c", tuple(f"doc {i}\nline" for i in range(50)))
    train, held = c.split(0.1, seed=3)
    assert len(held) == 5 and len(train) == 45 and not set(train.documents) & set(held.documents)
    assert sorted(train.documents + held.documents) == sorted(c.documents)
    assert held.documents == c.split(0.1, seed=3)[1].documents != c.split(0.1, seed=4)[1].documents
    assert train.text == "\n\n".join(train.documents)
    with pytest.raises(ValueError, match="held_out"):
        c.split(1.5)


@pytest.mark.skipif(not (installed("tang") and installed("song")), reason="needs `apt-get install fortunes-zh`")
def test_tang_and_song_as_installed():
    tang, song = load_corpus("tang"), load_corpus("song")
    assert len(tang) == 313 and len(song) == 96
    lines = [line for p in tang.documents + song.documents for line in p.split("\n")]
    titles = [line for line in lines if line.startswith(("《", "作者", "题目")) or line in ("其一", "其二")]
    assert not titles and not [line for line in lines if "\x1b" in line]
    assert tang.documents[0].startswith("兰叶春葳蕤，桂华秋皎洁。")
    assert load_corpus("tang", titles=True).documents[0].startswith("《感遇・其一》\n作者：张九龄\n兰叶")


@pytest.mark.skipif(not installed("devil"), reason="needs `apt-get install dict-devil`")
def test_devil_as_installed():
    devil = load_corpus("devil")
    assert len(devil) == 997 and devil.documents[0].startswith("ABASEMENT, n.  A decent")
    assert "wiretap" not in devil.text and "PREFACE" not in devil.text  # the dictd headers are left out
    assert devil.documents[-1].startswith("ZOOLOGY, n.")
