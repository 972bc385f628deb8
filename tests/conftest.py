"""Shared fixtures: paths to the project's test data; the Hypothesis profiles.

Hypothesis runs under one of two profiles, loaded here before any test module builds its
``@settings`` (which inherit what they do not set): ``ci`` when ``$CI`` is set or
``REUSE_HYPOTHESIS_PROFILE=ci``, else ``dev``. Neither has a deadline: on a shared two-core
machine (Spark tests running beside) an example's wall time says nothing about the code, so a
deadline would fail tests by timing. ``ci`` is also derandomized (the same examples every run,
no example database) and prints the blob that reproduces a failure.

A test that needs a real part this machine lacks (Redis, Chromium, the data, Mosquitto) skips
with a reason made by :func:`reuse.testing.missing`; when ``$REUSE_REQUIRE`` names that part
(``.ci/run`` sets ``redis,browser,data,mqtt``), the skip is reported as a failure instead.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from reuse.core.dataflow import Dataflow, load_dataflows
from reuse.core.equivalence import AncestorGraph, tasks_equivalent_literal
from reuse.testing import REQUIRE_ENV, missing, missing_part, required_parts, shuffled

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"

settings.register_profile("dev", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, database=None,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if "CI" in os.environ
                      or os.environ.get("REUSE_HYPOTHESIS_PROFILE") == "ci" else "dev")

# The fuzz tests (``test_*_fuzz.py``, issue 34 item 3) take their settings from the profile
# ``fuzz``: ``fast`` (a few dozen bad inputs per test, the whole set in well under a minute) by
# default, ``long`` (thousands per test: benchmarks/fuzz_count.py) when ``REUSE_FUZZ=long``.
# Each inherits the profile loaded above (no deadline; derandomized under ``ci``).
FUZZ_PROFILE = os.environ.get("REUSE_FUZZ", "fast")
if FUZZ_PROFILE not in ("fast", "long"):
    raise ValueError(f"REUSE_FUZZ={FUZZ_PROFILE!r}: use fast or long")
_FUZZ_EXAMPLES = {"fast": 40, "long": 1500}[FUZZ_PROFILE]
settings.register_profile(
    "fuzz", parent=settings.get_profile(settings.get_current_profile_name()),
    max_examples=_FUZZ_EXAMPLES, deadline=None,
    # function_scoped_fixture: the fuzz tests reset capsys per input and use fresh folders
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much, HealthCheck.large_base_example,
                           HealthCheck.function_scoped_fixture])


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--shuffle", type=int, default=None, metavar="SEED",
                     help="run the test modules in a seeded random order, and each module's "
                          "tests in a seeded random order (module fixtures are still made "
                          "once): hunts order dependence (issue 34, item 5)")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seed = config.getoption("--shuffle")
    if seed is not None:
        items[:] = shuffled(items, seed, lambda i: str(i.path))
        return
    # The tests that start several JVMs at once go last: ``scripts/test.sh`` runs them in a
    # lane of their own, so this only orders a run that selects both kinds (a JVM's start is
    # what other CPU slows most). A stable sort: otherwise the order is pytest's.
    items[:] = sorted(items, key=lambda i: i.get_closest_marker("many_jvms") is not None)


def pytest_report_header(config: pytest.Config) -> str | None:
    seed = config.getoption("--shuffle")
    return None if seed is None else f"shuffled: --shuffle {seed}"


def pytest_configure(config: pytest.Config) -> None:
    try:
        config.stash[REQUIRED] = required_parts()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


REQUIRED = pytest.StashKey[set]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """A skip for a missing part that ``$REUSE_REQUIRE`` names becomes a failure."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and isinstance(report.longrepr, tuple):
        part = missing_part(str(report.longrepr[2]))
        if part is not None and part in item.config.stash.get(REQUIRED, set()):
            report.outcome = "failed"
            report.longrepr = f"{report.longrepr[2]} (${REQUIRE_ENV} requires {part})"


def _tree_cpu_s() -> float:
    """CPU seconds of this process and every live descendant, each with its reaped children
    (``/proc``'s ``cutime``/``cstime``): a JVM's Python workers and a ``reuse run``'s JVM are
    counted once they are waited for. A process that left the tree (a daemon re-parented to
    init) is not."""
    import psutil

    total = 0.0
    me = psutil.Process()
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue  # ended meanwhile
        total += t.user + t.system + t.children_user + t.children_system
    return total


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):  # type: ignore[no-untyped-def]
    """With ``$REUSE_CPU_TIMES`` set, append each test's CPU seconds (its process tree's, set-up
    and teardown included) and wall seconds to that file as JSON lines: the suite's time on a
    loaded machine is its CPU, which ``--durations`` (wall) does not show (issue 34)."""
    out = os.environ.get("REUSE_CPU_TIMES")
    if not out:
        yield
        return
    cpu0, t0 = _tree_cpu_s(), time.monotonic()
    yield
    line = {"test": item.nodeid, "cpu_s": round(_tree_cpu_s() - cpu0, 2),
            "wall_s": round(time.monotonic() - t0, 2), "pid": os.getpid()}
    with open(out, "a") as fh:
        fh.write(json.dumps(line) + "\n")


