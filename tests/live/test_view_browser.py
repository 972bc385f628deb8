"""The live view in a real JupyterLab (headless Chromium): a notebook starts a broker, a
publisher and the engine; the test submits two overlapping RIoT dataflows with the view's
picker, sees the shared tasks with a reuse count of 2, removes one and sees the unmerge, and
sees the remaining dataflow's outputs keep arriving. Then it stops everything through the
kernel and checks nothing the notebook started is left running."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.spark]


def _cells(tmp_path: Path) -> list[str]:
    stop, done = tmp_path / "stop", tmp_path / "done"
    return [
        "import threading, time\nfrom pathlib import Path\n"
        "from reuse.live import Engine\nfrom reuse.live.feed import LocalFeed",
        f"feed = LocalFeed('riot', rate=10, streams=['SYS'], folder={str(tmp_path / 'broker')!r})\n"
        f"eng = Engine(source=feed.url, rate=10, trigger_s=1.0, root={str(tmp_path / 'run')!r})\n"
        "view = eng.view(refresh_s=1.0)\n"
        "def _finish():\n"
        f"    while not Path({str(stop)!r}).exists():\n"
        "        time.sleep(0.2)\n"
        "    view.close(); eng.stop(); feed.stop()\n"
        f"    Path({str(done)!r}).write_text('stopped')\n"
        "threading.Thread(target=_finish, daemon=True).start()\n"
        "view",
    ]


def _leftovers(tmp_path: Path) -> list[str]:
    out = []
    for p in psutil.process_iter(["name", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if p.info["name"] in ("mosquitto", "redis-server") and str(tmp_path) in cmd:
            out.append(f"{p.pid} {cmd}")
    return out


def test_live_view_shows_merge_and_unmerge(chromium: Path, chromium_args: list[str],
                                           jupyter_lab: Callable[[list[str]], str],
                                           tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright
    # an expectation's 5 s default is too short beside a second Spark lane (this view once
    # showed step 2 after more than that, 2026-11-29): 30 s, which a view that never updates fails
    expect.set_options(timeout=30_000)

    url = jupyter_lab(_cells(tmp_path))
    shot = Path(os.environ.get("REUSE_BROWSER_SHOT_LIVE", tmp_path / "live.png"))
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(chromium), args=chromium_args,
                                         headless=True)
            page = browser.new_page(viewport={"width": 1500, "height": 1200})
            page.set_default_timeout(90_000)
            try:
                page.goto(url)
                page.locator(".jp-Notebook .jp-Cell").first.wait_for()
                page.get_by_text("Python 3 (ipykernel) | Idle").wait_for()
                page.locator(".lm-MenuBar-item", has_text="Run").first.click()
                page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

                live = page.locator(".reuse-live")
                svg = live.locator("svg.reuse-scene")
                svg.wait_for()
                picker = live.locator(".widget-dropdown select").nth(0)
                running = live.locator(".widget-dropdown select").nth(1)
                submit = live.locator("button", has_text="submit")
                for name, step in (("stats-sys", 1), ("clean-sys", 2)):
                    picker.select_option(name)
                    submit.click()
                    expect(svg.locator("text.title")).to_have_text(
                        f"step {step}/{step}: submit {name}")
                # the shared tasks, with a reuse count of 2 and their live numbers
                details = live.locator(".reuse-details-panel")
                svg.locator('g[data-task="stats-sys.parse"]').click()
                expect(details.locator(".reuse-count")).to_have_text("2")
                expect(details.locator(".task-users")).to_have_text("clean-sys, stats-sys")
                expect(details.locator(".reuse-live-task .task-shard")).to_have_count(1)
                expect(live.locator('.reuse-live-tasks code[data-task="stats-sys.parse"]')
                       ).to_have_count(1)
                # remove stats-sys: the unmerge (parse stays, used by clean-sys alone)
                running.select_option("stats-sys")
                live.locator("button", has_text="remove").click()
                expect(svg.locator("text.title")).to_have_text("step 3/3: remove stats-sys")
                expect(details.locator(".reuse-count")).to_have_text("1")
                expect(svg.locator('g[data-task="stats-sys.kalman"]')).to_have_attribute(
                    "data-state", "stopped")
                # the remaining dataflow's outputs keep arriving
                last = live.locator(".reuse-live-dataflows tr", has_text="clean-sys").locator(
                    ".last-seq")

                def seq() -> int:
                    text = last.inner_text().strip()
                    return int(text) if text.isdigit() else -1

                deadline = time.time() + 60
                while seq() < 0 and time.time() < deadline:
                    time.sleep(0.5)
                first = seq()
                assert first >= 0, "no output of clean-sys shown"
                while seq() < first + 10 and time.time() < deadline:
                    time.sleep(0.5)
                assert seq() >= first + 10, "clean-sys's outputs stopped arriving"
                live.scroll_into_view_if_needed()
                page.screenshot(path=str(shot), full_page=True)
            except Exception:
                failed = shot.with_name(shot.stem + "-failed.png")
                page.screenshot(path=str(failed), full_page=True)
                print(f"screenshot of the failure: {failed}")
                raise
            finally:
                browser.close()
    finally:
        (tmp_path / "stop").write_text("stop")
        deadline = time.time() + 60
        while not (tmp_path / "done").exists() and time.time() < deadline:
            time.sleep(0.2)
    assert (tmp_path / "done").exists(), "the notebook did not stop its engine"
    assert _leftovers(tmp_path) == []
