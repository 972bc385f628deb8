"""K+1 fake instances on the real control plane, in virtual time (no Spark).

Seq ``s`` arrives at time ``s``. Each instance ticks every ``period`` time units from its
``phase``: it syncs with the journal (raising the horizon to what has arrived, plus ``lead``),
applies the new operations, claims everything arrived below the horizon, computes its sinks'
records (stateful: a running sum since the dataflow's join cut, so an operation applied at any
other cut changes the digests) and publishes them, one sink at a time. A coordinator proposes
submits and removes at random times. One instance is killed mid-run, possibly between two of
its sinks' publishes. A consumer's gap is measured in virtual time: each record's payload
carries the time its (first) copy was published.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reuse.runtime.control import Operation, OpLog, OutputLog, Registry

DAGS = ("A", "B", "C")


def _value(seq: int) -> int:
    return int(hashlib.blake2b(str(seq).encode(), digest_size=2).hexdigest(), 16) % 100


def _windows(ops: list[Operation]) -> dict[str, tuple[str, int, int | None]]:
    """Submission sink (``<dag>@<J>``) -> (dag, J, R) from operations in journal order."""
    out: dict[str, tuple[str, int, int | None]] = {}
    live: dict[str, str] = {}
    for o in ops:
        if o.op == "submit":
            live[o.dag] = f"{o.dag}@{o.cut}"
            out[live[o.dag]] = (o.dag, o.cut, None)
        else:
            sink = live.pop(o.dag)
            out[sink] = (o.dag, out[sink][1], o.cut)
    return out


def _records(sink: str, window: tuple[str, int, int | None], lo: int, hi: int,
             state: dict[str, int], t: int, by: str) -> list[tuple[int, str, str]]:
    """The sink's records for ``seq`` in ``[lo, hi)`` inside its window: one per seq, carrying
    the running sum since J, and the same record twice at every fifth seq."""
    dag, j, r = window
    out = []
    for q in range(max(lo, j), hi if r is None else min(hi, r)):
        state[sink] = (0 if q == j else state.get(sink, 0)) + _value(q)
        dig = hashlib.blake2b(f"{dag}|{q}|{state[sink]}".encode(), digest_size=8).hexdigest()
        payload = json.dumps({"o": t, "by": by})
        out += [(q, dig, payload)] * (2 if q % 5 == 0 else 1)
    return out


@dataclass
class FakeInstance:
    id: str
    period: int
    phase: int
    lead: int
    log: OpLog
    out: OutputLog
    reg: Registry
    advance: bool = True  # move the horizon itself (else only the coordinator does)
    frontier: int = 0
    applied: list[Operation] = field(default_factory=list)
    windows: dict[str, tuple[str, int, int | None]] = field(default_factory=dict)
    state: dict[str, int] = field(default_factory=dict)
    late: list[str] = field(default_factory=list)
    alive: bool = True

    def ticks(self, t: int) -> bool:
        return self.alive and t >= self.phase and (t - self.phase) % self.period == 0

    def tick(self, t: int, ready: int, torn: bool = False) -> None:
        h, ops = self.log.sync(len(self.applied),
                               advance_to=ready + self.lead if self.advance else None)
        for o in ops:
            if o.cut < self.frontier:  # the protocol says this never happens
                self.late.append(f"{self.id}: op {o.index} cut {o.cut} < {self.frontier}")
            self.applied.append(o)
            self.windows = _windows(self.applied)
            if o.op == "submit":
                self.out.open_sink(f"{o.dag}@{o.cut}", o.cut)
        hi = min(ready, h)
        if hi <= self.frontier:
            return
        lo = self.frontier
        sinks = [s for s, (_, j, r) in sorted(self.windows.items())
                 if j < hi and (r is None or r > lo)]
        for n, sink in enumerate(sinks):
            if torn and n >= len(sinks) // 2:  # killed between two sinks' publishes
                self.alive = False
                return
            _, j, r = self.windows[sink]
            self.out.publish(sink, max(lo, j), hi if r is None else min(hi, r),
                             _records(sink, self.windows[sink], lo, hi, self.state, t, self.id),
                             by=self.id)
        self.frontier = hi
        self.reg.beat(self.id, hi)
        if torn:
            self.alive = False


@dataclass
class Result:
    journal: list[Operation]
    instances: list[FakeInstance]
    out: OutputLog
    kill_t: int
    end: int
    proposed_at: dict[int, int]


def simulate(url: str, *, speeds: list[tuple[int, int]], ops: list[tuple[int, str]],
             kill: tuple[int, int, bool], end: int, lead: int = 0,
             coordinator: tuple[int, int] | None = None) -> Result:
    """Run the fake instances to ``end`` (the last seq + 1), then drain.

    ``speeds``: (period, phase) per instance; ``ops``: (time, dag) toggles (submit when not
    live, else remove); ``kill``: (instance, time, torn); ``coordinator``: (every, lead) when
    only the coordinator moves the horizon."""
    run = uuid.uuid4().hex[:12]
    log, out, reg = OpLog(url, run), OutputLog(url, run), Registry(url, run)
    log.open(0)
    log.propose("submit", "base", key="step-0", by="coord")
    insts = [FakeInstance(f"i{n}", p, ph, lead, OpLog(url, run), OutputLog(url, run), reg,
                          advance=coordinator is None)
             for n, (p, ph) in enumerate(speeds)]
    for i in insts:
        reg.register(i.id, driver_pid=1000 + len(i.id), frontier=0)
    live: set[str] = set()
    proposed_at: dict[int, int] = {}
    victim, kill_t, torn = kill
    t = 0
    horizon = end + 3 * max(p for p, _ in speeds) + 10
    while t < horizon:
        ready = min(t + 1, end)
        if coordinator is not None and t % coordinator[0] == 0:
            log.advance(ready + coordinator[1])
        for step, (when, dag) in enumerate(ops, start=1):
            if when == t:
                what = "remove" if dag in live else "submit"
                live.symmetric_difference_update({dag})
                o = log.propose(what, dag, key=f"step-{step}", by="coord")
                proposed_at[o.index] = t
        for n, inst in enumerate(insts):
            if n == victim and t >= kill_t and inst.alive and not torn:
                inst.alive = False
            if inst.ticks(t):
                inst.tick(t, ready, torn=torn and n == victim and t >= kill_t)
        t += 1
    return Result(log.ops(), insts, out, kill_t, end, proposed_at)


def reference(journal: list[Operation], end: int) -> dict[str, list[tuple[int, str]]]:
    """One fault-free instance that knew every operation from the start: each submission's
    records for ``seq < end``, in order."""
    state: dict[str, int] = {}
    return {sink: [(q, d) for q, d, _ in _records(sink, w, 0, end, state, 0, "ref")]
            for sink, w in _windows(journal).items()}


def check(res: Result) -> None:
    survivors = [i for i in res.instances if i.alive]
    assert survivors, "the scenario must leave a survivor"
    for inst in res.instances:
        assert inst.late == []
        assert inst.applied == res.journal[:len(inst.applied)]
    for inst in survivors:
        assert inst.applied == res.journal and inst.frontier == res.end
    ref = reference(res.journal, res.end)
    for sink, want in ref.items():
        got = res.out.read(sink)[0]
        assert [(o.seq, o.digest) for o in got] == want, sink  # once each, in seq order
        if want:
            r = _windows(res.journal)[sink][2]
            assert res.out.mark(sink) == (res.end if r is None else min(r, res.end))
    # the consumer of the always-live sink: no pause after the kill beyond one claim interval
    base = f"base@{res.journal[0].cut}"
    times = [json.loads(o.payload)["o"] for o in res.out.read(base)[0]]
    after = [(a, b) for a, b in zip(times, times[1:], strict=False)
             if b > res.kill_t and b <= res.end - 1]
    bound = min(i.period for i in survivors)
    assert max((b - a for a, b in after), default=0) <= bound


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, object]:
    k1 = draw(st.integers(2, 3))
    speeds = [(draw(st.integers(1, 5)), draw(st.integers(0, 4))) for _ in range(k1)]
    end = draw(st.integers(20, 60))
    ops = draw(st.lists(st.tuples(st.integers(0, end + 5), st.sampled_from(DAGS)),
                        max_size=8, unique_by=lambda x: x[0]))
    # killed mid-run: once every instance has started
    kill = (draw(st.integers(0, k1 - 1)), draw(st.integers(max(ph for _, ph in speeds), end)),
            draw(st.booleans()))
    return {"speeds": speeds, "ops": sorted(ops), "kill": kill, "end": end,
            "lead": draw(st.integers(0, 6))}


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sc=scenarios())
def test_survivors_agree_and_consumers_see_each_record_once(redis_url: str,
                                                            sc: dict[str, object]) -> None:
    check(simulate(redis_url, **sc))  # type: ignore[arg-type]


def test_a_fixed_scenario(redis_url: str) -> None:
    """Two instances at different speeds, a merge and an unmerge, the fast one killed between
    two sinks' publishes."""
    res = simulate(redis_url, speeds=[(2, 0), (3, 1)], ops=[(5, "A"), (9, "B"), (20, "A")],
                   kill=(0, 14, True), end=40)
    check(res)
    assert [(o.op, o.dag) for o in res.journal] == [("submit", "base"), ("submit", "A"),
                                                    ("submit", "B"), ("remove", "A")]
    assert [i.alive for i in res.instances] == [False, True]
    bys = {o.by for o in res.out.read("base@0")[0]}
    assert bys == {"i0", "i1"}  # each instance's copy came first some of the time


def test_the_lead_trades_operation_latency_against_instance_lag(redis_url: str) -> None:
    """Only a coordinator moves the horizon, every 4 time units, to what arrived plus a lead.
    A lead shorter than one coordinator interval's arrivals holds the instances back (the
    consumer's gap grows to the coordinator's interval); a longer lead never does, and puts
    each operation's cut that much further ahead of its proposal."""
    rows = {}
    for lead in (0, 4, 12):
        res = simulate(redis_url, speeds=[(1, 0), (2, 0)], ops=[(10, "A"), (25, "A")],
                       kill=(1, 15, False), end=50, coordinator=(4, lead))
        check_cuts = [o.cut - res.proposed_at[o.index] for o in res.journal[1:]]
        times = [json.loads(o.payload)["o"] for o in res.out.read("base@0")[0]]
        gap = max(b - a for a, b in zip(times, times[1:], strict=False) if b < res.end - 1)
        rows[lead] = (gap, max(check_cuts))
    assert rows[0][0] == 4 and rows[4][0] == 1 and rows[12][0] == 1
    assert rows[0][1] <= rows[4][1] < rows[12][1]
