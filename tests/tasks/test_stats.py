from __future__ import annotations

import hashlib
import json
from collections import Counter

import pytest

from reuse.tasks import TaskError, make_task
from reuse.tasks.sources import replay
from reuse.tasks.stats import DistinctApproxCount


def _run(task, events):
    return [o for ev in events for o in task.process(ev)]


def test_kalman_matches_hand_computation(configs, sys_obs):
    cfg = configs["SYS"]["KalmanFilter"]
    assert (cfg["process_noise"], cfg["sensor_noise"], cfg["estimated_error"]) == (0.125, 0.32, 30)
    kf = make_task("KalmanFilter", cfg)
    temps = [o for o in sys_obs if o["obs"] == "temperature"][:3]
    out = _run(kf, temps)
    x, p = 0.0, 30.0
    for ev, o in zip(temps, out, strict=True):
        p += 0.125
        k = p / (p + 0.32)
        x += k * (ev["value"] - x)
        p *= 1 - k
        assert o["value"] == pytest.approx(x, rel=1e-12)
    # step 1 by hand: p=30.125, K=30.125/30.445, x=8*K
    assert out[0]["value"] == pytest.approx(8.0 * 30.125 / 30.445)


@pytest.mark.parametrize("keying", [["obs"], ["sensor", "obs"]])
@pytest.mark.parametrize("kind", ["KalmanFilter", "BlockWindowAverage", "SlidingLinearRegression",
                                  "DistinctApproxCount", "SecondOrderMoment", "SOM-ams"])
def test_state_roundtrip_and_determinism(kind, keying, configs, sys_obs):
    if kind == "SOM-ams":
        kind, cfg = "SecondOrderMoment", {**configs["SYS"]["SecondOrderMoment"], "estimator": "ams"}
    else:
        cfg = configs["SYS"][kind]
    if "group_by" in cfg:
        cfg = {**cfg, "group_by": keying}
    whole = _run(make_task(kind, cfg), sys_obs)
    assert whole == _run(make_task(kind, cfg), sys_obs)  # deterministic
    first = make_task(kind, cfg)
    head = _run(first, sys_obs[:437])
    state = json.loads(json.dumps(first.get_state()))
    second = make_task(kind, cfg)
    second.set_state(state)
    assert head + _run(second, sys_obs[437:]) == whole


def test_block_window_average(configs, sys_obs):
    cfg = configs["SYS"]["BlockWindowAverage"]  # window 5 per obs
    out = _run(make_task("BlockWindowAverage", cfg), sys_obs)
    hum = [o["value"] for o in sys_obs if o["obs"] == "humidity"]
    avgs = [o["value"] for o in out if o["obs"] == "humidity"]
    assert len(avgs) == len(hum) // 5
    assert avgs[0] == pytest.approx(sum(hum[:5]) / 5)


def test_sliding_linear_regression_on_a_line():
    slr = make_task("SlidingLinearRegression", {"train_window": 10, "predict_window": 3,
                                                "group_by": ["obs"]})
    evs = [{"src": "X", "seq": i, "ts": i, "obs": "a", "value": 2.0 * i + 1} for i in range(12)]
    out = _run(slr, evs)
    assert len(out) == 3  # from the 10th value on
    assert out[0]["predictions"] == pytest.approx([21.0, 23.0, 25.0])


def test_distinct_approx_count_by_hand():
    """m = 2 registers (buckets 1), items whose SHA-1 is public: the original's arithmetic."""
    sha = {"b": "e9d71f5ee7c92d6dc9e92ffdad17b8bd49418f98",
           "x": "11f6ad8ec52a2984abaafd7c3b516503785c2072",
           "c": "84a516841ba77a5b4648de2cd0dfcb30ea46dbb4"}
    for item, digest in sha.items():
        assert hashlib.sha1(item.encode()).hexdigest() == digest
    # first 4 bytes little-endian, signed: b -> 0x5E1FD7E9, x -> 0x8EADF611 < 0, c -> 0x8416A584 < 0
    assert DistinctApproxCount.hash32("b") == 0x5E1FD7E9
    assert DistinctApproxCount.hash32("x") == 0x8EADF611 - 2**32
    dac = make_task("DistinctApproxCount", {"buckets": 1, "field": "id"})
    values = [dac.process({"sensor": i})[0]["value"] for i in ["b", "x", "c", "b"]]
    # b: register 1 (low bit 1), 0x5E1FD7E9 >> 1 = 0x2F0FEBF4 has 2 trailing zeros -> M = [0, 2]
    # x: register 1, (x >> 1) ends in binary ...1000 -> 3 -> M = [0, 3]
    # c: register 0, (c >> 1) ends in ...10 -> 1 -> M = [1, 3]; a repeat changes nothing
    alpha_m = 0.79402 * 2
    assert values == [int(alpha_m * 2 ** (2 / 2)), int(alpha_m * 2 ** (3 / 2)),
                      int(alpha_m * 2 ** (4 / 2)), int(alpha_m * 2 ** (4 / 2))] == [3, 4, 6, 6]
    assert dac.registers == [1, 3]


