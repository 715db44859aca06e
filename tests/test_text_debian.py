"""The corpora's Debian packages fetched without apt-get (text/debian.py), offline: a package built here, in the
``.deb`` format (an ar archive holding data.tar.xz), served by a fake opener. The real download was checked by hand
(2026-12-06: both packages from deb.debian.org, their files byte for byte those apt-get installs)."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import tarfile

import pytest

from attention_from_scratch.__main__ import main as cli
from attention_from_scratch.text import corpora, debian, load_corpus

FORTUNE = "\x1b[32m《静夜思》\x1b[m\n\x1b[33m作者：李白\x1b[m\n床前明月光，疑是地上霜。\n%\n"


def ar(members: dict[str, bytes]) -> bytes:
    """An ar archive (a .deb's outer format): the signature, then each member's 60-byte header and its bytes."""
    out = b"!<arch>\n"
    for name, data in members.items():
        header = f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode("ascii")
        assert len(header) == 60
        out += header + data + b"\n" * (len(data) % 2)
    return out


def deb(files: dict[str, bytes]) -> bytes:
    """A .deb installing ``files`` (path -> bytes), plus a file that must not be unpacked."""
    tar_bytes = io.BytesIO()
    with tarfile.open(fileobj=tar_bytes, mode="w:xz") as tar:
        for path, data in {**files, "/usr/bin/not-a-corpus": b"#!/bin/sh\n"}.items():
            info = tarfile.TarInfo("." + path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return ar({"debian-binary": b"2.0\n", "control.tar.xz": b"", "data.tar.xz": tar_bytes.getvalue()})


@pytest.fixture
def archive(monkeypatch):
    """Debian's archive, faked: fortunes-zh holding one poem in tang300 and song100, pinned by its own digest;
    and apt-get's files made absent (CI installs them)."""
    data = deb({"/usr/share/games/fortunes/tang300": FORTUNE.encode(), "/usr/share/games/fortunes/song100":
                FORTUNE.encode()})
    package = dataclasses.replace(debian.PACKAGES["fortunes-zh"], size=len(data),
                                  sha256=hashlib.sha256(data).hexdigest())
    monkeypatch.setitem(debian.PACKAGES, "fortunes-zh", package)
    real_isfile = os.path.isfile
    monkeypatch.setattr(corpora.os.path, "isfile", lambda p: not os.fspath(p).startswith("/usr/") and real_isfile(p))
    served = []

    def urlopen(url, timeout):  # a response is a context manager with read(): BytesIO is one
        served.append(url)
        if not url.startswith("https://deb.debian.org"):
            raise OSError(f"HTTP Error 404: {url}")
        return io.BytesIO(data)

    return urlopen, served


def test_a_fetched_package_gives_the_corpus_from_the_cache(archive, tmp_path, monkeypatch):
    urlopen, served = archive
    monkeypatch.setenv("ATTENTION_FROM_SCRATCH_CACHE", str(tmp_path))
    with pytest.raises(corpora.CorpusNotFoundError, match="python -m attention_from_scratch corpora"):
        load_corpus("tang")
    found = debian.fetch_corpora(["tang", "song"], urlopen=urlopen)
    cached = tmp_path / "debian" / "usr" / "share" / "games" / "fortunes"
    assert found == {"tang": str(cached / "tang300"), "song": str(cached / "song100")} and len(served) == 1
    tang = load_corpus("tang")
    assert tang.documents == ("床前明月光，疑是地上霜。",) and tang.source == found["tang"]
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["song100", "tang300"]  # nothing else
    assert debian.fetch_corpora(["tang"], urlopen=urlopen) == {"tang": found["tang"]} and len(served) == 1  # cached


def test_a_download_that_is_not_debians_package_writes_nothing(archive, tmp_path):
    urlopen, _ = archive

    def tampered(url, timeout):
        data = urlopen(url, timeout).read()  # 404 but for https://deb.debian.org
        return io.BytesIO(data + b"x")

    def offline(url, timeout):
        raise OSError("Network is unreachable")

    for opener, why in ((tampered, "not the"), (offline, "Network is unreachable")):
        with pytest.raises(OSError, match=why) as e:
            debian.fetch_corpora(["tang"], cache=tmp_path, urlopen=opener)
        assert all(url in str(e.value) for url in debian.PACKAGES["fortunes-zh"].urls())  # each place tried
        assert not list(tmp_path.rglob("*"))
    with pytest.raises(ValueError, match="named corpora are devil, song, tang"):
        debian.fetch_corpora(["poems"], cache=tmp_path, urlopen=urlopen)
    with pytest.raises(ValueError, match="not a Debian package"):
        debian.deb_members(b"<html>404</html>")


def test_the_command_says_where_each_corpus_is_read_from(archive, tmp_path, monkeypatch, capsys):
    urlopen, _ = archive
    monkeypatch.setenv("ATTENTION_FROM_SCRATCH_CACHE", str(tmp_path))
    monkeypatch.setattr(debian.urllib.request, "urlopen", urlopen)
    monkeypatch.setattr(debian, "CORPORA", {"tang": corpora.CORPORA["tang"]})  # the fake archive holds fortunes-zh
    where = tmp_path / "debian" / "usr" / "share" / "games" / "fortunes" / "tang300"
    assert cli(["corpora"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"tang: {where} (downloaded from Debian's archive)"]
    assert cli(["corpora", "--lang", "zh"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"tang：{where}（此前已经下载）"]
    for path in where.parent.iterdir():
        path.unlink()
    monkeypatch.setattr(debian.urllib.request, "urlopen", lambda url, timeout: (_ for _ in ()).throw(OSError("down")))
    assert cli(["corpora"]) == 1
    err = capsys.readouterr().err
    assert "down" in err and "train --corpus PATH" in err


@pytest.mark.skipif(os.environ.get("ATTENTION_FROM_SCRATCH_NETWORK_TESTS") != "1",
                    reason="downloads 0.7 MB from deb.debian.org: set ATTENTION_FROM_SCRATCH_NETWORK_TESTS=1 to run it")
def test_debians_archive_still_serves_the_pinned_packages(tmp_path):
    """The real download (opt-in: the suite runs offline): each pinned package, its digest checked, its corpus files
    unpacked; where apt-get installed them too, byte for byte the same."""
    for package in debian.PACKAGES.values():
        for written, installed in zip(debian._unpack(package, debian._download(package, None), tmp_path),
                                      package.files, strict=True):
            assert written.stat().st_size > 10_000
            if os.path.isfile(installed):
                assert written.read_bytes() == open(installed, "rb").read()
