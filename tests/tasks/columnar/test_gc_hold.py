"""The collector's hold around a batch (issue 35): raised inside, what it found put back after,
even when a kernel raises, and never lowered."""

from __future__ import annotations

import gc

import pytest

from reuse.tasks.columnar.gc_hold import HELD_THRESHOLD, held_gc


def test_the_threshold_is_put_back_even_when_the_batch_fails() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), held_gc():
        assert gc.get_threshold() == (max(before[0], HELD_THRESHOLD), *before[1:])
        raise RuntimeError("a kernel failed")
    assert gc.get_threshold() == before


def test_a_higher_threshold_found_is_kept_and_holds_nest() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(250_000, *before[1:])
        with held_gc(), held_gc(1_000):
            assert gc.get_threshold()[0] == 250_000
        assert gc.get_threshold()[0] == 250_000
    finally:
        gc.set_threshold(*before)

