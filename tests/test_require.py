"""``$REUSE_REQUIRE``: a skip for a missing real part fails the run when the part is required
(``.ci/run`` requires Redis, Chromium, the data and Mosquitto), so a failed set-up step cannot pass as
a green suite of skips."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SKIPPING = """
import pytest
from reuse.testing import missing

def test_needs_redis():
    pytest.skip(missing("redis", "redis-server is not installed"))

@pytest.mark.skipif(True, reason=missing("data", "data/ not set up"))
def test_needs_data():
    pass

def test_other_skip():
    pytest.skip("not a missing part")
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text())
    pytester.makepyfile(SKIPPING)
    return pytester


# a skip in set-up (a skipif marker, a fixture) is reported as an error, in the test as a failure
@pytest.mark.parametrize(("require", "failed", "errors", "skipped"),
                         [("", 0, 0, 3), ("redis", 1, 0, 2), ("redis,data,browser", 1, 1, 1)])
def test_required_parts_fail_instead_of_skipping(suite: pytest.Pytester,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 require: str, failed: int, errors: int,
                                                 skipped: int) -> None:
    monkeypatch.setenv("REUSE_REQUIRE", require)
    result = suite.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=failed, errors=errors, skipped=skipped)
    assert (result.ret == 0) == (failed + errors == 0)
    if failed:
        result.stdout.fnmatch_lines(["*$REUSE_REQUIRE requires redis*"])


def test_an_unknown_part_is_a_usage_error(suite: pytest.Pytester,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REUSE_REQUIRE", "redis,gpu")
    result = suite.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*$REUSE_REQUIRE names 'gpu'*"])
