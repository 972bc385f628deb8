from __future__ import annotations

import json

import pytest

from reuse.tasks import TaskError, make_task
from reuse.tasks.filters import BloomFilter
from reuse.tasks.sources import replay


def test_range_filter_drops_exactly_out_of_range(configs, sys_obs):
    cfg = configs["SYS"]["RangeFilter.drop"]
    rf = make_task("RangeFilter", cfg)
    kept = [o for ev in sys_obs for o in rf.process(ev)]
    lo_hi = {"temperature": (-12.5, 43.1), "humidity": (10.7, 95.2), "light": (1345, 26282),
             "dust": (186.61, 5188.21), "airquality_raw": (17, 363)}
    expected = [o for o in sys_obs if lo_hi[o["obs"]][0] <= o["value"] <= lo_hi[o["obs"]][1]]
    assert kept == expected
    assert 0 < len(kept) < len(sys_obs)
    assert not any(o["obs"] == "light" and o["value"] == 0 for o in kept)


def test_range_filter_null_mode_keeps_the_slot(configs, sys_obs):
    rf = make_task("RangeFilter", configs["SYS"]["RangeFilter.null"])
    out = [o for ev in sys_obs for o in rf.process(ev)]
    assert len(out) == len(sys_obs)
    light = [o for o in out if o["obs"] == "light" and o["value"] is None]
    assert light and all(o["filtered"] for o in light)


def test_bloom_filter_fp_rate():
    bf = BloomFilter(1000, 0.01)
    for i in range(1000):
        bf.add(f"id{i}")
    assert all(f"id{i}" in bf for i in range(1000))
    fp = sum(f"other{i}" in bf for i in range(10000)) / 10000
    assert fp < 0.03
    assert bf.k == 7


def test_bloom_filter_check_trained_on_the_even_lines(configs, data_dir):
    cfg = configs["TAXI"]["BloomFilterCheck"]
    assert (cfg["train_stride"], cfg["train_offset"]) == (2, 0)
    task = make_task("BloomFilterCheck", cfg, data_dir=data_dir)
    events = list(replay("TAXI", data_dir))
    ids = [json.loads(e["payload"])["e"][0]["sv"] for e in events]
    assert task.trained == len(events[0::2]) == 500 and task.filter.m > 190_000_000
    known = set(ids[0::2])
    parse = make_task("SenMLParse", configs["TAXI"]["SenMLParse"])
    passed = [bool(task.process(parse.process(e)[0])) for e in events]
    # no false negatives: every trained line passes
    assert all(passed[0::2])
    # 500 ids in a filter sized for 20M have a negligible false-positive rate, so a held-out
    # (odd) line passes exactly when its taxi also drove on an even line
    assert passed[1::2] == [i in known for i in ids[1::2]]
    assert 0 < sum(passed[1::2]) < len(passed[1::2]) / 2
    assert task.process({"sensor": "NOT-A-TAXI"}) == []


def test_bloom_filter_check_trained_on_every_line_passes_everything(configs, data_dir, taxi_obs):
    cfg = {**configs["TAXI"]["BloomFilterCheck"], "train_stride": 1}
    task = make_task("BloomFilterCheck", cfg, data_dir=data_dir)
    assert task.trained == len(list(replay("TAXI", data_dir)))
    assert all(task.process(o) == [o] for o in taxi_obs)


@pytest.mark.parametrize("stride,offset", [(0, 0), (2, 2), (2, -1)])
def test_bloom_filter_check_rejects_bad_sampling(configs, data_dir, stride, offset):
    cfg = {**configs["TAXI"]["BloomFilterCheck"], "train_stride": stride, "train_offset": offset}
    with pytest.raises(TaskError, match="train_stride"):
        make_task("BloomFilterCheck", cfg, data_dir=data_dir)
