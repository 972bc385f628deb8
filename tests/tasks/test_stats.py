from __future__ import annotations

import json

import pytest

from reuse.tasks import make_task


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


@pytest.mark.parametrize("kind", ["KalmanFilter", "BlockWindowAverage", "SlidingLinearRegression",
                                  "DistinctApproxCount", "SecondOrderMoment"])
def test_state_roundtrip_and_determinism(kind, configs, sys_obs):
    cfg = configs["SYS"][kind]
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


def test_distinct_approx_count_is_in_the_right_range(configs, data_dir):
    from reuse.tasks.sources import replay
    parse = make_task("SenMLParse", configs["TAXI"]["SenMLParse"])
    dac = make_task("DistinctApproxCount", configs["TAXI"]["DistinctApproxCount"])
    events = list(replay("TAXI", data_dir))
    last = None
    for ev in events:
        for o in parse.process(ev):
            last = dac.process(o)[-1]
    true = len({json.loads(e["payload"])["e"][0]["sv"] for e in events})
    assert true == 782
    # LogLog with m=1024 registers is biased below m items; the measured estimate is recorded
    assert 0.5 * true < last["value"] < 2 * true


def test_second_order_moment_exact_when_few_items():
    som = make_task("SecondOrderMoment", {"max_map_size": 10})
    out = _run(som, [{"obs": "a", "value": v} for v in [1, 1, 1]])
    assert out[-1]["value"] == pytest.approx(9.0)  # one item seen 3 times: F2 = 9
