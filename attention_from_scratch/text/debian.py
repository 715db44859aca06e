"""The corpora's Debian packages, fetched on systems where ``apt-get`` cannot install them (macOS, Windows).

    python -m attention_from_scratch corpora           # what is missing, downloaded; then where each corpus is read

A named corpus is read where Debian installs it (:mod:`.corpora`). Elsewhere, :func:`fetch_corpora` downloads the
two packages from Debian's archive, the versions of Debian 12 ("bookworm"): ``fortunes-zh`` 2.98 (546,072 bytes: the
Tang and Song poems) and ``dict-devil`` 1.0-13.1 (179,760 bytes: The Devil's Dictionary). Each download must have the
size and SHA-256 that Debian's package index gives for it (pinned in :data:`PACKAGES`); then only the corpus files
are unpacked, into the cache folder (:func:`.corpora.corpus_cache`) under the paths the package would install them at,
where :func:`.corpora.load_corpus` looks next. Nothing else from a package is written, and nothing is run.

A ``.deb`` is an ``ar`` archive: the line ``!<arch>``, then members, each a 60-byte header (its name in bytes 0-15,
its size in decimal in bytes 48-57) and its bytes, padded to an even length. The member ``data.tar.xz`` is the
tar archive of the files the package installs (``./usr/share/...``); Python's ``tarfile`` reads it.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tarfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .corpora import CORPORA, corpus_cache

__all__ = ["PACKAGES", "DebianPackage", "deb_members", "fetch_corpora", "main"]


@dataclass(frozen=True)
class DebianPackage:
    """One ``.deb`` of Debian's archive: where it lies, its size and SHA-256, and the corpus files it installs."""

    filename: str  # its path in the archive (the package index's "Filename")
    size: int
    sha256: str
    files: tuple[str, ...]  # the files to unpack, as the package installs them

    def urls(self) -> tuple[str, ...]:
        """Debian's archive, then its snapshot service (every version ever published stays there), then the archive
        over plain http, as apt-get itself fetches (a Python whose certificates are not set up, such as python.org's
        on macOS before its "Install Certificates" step, refuses https): the pinned SHA-256 is what makes any of them
        safe to use."""
        return (f"https://deb.debian.org/debian/{self.filename}",
                f"https://snapshot.debian.org/archive/debian/20240101T000000Z/{self.filename}",
                f"http://deb.debian.org/debian/{self.filename}")


PACKAGES = {
    "fortunes-zh": DebianPackage(
        "pool/main/f/fortune-zh/fortunes-zh_2.98_all.deb", 546_072,
        "211c5ddee59d0ae74ce01cbfd02f7c8714740bae1835d5661eb2254edd739105",
        ("/usr/share/games/fortunes/tang300", "/usr/share/games/fortunes/song100")),
    "dict-devil": DebianPackage(
        "pool/main/d/dict-devil/dict-devil_1.0-13.1_all.deb", 179_760,
        "6a535684def2a1f70cd42da16d12d43f0e9dc3e54e4a329178eebab3170e3154",
        ("/usr/share/dictd/devil.dict.dz", "/usr/share/dictd/devil.index")),
}


def deb_members(deb: bytes) -> dict[str, bytes]:
    """The members of a ``.deb`` (an ``ar`` archive) by name: ``{'debian-binary': ..., 'data.tar.xz': ...}``."""
    if not deb.startswith(b"!<arch>\n"):
        raise ValueError("not a Debian package: an ar archive starts with '!<arch>'")
    members, at = {}, 8
    while at + 60 <= len(deb):
        header = deb[at : at + 60]
        name, size = header[:16].decode("ascii").strip().rstrip("/"), int(header[48:58].decode("ascii"))
        members[name] = deb[at + 60 : at + 60 + size]
        at += 60 + size + size % 2  # members start at even offsets
    return members


def _download(package: DebianPackage, urlopen=None) -> bytes:
    """The package's bytes, from the first of its URLs that gives the pinned size and SHA-256 (``urlopen``: default
    urllib's)."""
    urlopen = urllib.request.urlopen if urlopen is None else urlopen
    problems = []
    for url in package.urls():
        try:
            with urlopen(url, timeout=60) as response:
                data = response.read()
        except OSError as e:  # no network, a proxy, HTTP errors (urllib's are OSErrors)
            problems.append(f"{url}: {e}")
            continue
        digest = hashlib.sha256(data).hexdigest()
        if len(data) == package.size and digest == package.sha256:
            return data
        problems.append(f"{url}: {len(data):,} bytes with SHA-256 {digest[:16]}..., not the {package.size:,} bytes "
                        f"with {package.sha256[:16]}... of Debian's index")
    raise OSError("could not download " + package.filename + ": " + "; ".join(problems))


def _unpack(package: DebianPackage, deb: bytes, cache: Path) -> list[Path]:
    """The package's corpus files, written under ``cache`` at the paths it installs them at (and nothing else)."""
    members = deb_members(deb)
    name = next((n for n in members if n.startswith("data.tar")), None)
    if name is None:
        raise ValueError(f"{package.filename} has no data.tar member: {sorted(members)}")
    written = []
    with tarfile.open(fileobj=io.BytesIO(members[name]), mode="r:*") as tar:
        for file in package.files:
            data = tar.extractfile(tar.getmember("." + file)).read()  # a regular file, by its exact name
            target = cache / file.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + ".partial")
            partial.write_bytes(data)
            os.replace(partial, target)  # whole or not at all: a cut download never leaves half a corpus
            written.append(target)
    return written


def fetch_corpora(names=None, *, cache=None, urlopen=None) -> dict[str, str]:
    """Each named corpus (``names``: default all of :data:`.corpora.CORPORA`) that is not installed is downloaded from
    Debian's archive into ``cache`` (default :func:`.corpora.corpus_cache`); returns ``{name: the file it is read
    from}``. A package whose download fails or does not match Debian's digest is an OSError, and nothing of it is
    written."""
    names = sorted(CORPORA) if names is None else list(names)
    unknown = [n for n in names if n not in CORPORA]
    if unknown:
        raise ValueError(f"unknown corpora {unknown}: the named corpora are {', '.join(sorted(CORPORA))}")
    cache = corpus_cache() if cache is None else Path(cache)
    for package_name in sorted({CORPORA[n].package for n in names if CORPORA[n].installed(cache) is None}):
        package = PACKAGES[package_name]
        _unpack(package, _download(package, urlopen), cache)
    return {n: CORPORA[n].installed(cache) for n in names}


def main(args) -> int:
    """The ``corpora`` sub-command: fetch what is missing, then print where each corpus is read from (exit status 0),
    or say in one line why a package could not be fetched (exit status 1)."""
    from ..course import say
    from ..course.i18n import language, msg, render, using_language

    with using_language(language(getattr(args, "lang", None))):
        before = {name: spec.installed() for name, spec in CORPORA.items()}
        try:
            found = fetch_corpora()
        except (OSError, ValueError, tarfile.TarError, KeyError) as e:
            say(render(msg("error: {err}", err=str(e))), file=sys.stderr)
            say(render(msg("Without a network, install the Debian packages fortunes-zh and dict-devil, or train on "
                           "any UTF-8 text file (train --corpus PATH).")), file=sys.stderr)
            return 1
        for name, path in found.items():
            if path in CORPORA[name].paths:
                how = msg("installed by its Debian package")
            else:
                how = msg("downloaded earlier") if before[name] == path else msg("downloaded from Debian's archive")
            say(render(msg("{name}: {path} ({how})", name=name, path=path, how=how)))
    return 0