def test_distinct_approx_count_on_taxi(configs, data_dir):
    parse = make_task("SenMLParse", configs["TAXI"]["SenMLParse"])
    dac = make_task("DistinctApproxCount", configs["TAXI"]["DistinctApproxCount"])
    events = list(replay("TAXI", data_dir))
    values = [dac.process(o)[-1]["value"] for ev in events for o in parse.process(ev)]
    assert values == sorted(values)  # registers only grow
    assert all(v == int(v) for v in values)  # the original truncates to int
    # an empty sketch already reads int(0.79402 m): the original's floor with m = 1024
    assert values[0] >= int(0.79402 * 1024) == 813
    true = len({json.loads(e["payload"])["e"][0]["sv"] for e in events})
    assert true == 782
    # over half the 1024 registers are still empty, and they weigh like hits: overestimate
    assert sum(r == 0 for r in dac.registers) > 512
    assert true < values[-1] < 2 * true


def test_second_order_moment_riotbench_by_hand():
    som = make_task("SecondOrderMoment", {"max_map_size": 2, "group_by": ["obs"]})
    vals = [5, 5, 7, 9, 9]
    out = [som.process({"obs": "a", "value": v})[0]["value"] for v in vals]
    # n=1 {5:1} -> 1*1; n=2 {5:2} -> 2*3; n=3 {5:2,7:1} -> 3*(3+1)/2; n=4: 9 is new and the
    # map is full, so it replaces one slot (count 1): {5:2,9:1} or {9:1,7:1}
    assert out[:3] == [1.0, 6.0, 6.0]
    assert out[3] in (4 * (3 + 1) / 2, 4 * (1 + 1) / 2)
    state = som.get_state()["series"]["a"]
    assert len(state["items"]) == 2 and "9.0" in state["items"]


def test_second_order_moment_riotbench_extremes(configs, sys_obs):
    """All-distinct values give exactly n (every count is 1); a constant series n (2n - 1)."""
    som = make_task("SecondOrderMoment", {"max_map_size": 10, "group_by": ["obs"]})
    out = [som.process({"obs": "a", "value": float(i)})[0]["value"] for i in range(30)]
    assert out == [float(n) for n in range(1, 31)]
    const = [som.process({"obs": "b", "value": 4.0})[0]["value"] for _ in range(5)]
    assert const == [float(n * (2 * n - 1)) for n in range(1, 6)]
    # on real SYS data, while a field's first values are distinct the estimate is n
    som = make_task("SecondOrderMoment", configs["SYS"]["SecondOrderMoment"])
    seen: dict[str, list[float]] = {}
    for ev in sys_obs:
        for o in som.process(ev):
            vals = seen.setdefault(o["obs"], [])
            vals.append(ev["value"])
            if len(set(vals)) == len(vals):
                assert o["value"] == len(vals)
            assert o["value"] >= len(vals)  # sum of (2f - 1) >= number of slots


def test_second_order_moment_ams_exact_when_few_items():
    som = make_task("SecondOrderMoment", {"max_map_size": 10, "estimator": "ams"})
    out = _run(som, [{"obs": "a", "value": v} for v in [1, 1, 1]])
    assert out[-1]["value"] == pytest.approx(9.0)  # one item seen 3 times: F2 = 9
    with pytest.raises(TaskError, match="unknown estimator 'exact'"):
        make_task("SecondOrderMoment", {"max_map_size": 10, "estimator": "exact"})


def test_sensor_keying_restarts_every_series(configs, sys_obs):
    """Per (sensor, field) a Kalman series starts at x = 0, p = 30, so its first estimate is
    z * 30.125 / 30.445; per field only each field's first observation starts a series."""
    first_gain = 30.125 / 30.445
    for group in (["sensor", "obs"], ["obs"]):
        kf = make_task("KalmanFilter", {**configs["SYS"]["KalmanFilter"], "group_by": group})
        out = _run(kf, sys_obs)
        firsts: dict[tuple, int] = {}
        for i, ev in enumerate(sys_obs):
            firsts.setdefault(tuple(ev[g] for g in group), i)
        expected = {i for i in firsts.values() if sys_obs[i]["value"] != 0}
        fresh = {i for i, (o, ev) in enumerate(zip(out, sys_obs, strict=True))
                 if ev["value"] != 0
                 and o["value"] == pytest.approx(ev["value"] * first_gain, rel=1e-12)}
        assert fresh == expected
    assert len(firsts) == 5  # the field keying's five series


def test_sensor_keying_block_average_counts(configs, sys_obs):
    """A block completes every `window` values of a series: per (sensor, field) far fewer do."""
    cfg = configs["SYS"]["BlockWindowAverage"]
    window = cfg["window"]
    emitted = []
    for group in (["obs"], ["sensor", "obs"]):
        counts = Counter(tuple(o[g] for g in group) for o in sys_obs)
        out = _run(make_task("BlockWindowAverage", {**cfg, "group_by": group}), sys_obs)
        assert len(out) == sum(c // window for c in counts.values())
        emitted.append(len(out))
    assert emitted[1] < emitted[0] / 10