class FuzzCounter:
    """How many generated inputs each door took (``count(door)`` once per input). With
    ``$REUSE_FUZZ_COUNT`` set, the totals are written there as JSON when the session ends."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def __call__(self, door: str, n: int = 1) -> None:
        self.counts[door] = self.counts.get(door, 0) + n


_FUZZ_COUNTER = FuzzCounter()


@pytest.fixture(scope="session")
def fuzz_count() -> FuzzCounter:
    """The session's :class:`FuzzCounter` (session-scoped, so ``@given`` tests may use it)."""
    return _FUZZ_COUNTER


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    out = os.environ.get("REUSE_FUZZ_COUNT")
    if out:
        Path(out).write_text(json.dumps({"profile": FUZZ_PROFILE, "exit": int(exitstatus),
                                         "doors": _FUZZ_COUNTER.counts}, indent=1) + "\n")


@pytest.fixture
def figure1() -> dict[str, Dataflow]:
    """The paper's Figure 1 dataflows A, B, C (shared source and prefix) and D (other source)."""
    return {f.id: f for f in load_dataflows([FIXTURES / "figure1"])}


def count_literal_classes(flows: Sequence[Dataflow]) -> int:
    """How many distinct tasks all ``flows`` hold, by the paper's literal definition of ``<->``.

    Each task is compared with one representative of every class found so far using
    :func:`reuse.core.equivalence.tasks_equivalent_literal` (config-similar and ancestor graphs
    isomorphic by VF2), never the Merkle signatures the code under test uses. ``<->`` is an
    equivalence relation, so one representative per class is enough.
    """
    memos: dict[str, dict[str, AncestorGraph]] = {f.id: {} for f in flows}
    reps: list[tuple[Dataflow, str]] = []
    for flow in flows:
        for task in flow.tasks:
            if not any(tasks_equivalent_literal(flow, task.id, other, rep, memos[flow.id],
                                                memos[other.id]) for other, rep in reps):
                reps.append((flow, task.id))
    return len(reps)


@pytest.fixture
def literal_classes() -> Callable[[Sequence[Dataflow]], int]:
    """:func:`count_literal_classes`, for tests in sub-folders (no package imports here)."""
    return count_literal_classes


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


@pytest.fixture
def chromium_args() -> list[str]:
    """Headless Chromium's command-line flags for the browser tests."""
    return list(CHROMIUM_ARGS)


# --- a JupyterLab for the browser tests (tests/viz, tests/live) ---

@pytest.fixture
def chromium() -> Path:
    if not CHROMIUM.exists():
        script = ROOT / "scripts" / "install-browser.sh"
        subprocess.run(["bash", str(script)], check=False, timeout=600)
    if not CHROMIUM.exists():
        pytest.skip(missing("browser", "no /usr/bin/chromium and it cannot be installed here "
                            "(scripts/install-browser.sh needs root and apt-get)"))
    return CHROMIUM


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


LAB_SETTINGS = {  # no kernel-choice dialog, no news/update requests to the internet
    "@jupyterlab/notebook-extension/tracker": {"autoStartDefaultKernel": True},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false",
                                                   "checkForUpdates": False},
}


def _write_settings(settings_dir: Path) -> None:
    for name, values in LAB_SETTINGS.items():
        path = settings_dir / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values), encoding="utf-8")


def _write_notebook(path: Path, sources: list[str]) -> None:
    cells = [{"cell_type": "code", "metadata": {}, "source": src, "outputs": [],
              "execution_count": None} for src in sources]
    nb = {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                      "language": "python"}}}
    path.write_text(json.dumps(nb), encoding="utf-8")


@pytest.fixture
def jupyter_lab(chromium: Path, tmp_path: Path) -> Iterator[Callable[[list[str]], str]]:
    """Start a JupyterLab server on a free port holding a notebook of the given code cells
    (``viz.ipynb``); the call returns the notebook's URL. The server is killed after the test
    (with its kernel's process group)."""
    started: list[tuple[subprocess.Popen[bytes], Any]] = []

    def start(sources: list[str]) -> str:
        return _start_lab(tmp_path, sources, started)

    try:
        yield start
    finally:
        for proc, log in started:
            _stop_lab(proc, log, tmp_path)


def _start_lab(tmp_path: Path, sources: list[str],
               started: list[tuple[subprocess.Popen[bytes], Any]]) -> str:
    root = tmp_path / "root"
    root.mkdir()
    _write_notebook(root / "viz.ipynb", sources)
    _write_settings(tmp_path / "settings")
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ,
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               IPYTHONDIR=str(tmp_path / "ipython"), JUPYTER_PLATFORM_DIRS="1")
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
           f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
           "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           "--LabApp.extension_manager=readonly"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(tmp_path / "lab.log", "wb")  # noqa: SIM115 - closed in finally
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    started.append((proc, log))
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            pytest.fail("JupyterLab exited:\n" + (tmp_path / "lab.log").read_text()[-3000:])
        try:
            with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            pytest.fail("JupyterLab did not start in 60 s:\n"
                        + (tmp_path / "lab.log").read_text()[-3000:])
        time.sleep(0.3)
    return f"http://127.0.0.1:{port}/lab/tree/viz.ipynb?token={token}"


def _stop_lab(proc: subprocess.Popen[bytes], log: Any, tmp_path: Path) -> None:
    proc.terminate()  # the server shuts its kernel down on SIGTERM
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)
    try:  # anything left in the server's own session (a kernel it did not stop)
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    log.close()
    print("JupyterLab log (tail):\n" + (tmp_path / "lab.log").read_text()[-4000:])
