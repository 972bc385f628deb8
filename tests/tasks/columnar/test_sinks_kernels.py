"""The Sink, MQTTPublish and PiTask kernels against their per-event tasks, with ``run_both``
(generated cuts and steps) on real RIoTBench events and on generated ones.

A sink is not a StatefulTask (no checkpoint), so ``run_both`` compares only its (empty)
outputs; its ``count`` and ``published`` tail are compared here, on the task the candidate
ends with, against a per-event task fed the events since that task was made (a restart
makes a new sink, whose counters start again, as the runtime's would).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reuse.tasks import make_task
from reuse.tasks.columnar import Batch, kernel_for
from reuse.tasks.columnar.equivalence import Mismatch, compare, run_both
from reuse.tasks.sinks import Sink
from reuse.tasks.sources import replay

STEPS = st.lists(st.sampled_from(["kernel", "event", "restart"]), max_size=6)


def cuts(n: int) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(0, n), max_size=5)


def check_sink(type_name: str, config: Any, events: list[dict], at: list[int],
               steps: list[str]) -> Sink:
    """run_both, then the candidate's last sink against a per-event one over the events
    since it was made; returns that sink."""
    made: list[Sink] = []

    def make() -> Sink:
        made.append(make_task(type_name, config))  # type: ignore[arg-type]
        return made[-1]

    run_both(make, events, at, steps)
    bounds = [0, *sorted(c for c in at if 0 < c < len(events)), len(events)]
    since = max([bounds[i] for i, s in enumerate(steps[:len(bounds) - 1]) if s == "restart"],
                default=0)
    expected = make()
    for e in events[since:]:
        expected.process(dict(e))
    got = made[-2]  # the candidate's last task (made[-1] is the expected one)
    assert got.count == expected.count == len(events) - since
    compare(list(expected.published), list(got.published), where="published")
    return got


# --- real events -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def real(configs, data_dir):
    """SYS observations (what a sink after a filter gets) and CsvToSenML payload events (what
    MQTTPublish gets in the ETL dataflows)."""
    cfg = configs["SYS"]
    parse = make_task("SenMLParse", cfg["SenMLParse"])
    obs = [o for e in replay("SYS", data_dir, limit=60) for o in parse.process(e)]
    join = make_task("Join", cfg["Join"])
    msgs = [m for o in obs for m in join.process(o)]
    csv = make_task("CsvToSenML", cfg["CsvToSenML"])
    return {"obs": obs, "senml": [p for m in msgs for p in csv.process(m)]}


@settings(max_examples=25)
@given(st.sampled_from(["Sink", "MQTTPublish"]), st.sampled_from(["obs", "senml"]),
       st.sampled_from(["sink", {"keep": 7}, {"keep": 0, "topic": "t"}, {"keep": 1000}]),
       cuts(300), STEPS)
def test_sinks_on_real_events(real, type_name, kind, config, at, steps):
    sink = check_sink(type_name, config, real[kind], at, steps)
    assert len(sink.published) == min(sink.count, sink.published.maxlen or 0)


@settings(max_examples=10)
@given(st.sampled_from([1, 5, 1600]), cuts(300), STEPS)
def test_pi_task_on_real_events(real, iterations, at, steps):
    out = run_both(lambda: make_task("PiTask", {"iterations": iterations}), real["obs"], at,
                   steps)
    assert len(out.candidate) == len(real["obs"])


# --- generated events --------------------------------------------------------------------------

VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(),
                   st.text(max_size=4), st.lists(st.integers(), max_size=2),
                   st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
EVENTS = st.lists(st.dictionaries(
    st.sampled_from(["src", "seq", "ts", "sensor", "meta", "obs", "value", "fields",
                     "payload"]), VALUES, max_size=7), max_size=12)


@settings(max_examples=60)
@given(st.sampled_from(["Sink", "MQTTPublish"]),
       st.sampled_from(["sink", {"keep": 3}, {"keep": 0}, {"keep": "2", "topic": 5}]),
       EVENTS, cuts(12), STEPS)
def test_sinks_on_generated_events(type_name, config, events, at, steps):
    """Events of any keys and values: with and without payload (MQTTPublish records the
    event itself then), accounting keys missing, a tail longer and shorter than a batch."""
    check_sink(type_name, config, events, at, steps)


@settings(max_examples=40)
@given(st.one_of(st.none(), st.just("opaque"), st.builds(dict, iterations=st.integers(-3, 40))),
       EVENTS, cuts(12), STEPS)
def test_pi_task_on_generated_events(config, events, at, steps):
    """Any config (not a dict means the default), events with any keys: the value is a
    float64 column, the keys derive keeps are kept as they are."""

    def make():
        return make_task("PiTask", config)

    run_both(make, events, at, steps)
    got = kernel_for(make()).run(Batch.from_events(events))
    if events:
        assert got.cols["value"].dtype == np.float64
        ref = Batch.from_events([o for e in events for o in make().process(e)])
        assert {k: c.dtype for k, c in got.cols.items()} == \
            {k: c.dtype for k, c in ref.cols.items()}


def test_a_sink_kernel_that_kept_the_head_is_caught(monkeypatch):
    """The tail check is not vacuous: a kernel that kept the first rows of a batch instead of
    the last ones leaves another deque, and the comparison says so."""
    from reuse.tasks.columnar import sinks

    events = [{"seq": i} for i in range(10)]
    check_sink("Sink", {"keep": 3}, events, [], [])

    def head(self, batch):
        self.task.count += batch.n
        self.task.published.extend(batch.take(np.arange(min(3, batch.n))).to_events())
        return Batch.empty()

    monkeypatch.setattr(sinks.SinkKernel, "run", head)
    with pytest.raises(Mismatch, match="published"):
        check_sink("Sink", {"keep": 3}, events, [], [])
