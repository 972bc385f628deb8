"""Columnar sources (issue 35): ``source_batch`` is ``Batch.from_events`` over ``source_event``,
column for column and dtype for dtype, for every RIoTBench source (over a range that wraps
around its data file) and a synthetic (OPMW) one."""

from __future__ import annotations

import pytest

from reuse.core.paths import riotbench_dir
from reuse.runtime.common.execution import source_event, source_lines
from reuse.runtime.common.source_batch import source_batch
from reuse.tasks.columnar import Batch

DATA = riotbench_dir()


def _same(a: Batch, b: Batch) -> None:
    assert a.n == b.n
    assert list(a.cols) == list(b.cols)
    for k in a.cols:
        assert a.cols[k].dtype == b.cols[k].dtype, k
        assert a.cols[k].tolist() == b.cols[k].tolist(), k
    assert a.to_events() == b.to_events()


def _expected(src: str, src_type: str, start: int, n: int, t0: int, rate: float,
              data_dir: str) -> Batch:
    return Batch.from_events([source_event(src, src_type, s, t0, rate, data_dir)
                              for s in range(start, start + n)])


@pytest.mark.skipif(not DATA.is_dir(), reason="no data/riotbench")
@pytest.mark.parametrize("src_type", ["SYS", "TAXI", "FIT"])
@pytest.mark.parametrize("data_dir", ["", str(DATA)])
def test_a_riotbench_source_batch_equals_its_events(src_type: str, data_dir: str) -> None:
    lines = len(source_lines(src_type, data_dir))
    for start, n in [(0, 1), (0, 64), (lines - 5, 12), (3 * lines - 1, 2 * lines + 7)]:
        # 8000/s: ts is seq / 8, so halves, which round to even as round() does
        for t0, rate in [(0, 10.0), (1_700_000_000_123, 3.0), (5, 7), (0, 8000.0)]:
            got = source_batch(f"{src_type}-s", src_type, start, n, t0, rate, data_dir)
            _same(got, _expected(f"{src_type}-s", src_type, start, n, t0, rate, data_dir))


def test_a_range_wraps_around_the_data_file() -> None:
    if not DATA.is_dir():
        pytest.skip("no data/riotbench")
    lines = len(source_lines("FIT"))
    b = source_batch("F", "FIT", lines - 1, 3, 0, 10.0)
    assert b.cols["seq"].tolist() == [lines - 1, lines, lines + 1]
    first = source_batch("F", "FIT", 0, 2, 0, 10.0)
    assert b.cols["payload"][1:].tolist() == first.cols["payload"].tolist()


@pytest.mark.parametrize("start,n", [(0, 1), (7, 300), (10_000, 33)])
def test_a_synthetic_source_batch_equals_its_events(start: int, n: int) -> None:
    got = source_batch("S1", "opmw-source", start, n, 1000, 10.0)
    _same(got, _expected("S1", "opmw-source", start, n, 1000, 10.0, ""))


def test_an_empty_range_is_the_empty_batch() -> None:
    b = source_batch("S1", "SYS", 5, 0, 0, 10.0)  # the data file is not even read
    assert b.n == 0 and not b.cols
