"""End to end: the visualizer in a real JupyterLab, driven by headless Chromium via Playwright.

Starts JupyterLab on 127.0.0.1 (free port, random token, temporary root and config dirs) with a
notebook that shows the visualizer on the Figure 1 fixtures at step 3, runs all cells, waits for
the SVG, clicks task ``B.slr`` and checks the details panel (type, dataflows served, reuse
count), then presses play and checks the scene moves to step 4. Uses Debian's
``/usr/bin/chromium`` (``scripts/install-browser.sh``), not a Playwright-downloaded browser;
skips only if that is absent and cannot be installed. ``REUSE_BROWSER_SHOT=<path>`` keeps the
screenshot.
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
from collections.abc import Iterator
from pathlib import Path

import pytest

from reuse.testing import missing

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.browser

NOTEBOOK_CELLS = [
    "from reuse.viz.sources import Paths\nfrom reuse.viz.widget import Visualizer",
    f"viz = Visualizer('figure1', 'file', paths=Paths.default({str(ROOT)!r}))\n"
    "viz.slider.value = 3\nviz",
]


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


def _write_notebook(path: Path) -> None:
    cells = [{"cell_type": "code", "metadata": {}, "source": src, "outputs": [],
              "execution_count": None} for src in NOTEBOOK_CELLS]
    nb = {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                      "language": "python"}}}
    path.write_text(json.dumps(nb), encoding="utf-8")


@pytest.fixture
def lab(chromium: Path, tmp_path: Path) -> Iterator[str]:
    """A JupyterLab server on a free port; yields the notebook URL, kills the server after."""
    root = tmp_path / "root"
    root.mkdir()
    _write_notebook(root / "viz.ipynb")
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
    try:
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
        yield f"http://127.0.0.1:{port}/lab/tree/viz.ipynb?token={token}"
    finally:
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


def test_visualizer_renders_and_reacts(chromium: Path, lab: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    shot = Path(os.environ.get("REUSE_BROWSER_SHOT", tmp_path / "visualizer.png"))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.set_default_timeout(60_000)
        except Exception:
            browser.close()
            raise
        try:
            page.goto(lab)
            page.locator(".jp-Notebook .jp-Cell").first.wait_for()
            # run only once the kernel is connected: earlier clicks can be lost
            page.get_by_text("Python 3 (ipykernel) | Idle").wait_for()
            page.locator(".lm-MenuBar-item", has_text="Run").first.click()
            page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

            svg = page.locator(".reuse-visualizer svg.reuse-scene")
            svg.wait_for()
            expect(svg.locator("text.title")).to_have_text("step 3/5: submit C")
            tasks = svg.locator("g[data-task]")
            assert tasks.count() == 9

            details = page.locator(".reuse-details-panel")
            # a task of a submitted dataflow selects the running task computing it
            svg.locator('g[data-sub="C/kf"]').click()
            expect(details.locator("[data-details]")).to_have_attribute("data-details",
                                                                        "A.kalman")
            expect(details.locator(".reuse-count")).to_have_text("3")

            svg.locator('g[data-task="B.slr"]').click()
            expect(details.locator(".task-type")).to_have_text("SlidingLinearRegression")
            expect(details.locator(".task-users")).to_have_text("B, C")
            expect(details.locator(".reuse-count")).to_have_text("2")
            expect(svg.locator('g[data-task="B.slr"]')).to_have_class(
                "task state-reused selected")

            page.locator(".reuse-visualizer .widget-play button").first.click()  # play
            expect(svg.locator("text.title")).to_have_text("step 4/5: submit D")
            assert svg.locator("g[data-task]").count() == 14
            # play goes on to the last step; the selection follows (B gone, B.out stopped)
            expect(svg.locator("text.title")).to_have_text("step 5/5: remove B")
            expect(details.locator(".task-users")).to_have_text("C")
            expect(details.locator(".reuse-count")).to_have_text("1")
            expect(svg.locator('g[data-task="B.out"]')).to_have_attribute("data-state", "stopped")
            details.scroll_into_view_if_needed()  # the notebook scrolls inside JupyterLab
            page.screenshot(path=str(shot), full_page=True)
        except Exception:
            failed = shot.with_name(shot.stem + "-failed.png")
            page.screenshot(path=str(failed), full_page=True)
            print(f"screenshot of the failure: {failed}")
            raise
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000
