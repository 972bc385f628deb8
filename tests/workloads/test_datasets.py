"""Set-up's data step (reuse.workloads.datasets) against a real ``file://`` mirror of the upstream layout.

The real upstream (raw.githubusercontent.com) is not reachable from the test machine, so the
mirror is built from the reference copy (``$REUSE_SHARED_DATA``, ``../shared/data`` or the
project's own ``data/``) with each file at ``<repo>/<commit>/<path>``, exactly where the pinned
upstream URL points, and in its upstream form (the TAXI stream with its final newline).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from reuse.testing import missing
from reuse.workloads.datasets import MANIFEST, PARTS, DataError, install, load_manifest, verify

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = load_manifest()


def _reference() -> Path | None:
    for candidate in (os.environ.get("REUSE_SHARED_DATA"), ROOT.parent / "shared" / "data",
                      ROOT / "data"):
        if candidate and all((Path(candidate) / p).is_dir() for p in PARTS):
            return Path(candidate)
    return None


REFERENCE = _reference()
needs_reference = pytest.mark.skipif(
    REFERENCE is None, reason=missing("data", "no reference copy of the data (../shared/data or data/)"))


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A mirror laid out like raw.githubusercontent.com, holding the pinned upstream bytes."""
    assert REFERENCE is not None
    root = tmp_path_factory.mktemp("mirror")
    for e in ENTRIES:
        data = (REFERENCE / e.dest).read_bytes()
        if e.fixup == "strip-final-newline":
            data += b"\n"  # the upstream file has the final newline the reference copy lacks
        target = root / e.repo / e.commit / e.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return root


def _clone(tmp_path: Path) -> Path:
    """``<tmp>/clone/data``: a data folder whose ``../../shared/data`` does not exist."""
    (tmp_path / "clone").mkdir()
    assert not (tmp_path / "shared").exists()
    return tmp_path / "clone" / "data"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("REUSE_SHARED_DATA", "REUSE_DATA_MIRROR")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "reuse.workloads.datasets", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_manifest_is_well_formed() -> None:
    dests = [e.dest for e in ENTRIES]
    assert len(dests) == len(set(dests))
    assert {e.part for e in ENTRIES} == set(PARTS)
    assert {e.repo for e in ENTRIES if e.part == "opmw"} == {"wf4ever/provenance-corpus"}
    assert {e.repo for e in ENTRIES if e.part == "riotbench"} == {"dream-lab/riot-bench"}


@needs_reference
def test_manifest_sums_are_those_of_the_reference_copy() -> None:
    assert REFERENCE is not None
    assert verify(REFERENCE) == len(ENTRIES)
    on_disk = {p.relative_to(REFERENCE).as_posix() for part in PARTS
               for p in (REFERENCE / part).rglob("*") if p.is_file()}
    assert on_disk == {e.dest for e in ENTRIES}  # nothing the project reads is left out


@needs_reference
def test_download_from_a_mirror_installs_checked_data_and_readme(mirror: Path,
                                                                 tmp_path: Path) -> None:
    data = _clone(tmp_path)
    done = _run("fetch", "--data", str(data), "--mirror", mirror.as_uri())
    assert done.returncode == 0, done.stderr
    assert "downloading data/opmw" in done.stderr and "downloading data/riotbench" in done.stderr
    assert verify(data) == len(ENTRIES)
    assert sorted(p.name for p in data.iterdir()) == [".provenance.json", "README.md", "opmw",
                                                      "riotbench"]
    readme = (data / "README.md").read_text()
    for e in ENTRIES:
        assert e.commit in readme
    for needle in ("CC BY-SA 3.0", "Apache License 2.0", "github.com/wf4ever/provenance-corpus",
                   "github.com/dream-lab/riot-bench", f"downloaded from `{mirror.as_uri()}`"):
        assert needle in readme
    # the TAXI stream lost its upstream final newline: same bytes as the reference copy
    assert REFERENCE is not None
    taxi = "riotbench/TAXI_sample_data_senml.csv"
    assert (data / taxi).read_bytes() == (REFERENCE / taxi).read_bytes()
    # a second run has nothing to do and touches nothing
    again = _run("fetch", "--data", str(data), "--mirror", "http://127.0.0.1:1")
    assert again.returncode == 0 and again.stderr == ""


