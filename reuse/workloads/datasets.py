"""The project's third-party data: where each file comes from, and how set-up installs it.

The OPMW/WINGS templates and the RIoTBench task resources are third-party files (CC BY-SA 3.0 and
Apache 2.0), so the repository holds none of them: ``reuse/workloads/datasets.tsv`` (the manifest) names
every file under ``data/`` with its upstream repository, a pinned commit, its path there and the
SHA-256 of the bytes the project's figures were measured on. ``scripts/setup.sh`` runs
``python -m reuse.workloads.datasets fetch``, which installs each missing part (``opmw``, ``riotbench``):

1. from a local copy when one is given (``--local`` / ``$REUSE_SHARED_DATA``) or when
   ``../shared/data`` exists next to the repository: a plain copy, as set-up always did;
2. otherwise by download, from ``$REUSE_DATA_MIRROR`` (any base URL urllib opens, ``file://``
   included) or from ``https://raw.githubusercontent.com``, each file at
   ``<base>/<repo>/<commit>/<path>``, every SHA-256 checked.

A part is written into a temporary folder inside ``data/`` and renamed into place only when every
file of every missing part has arrived and matched, so a failed or interrupted set-up leaves no
half-written ``data/``. A failure prints one line naming what to download and where to put it.
``data/README.md`` records the provenance, the pinned commits and the licences.
``python -m reuse.workloads.datasets verify`` checks an existing ``data/`` against the manifest.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from reuse.core.errors import ReuseError

__all__ = [
    "DataError",
    "Part",
    "Entry",
    "PARTS",
    "MANIFEST",
    "UPSTREAM_BASE",
    "load_manifest",
    "install",
    "verify",
    "readme_text",
    "main",
]

MANIFEST = Path(__file__).with_name("datasets.tsv")
UPSTREAM_BASE = "https://raw.githubusercontent.com"
FIXUPS = ("-", "strip-final-newline")
_PROVENANCE = ".provenance.json"  # data/.provenance.json: how each part got there


class DataError(ReuseError):
    """Set-up could not install or check the data (one line, names the file or URL)."""


@dataclass(frozen=True)
class Part:
    """One folder under ``data/`` and where it comes from, for messages and ``data/README.md``."""

    name: str
    title: str
    repo: str
    folder: str
    licence: str
    licence_url: str
    note: str

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or "/" not in self.repo:
            raise ValueError(f"bad data part {self.name!r} ({self.repo!r})")


#: The two parts, in install order. Licences: the WINGS corpus readme (each workflow CC BY-SA 3.0);
#: RIoTBench as the project and its issue tracker state it (Apache 2.0).
PARTS: dict[str, Part] = {
    "opmw": Part(
        "opmw", "OPMW / WINGS workflow templates (snapshot of 29 Oct 2012)",
        "wf4ever/provenance-corpus", "WINGS_repository/Wings_corpus",
        "CC BY-SA 3.0 (each workflow, as the corpus readme states)",
        "https://creativecommons.org/licenses/by-sa/3.0/",
        "The corpus readme (`WINGS_repository/readme.md`) is installed as "
        "`wings-corpus/SOURCE-readme.md`; the PNG diagrams are not used and not fetched."),
    "riotbench": Part(
        "riotbench", "RIoTBench task resources (sample SenML streams, task properties, ARFF sets)",
        "dream-lab/riot-bench", "modules/tasks/src/main/resources",
        "Apache License 2.0",
        "https://www.apache.org/licenses/LICENSE-2.0",
        "`TAXI_sample_data_senml.csv` ends with a newline upstream that the reference copy lacks; "
        "set-up strips it so both give the same 999 events. `newdataregressionNumeric.arff` is "
        "byte-identical to `linearregression.arff` and is fetched from that path. The code index "
        "used to pin the commits shows no LICENSE file in the repository: check upstream before "
        "redistributing."),
}


@dataclass(frozen=True)
class Entry:
    """One manifest row: a file under ``data/`` and its pinned upstream source.

    Examples
    --------
    >>> e = Entry("riotbench/a b.txt", "dream-lab/riot-bench", "0" * 40, "res/a b.txt", 3,
    ...           "a" * 64, "-")
    >>> e.part, e.url("file:///m/")
    ('riotbench', 'file:///m/dream-lab/riot-bench/0000000000000000000000000000000000000000/res/a%20b.txt')
    """

    dest: str
    repo: str
    commit: str
    path: str
    size: int
    sha256: str
    fixup: str

    def __post_init__(self) -> None:
        parts = self.dest.split("/")
        if parts[0] not in PARTS or len(parts) < 2 or ".." in parts or "" in parts:
            raise ValueError(f"bad destination '{self.dest}' (must be <part>/<file>, part one of "
                             f"{', '.join(PARTS)})")
        if len(self.commit) != 40 or not _is_hex(self.commit):
            raise ValueError(f"{self.dest}: commit '{self.commit}' is not 40 hex digits")
        if len(self.sha256) != 64 or not _is_hex(self.sha256):
            raise ValueError(f"{self.dest}: sha256 '{self.sha256}' is not 64 hex digits")
        if self.size < 0 or self.fixup not in FIXUPS:
            raise ValueError(f"{self.dest}: bad size {self.size} or fixup '{self.fixup}'")

    @property
    def part(self) -> str:
        return self.dest.split("/", 1)[0]

    def url(self, base: str) -> str:
        """Where the file is: ``<base>/<repo>/<commit>/<path>`` (raw.githubusercontent's layout)."""
        return f"{base.rstrip('/')}/{self.repo}/{self.commit}/{urllib.parse.quote(self.path)}"

    def installed_bytes(self, raw: bytes) -> bytes:
        """The downloaded bytes after the row's fixup (what the checksum is of)."""
        if self.fixup == "strip-final-newline" and raw.endswith(b"\n"):
            return raw[:-1]
        return raw


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def load_manifest(path: str | os.PathLike[str] = MANIFEST) -> tuple[Entry, ...]:
    """The manifest's rows (``#`` lines are comments; the first other line is the header)."""
    rows: list[Entry] = []
    header_seen = False
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if not header_seen:
            header_seen = True
            continue
        try:
            dest, repo, commit, upath, size, sha, fixup = cells
            rows.append(Entry(dest, repo, commit, upath, int(size), sha, fixup))
        except ValueError as exc:
            raise DataError(f"line {number}: {exc}", file=str(path)) from None
    if not rows:
        raise DataError("no files listed", file=str(path))
    return tuple(rows)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def how_to_get(parts: Sequence[str], entries: Sequence[Entry]) -> str:
    """What to download and where to put it, for the one-line error.

    Examples
    --------
    >>> how_to_get(["riotbench"], load_manifest())  # doctest: +ELLIPSIS
    'download folder modules/tasks/src/main/resources of github.com/dream-lab/riot-bench at commits 95bc2802beb4, 8ef18d75a72c, d233e50c5261 into data/riotbench/ (files and SHA-256: reuse/workloads/datasets.tsv), or set REUSE_SHARED_DATA to a folder holding riotbench/, ...'
    """
    where = []
    for part in parts:
        p = PARTS[part]
        commits = Counter(e.commit[:12] for e in entries if e.part == part)
        word = "commit" if len(commits) == 1 else "commits"
        pinned = ", ".join(c for c, _ in commits.most_common())
        sub = os.path.commonpath([e.dest for e in entries if e.part == part]) + "/"
        where.append(f"folder {p.folder} of github.com/{p.repo} at {word} {pinned} "
                     f"into data/{sub}")
    folders = " and ".join(f"{part}/" for part in parts)
    return (f"download {' and '.join(where)} (files and SHA-256: reuse/workloads/datasets.tsv), or set "
            f"REUSE_SHARED_DATA to a folder holding {folders}, or REUSE_DATA_MIRROR to a mirror of "
            f"{UPSTREAM_BASE}")


Opener = Callable[[str], bytes]


def _urlopen(url: str, timeout: float = 60.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (pinned URLs)
        data: bytes = response.read()
        return data


def _download(part: str, entries: Sequence[Entry], into: Path, base: str, opener: Opener,
              hint: str) -> None:
    """Every file of ``part`` into ``into``, checked; ``hint`` says how to get the data by hand."""
    for e in (e for e in entries if e.part == part):
        url = e.url(base)
        try:
            raw = opener(url)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise DataError(f"cannot download {url} ({reason}); {hint}",
                            file=f"data/{part}") from None
        data = e.installed_bytes(raw)
        if _sha256(data) != e.sha256:
            raise DataError(f"SHA-256 of {url} is {_sha256(data)[:16]}..., the manifest says "
                            f"{e.sha256[:16]}... ({len(data)} bytes, expected {e.size}); nothing "
                            f"was installed; {hint}", file=f"data/{e.dest}")
        target = into / e.dest
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def install(data_dir: str | os.PathLike[str], *, local: str | os.PathLike[str] | None = None,
            default_local: str | os.PathLike[str] | None = None, base: str = UPSTREAM_BASE,
            manifest: str | os.PathLike[str] = MANIFEST, opener: Opener = _urlopen,
            say: Callable[[str], None] = lambda line: None) -> dict[str, str]:
    """Install every missing part of ``data_dir``; return ``{part: where it came from}``.

    Parameters
    ----------
    data_dir
        The project's ``data/`` folder (created if missing; removed again if set-up fails and it
        was created here).
    local
        A folder holding ``opmw/`` and ``riotbench/`` the user named (``$REUSE_SHARED_DATA``): a
        part missing there is an error, not a download, since the user asked for this copy.
    default_local
        The conventional sibling copy (``../shared/data``): used when it holds the part.
    base
        Base URL of the download (upstream or a mirror with the same layout).
    opener
        ``url -> bytes``; the default uses :mod:`urllib` (http, https, file).

    Raises
    ------
    DataError
        A download failed or a checksum did not match: nothing of any part was installed.
    """
    data = Path(data_dir)
    entries = load_manifest(manifest)
    missing = [p for p in PARTS if not (data / p).is_dir()]
    if not missing:
        return {}
    created = not data.exists()
    data.mkdir(parents=True, exist_ok=True)
    for stale in data.glob(".incoming-*"):  # left by a set-up that was killed
        shutil.rmtree(stale, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=data))
    sources: dict[str, str] = {}
    try:
        for part in missing:
            chosen = Path(local) if local is not None else (
                Path(default_local) if default_local is not None else None)
            if chosen is not None and (chosen / part).is_dir():
                say(f"copying {chosen / part} -> {data / part}")
                shutil.copytree(chosen / part, staging / part)
                sources[part] = f"copied from `{chosen.resolve() / part}`"
            elif local is not None:
                raise DataError(f"{Path(local) / part} was not found (REUSE_SHARED_DATA names a "
                                f"folder holding opmw/ and riotbench/)", file=f"data/{part}")
            else:
                say(f"downloading data/{part} from {base} (pinned commits, SHA-256 checked)")
                hint = how_to_get([p for p in missing if p not in sources], entries)
                _download(part, entries, staging, base, opener, hint)
                sources[part] = f"downloaded from `{base}` and checked against reuse/workloads/datasets.tsv"
        for part in missing:  # every part arrived: move them into place
            os.replace(staging / part, data / part)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if created:
            shutil.rmtree(data, ignore_errors=True)
        raise
    shutil.rmtree(staging, ignore_errors=True)
    _write_provenance(data, sources, entries)
    return sources


def _write_provenance(data: Path, sources: dict[str, str], entries: Sequence[Entry]) -> None:
    record = data / _PROVENANCE
    known: dict[str, str] = {}
    if record.is_file():
        try:
            known = dict(json.loads(record.read_text(encoding="utf-8")))
        except (ValueError, TypeError):
            known = {}
    known.update(sources)
    record.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    (data / "README.md").write_text(readme_text(entries, known), encoding="utf-8")


def readme_text(entries: Sequence[Entry], sources: dict[str, str]) -> str:
    """``data/README.md``: provenance, pinned commits and licences of each part.

    Examples
    --------
    >>> text = readme_text(load_manifest(), {"opmw": "copied from `/x/opmw`"})
    >>> "CC BY-SA 3.0" in text and "Apache License 2.0" in text and "copied from `/x/opmw`" in text
    True
    """
    lines = [
        "# data/: third-party inputs (not part of the repository)",
        "",
        "Written by set-up (`python -m reuse.workloads.datasets`). None of these files is committed; "
        "`reuse/workloads/datasets.tsv` lists each one with its upstream repository, pinned commit, path "
        "and SHA-256. `python -m reuse.workloads.datasets verify` checks this folder against it.",
        "",
    ]
    for name, p in PARTS.items():
        mine = [e for e in entries if e.part == name]
        commits = Counter(e.commit for e in mine)
        lines += [
            f"## {name}/: {p.title}",
            "",
            f"- Upstream: https://github.com/{p.repo}, folder `{p.folder}`",
            f"- Licence: {p.licence} ({p.licence_url})",
            f"- Files: {len(mine)}, {sum(e.size for e in mine):,} bytes",
            "- Pinned commits: " + "; ".join(f"`{c}` ({n} files)" for c, n in commits.most_common()),
            f"- This copy: {sources.get(name, 'present before set-up wrote this file (source not recorded)')}",
            f"- Note: {p.note}",
            "",
        ]
    lines += [
        "The commits are those at which a public code index holds each file; sizes were "
        "compared there for every RIoTBench file and a sample of the OPMW files. The SHA-256 "
        "sums are of the reference copy the project's figures were measured on; a download that "
        "differs from it is refused.",
        "",
    ]
    return "\n".join(lines)


def verify(data_dir: str | os.PathLike[str], manifest: str | os.PathLike[str] = MANIFEST) -> int:
    """Check every manifest file under ``data_dir``; return how many were checked.

    Raises
    ------
    DataError
        The first file that is missing or whose SHA-256 differs.
    """
    data = Path(data_dir)
    entries = load_manifest(manifest)
    for e in entries:
        path = data / e.dest
        if not path.is_file():
            raise DataError("missing (listed in reuse/workloads/datasets.tsv)", file=str(path))
        got = _sha256(path.read_bytes())
        if got != e.sha256:
            raise DataError(f"SHA-256 is {got[:16]}..., reuse/workloads/datasets.tsv says {e.sha256[:16]}...",
                            file=str(path))
    return len(entries)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m reuse.workloads.datasets {fetch,verify}``; errors are one line and exit 1."""
    parser = argparse.ArgumentParser(prog="python -m reuse.workloads.datasets", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    fetch = sub.add_parser("fetch", help="install the missing parts of data/")
    fetch.add_argument("--data", default="data", help="the data folder (default: ./data)")
    fetch.add_argument("--local", default=os.environ.get("REUSE_SHARED_DATA") or None,
                       help="a copy holding opmw/ and riotbench/ (default: $REUSE_SHARED_DATA)")
    fetch.add_argument("--mirror", default=os.environ.get("REUSE_DATA_MIRROR") or UPSTREAM_BASE,
                       help="base URL to download from (default: $REUSE_DATA_MIRROR or upstream)")
    check = sub.add_parser("verify", help="check data/ against reuse/workloads/datasets.tsv")
    check.add_argument("--data", default="data")
    args = parser.parse_args(argv)
    try:
        if args.command == "verify":
            print(f"data: {verify(args.data)} files match reuse/workloads/datasets.tsv")
            return 0
        sibling = Path(args.data).resolve().parent.parent / "shared" / "data"
        install(args.data, local=args.local, default_local=sibling, base=args.mirror,
                say=lambda line: print(f"[setup] {line}", file=sys.stderr))
        return 0
    except ReuseError as exc:
        print(f"setup: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        name = f"{exc.filename}: " if exc.filename else ""
        print(f"setup: error: {name}{exc.strerror or exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
