from __future__ import annotations

from reuse.tasks import make_task
from reuse.tasks.filters import BloomFilter


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


def test_bloom_filter_check_on_real_ids(configs, data_dir, taxi_obs):
    task = make_task("BloomFilterCheck", configs["TAXI"]["BloomFilterCheck"], data_dir=data_dir)
    assert task.trained == 1000 and task.filter.m > 190_000_000  # 20M insertions at 1%
    assert all(task.process(o) == [o] for o in taxi_obs[:50])
    assert task.process({**taxi_obs[0], "sensor": "NOT-A-TAXI"}) == []
