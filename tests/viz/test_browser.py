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

import os
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.browser

NOTEBOOK_CELLS = [
    "from reuse.viz.sources import Paths\nfrom reuse.viz.widget import Visualizer",
    f"viz = Visualizer('figure1', 'file', paths=Paths.default({str(ROOT)!r}))\n"
    "viz.slider.value = 3\nviz",
]


@pytest.fixture
def lab(jupyter_lab: Callable[[list[str]], str]) -> str:
    """JupyterLab with the visualizer notebook open."""
    return jupyter_lab(NOTEBOOK_CELLS)


def test_visualizer_renders_and_reacts(chromium: Path, chromium_args: list[str], lab: str,
                                       tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright
    # an expectation's 5 s default is too short beside a second Spark lane (this view once
    # showed step 2 after more than that, 2026-11-29): 30 s, which a view that never updates fails
    expect.set_options(timeout=30_000)

    shot = Path(os.environ.get("REUSE_BROWSER_SHOT", tmp_path / "visualizer.png"))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium), args=chromium_args,
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