@needs_reference
def test_a_wrong_checksum_installs_nothing(mirror: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad-mirror"
    shutil.copytree(mirror, bad)
    victim = next(e for e in ENTRIES if e.dest == "riotbench/SYS_sample_data_senml.csv")
    path = bad / victim.repo / victim.commit / victim.path
    path.write_bytes(path.read_bytes().replace(b"1422748", b"1422749", 1))
    data = _clone(tmp_path)
    done = _run("fetch", "--data", str(data), "--mirror", bad.as_uri())
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("setup: error: data/riotbench/SYS_sample_data_senml.csv: SHA-256")
    assert "into data/riotbench/" in lines[-1]
    assert not data.exists()  # opmw had arrived and checked out, but is not installed alone


@needs_reference
def test_a_missing_part_is_fetched_alone_and_the_other_left_as_is(mirror: Path,
                                                                   tmp_path: Path) -> None:
    data = _clone(tmp_path)
    (data / "opmw").mkdir(parents=True)
    (data / "opmw" / "mine.txt").write_text("kept")
    sources = install(data, base=mirror.as_uri())
    assert list(sources) == ["riotbench"]
    assert [p.name for p in (data / "opmw").iterdir()] == ["mine.txt"]
    readme = (data / "README.md").read_text()
    assert "present before set-up wrote this file" in readme
    with pytest.raises(DataError, match="opmw/wings-corpus/.*missing"):
        verify(data)


def test_no_network_gives_one_line_naming_the_download(tmp_path: Path) -> None:
    data = _clone(tmp_path)
    done = _run("fetch", "--data", str(data), "--mirror", f"http://127.0.0.1:{_closed_port()}")
    assert done.returncode == 1
    line = done.stderr.strip().splitlines()[-1]
    assert len(done.stderr.strip().splitlines()) == 2  # "[setup] downloading ..." and the error
    assert line.startswith("setup: error: data/opmw: cannot download http://127.0.0.1:")
    assert ("download folder WINGS_repository/Wings_corpus of github.com/wf4ever/provenance-corpus"
            in line)
    assert "into data/opmw/wings-corpus/" in line and "into data/riotbench/" in line
    assert "REUSE_SHARED_DATA" in line
    assert not data.exists()


@needs_reference
def test_a_local_copy_is_copied_as_before(tmp_path: Path) -> None:
    assert REFERENCE is not None
    data = _clone(tmp_path)
    sources = install(data, local=REFERENCE, base="http://127.0.0.1:1")  # never downloads
    assert set(sources) == set(PARTS)
    assert all(s.startswith("copied from") for s in sources.values())
    assert verify(data) == len(ENTRIES)


def test_a_named_local_copy_that_lacks_a_part_is_an_error(tmp_path: Path) -> None:
    data = _clone(tmp_path)
    (tmp_path / "elsewhere" / "opmw").mkdir(parents=True)
    with pytest.raises(DataError, match="elsewhere/riotbench was not found"):
        install(data, local=tmp_path / "elsewhere", base="http://127.0.0.1:1")
    assert not data.exists()


def test_manifest_errors_name_the_line(tmp_path: Path) -> None:
    lines = MANIFEST.read_text().splitlines()
    broken = tmp_path / "m.tsv"
    row = next(i for i, line in enumerate(lines) if line.startswith("riotbench/"))
    lines[row] = lines[row].replace("\t95bc", "\tzzbc", 1)
    broken.write_text("\n".join(lines))
    with pytest.raises(DataError, match=rf"m.tsv: line {row + 1}: .*not 40 hex digits"):
        load_manifest(broken)
