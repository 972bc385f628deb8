"""``reuse run --k-safe K --replicas apps``: K+1 engine instances, each its own driver and Spark
application, following one operation journal on Redis; this process only coordinates.

What the coordinator does (it runs no task and starts no JVM):

1. Starts the run's Redis (:func:`~reuse.runtime.dataplane.redis_bus.start_redis`) and opens the
   journal (:class:`~reuse.runtime.control.OpLog`) at the run's first ``seq``.
2. Starts K+1 instances (:mod:`reuse.runtime.apps.instance`), each a child process in its own
   process group (killing that group is how a test emulates a machine's death): ``i0`` the home
   (every task), the others replicas (the tasks with at least ``U`` users;
   :mod:`reuse.runtime.apps.roles`). On ``local[N]`` each gets ``local[N // (K+1)]`` (at least
   one core); on a standalone cluster each is its own application with one worker's cores
   (``spark.cores.max``), so no two instances share an executor: anti-affinity, visible in
   each instance's ``batches.jsonl`` (``shard_exec``) and in ``apps.json``.
3. Per trace step, proposes the operation (its cut is decided in the journal) and then, until
   the step's time is up, reads every sink's de-duplicated output stream (the consumer's view)
   and watches the instances: one whose process ended, or whose heartbeat is older than
   ``dead_s``, is replaced.
4. **Replacement.** A new instance joins at a cut decided in the journal (a ``join``
   operation): from there it runs with states the live instances saved at that cut
   (:class:`~reuse.runtime.control.cutstates.CutStates`). When no live instance runs some task
   of the dead one (the home, with ``U > 1``: its unshared tasks ran nowhere else), or when no
   instance is alive, the replacement restarts from the dead instance's own run directory
   instead (its checkpoint and saved states, as ``--resume`` does), so nothing is lost; that
   needs the dead instance's disk. A replacement still catching up is no source of states:
   when only such instances are left, the next dead one restarts from its disk too (it then
   puts its states at the journal's cuts, where a waiting joiner takes them). K-safety is
   *restored* once the replacement's frontier has reached the lowest frontier of the others.
5. At the end, proposes ``stop``; every instance exits once it has processed everything below
   its cut. The outputs are accounted against the reference execution as consumers read them
   (``lost``, ``duplicated``), and ``<root>/apps.json`` records every instance (its
   ``driver_pid``, ``executors``, role, fate) and every replacement.

The trace's replay, a resume after the coordinator's own death and the accounting:
:mod:`reuse.runtime.apps.runs`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from reuse.core.dataflow import Dataflow
from reuse.runtime import SparkRuntimeError
from reuse.runtime.apps.instance import InstanceSpec, sink_stream
from reuse.runtime.apps.roles import instance_tasks
from reuse.runtime.common.files import read_json, write_json
from reuse.runtime.common.redis_client import shown_url
from reuse.runtime.control import OpLog, OutputLog, Registry
from reuse.runtime.measure import CpuMeter

if TYPE_CHECKING:
    from reuse.runtime.engines.shared.broker_input import BrokerInput

__all__ = ["Adopted", "Child", "Consumer", "Coordinator", "Recorded", "recorded_instances"]

#: Seconds the coordinator's control-plane calls retry a refused connection (its keeper
#: restarts the run's Redis within a second).
PATIENCE_S = 20.0


class Recorded(NamedTuple):
    """One instance as a dead coordinator's ``apps.json`` and spec file recorded it."""

    spec: InstanceSpec
    pid: int
    started_ms: int
    state: str
    died_ms: int | None


def recorded_instances(root: Path, apps: Mapping[str, Any]) -> list[Recorded]:
    """Every instance of ``apps.json`` with its spec file, read before anything is started
    (a record that cannot be read is refused while nothing runs)."""
    out = []
    for inst in apps["instances"]:
        iid = str(inst["id"])
        spec_d = read_json(root / "apps" / f"{iid}.spec.json")
        if not isinstance(spec_d, dict):
            raise ValueError(f"instance {iid!r} has no spec file (apps/{iid}.spec.json)")
        spec = InstanceSpec.from_dict(spec_d)
        state = str(inst["state"])
        if state not in ("live", "dead", "stopped") or spec.id != iid:
            raise ValueError(f"instance {iid!r}: state {state!r}, spec of {spec.id!r}")
        died = inst.get("died_ms")
        out.append(Recorded(spec, int(inst["driver_pid"]), int(inst["started_ms"]), state,
                            None if died is None else int(died)))
    return out


class Adopted:
    """An instance process started by a coordinator that died, as the one resuming the run
    adopts it: not its child, so its exit code is unknown. It ended cleanly when it registered
    itself ``done`` (the follower does once everything below the stop cut is processed);
    otherwise it died. The process is known by its PID and start time, so a PID reused by
    another process is not mistaken for it."""

    def __init__(self, pid: int, iid: str, registry: Registry) -> None:
        import psutil

        self.pid, self.iid, self.registry = pid, iid, registry
        self._proc: Any = None
        try:
            proc = psutil.Process(pid)
            if "reuse.runtime.apps.instance" in " ".join(proc.cmdline()):
                self._proc = proc
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass

    def poll(self) -> int | None:
        """``None`` while it runs; 0 once it ended done, 1 once it ended otherwise."""
        import psutil

        try:
            if self._proc is not None and self._proc.is_running() \
                    and self._proc.status() != psutil.STATUS_ZOMBIE:
                return None
        except psutil.NoSuchProcess:
            pass
        self._proc = None
        reg = {i.id: i for i in self.registry.instances()}.get(self.iid)
        return 0 if reg is not None and reg.extra.get("done") is True else 1


@dataclass
class Held:
    """What the coordinator saw while it held (:meth:`Coordinator.tick`): each output record
    read (arrival ms, its source event's emit ts) and how many instances it replaced."""

    arrivals: list[tuple[int, int | None]] = field(default_factory=list)
    failures: int = 0


@dataclass
class Child:
    """One instance process, as the coordinator started it."""

    spec: InstanceSpec
    proc: subprocess.Popen[bytes] | Adopted
    started_ms: int
    state: str = "live"  # live, dead, stopped
    died_ms: int | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid


@dataclass
class Consumer:
    """The consumer's view of every sink stream: each record once, with its arrival time."""

    outputs: OutputLog
    cursors: dict[str, str] = field(default_factory=dict)
    records: dict[str, list[tuple[int, str, int, int | None, str]]] = field(default_factory=dict)

    def read(self, streams: Sequence[str]) -> list[tuple[int, int | None]]:
        """New records of ``streams``; returns each one's ``(arrival ms, emit ts)``."""
        got: list[tuple[int, int | None]] = []
        for s in streams:
            out, self.cursors[s] = self.outputs.read(s, self.cursors.get(s, ""))
            recs = self.records.setdefault(s, [])
            for o in out:
                ts = json.loads(o.payload).get("ts")
                recs.append((o.seq, o.digest, o.ms, ts, o.by))
                got.append((o.ms, ts))
        return got


    def sample(self, streams: Sequence[str], n: int = 20) -> list[tuple[int, int | None]]:
        """Up to ``n`` of the newest records of each stream not sampled before, without
        reading the rest (the benchmarks' latency sample; records are not kept)."""
        got: list[tuple[int, int | None]] = []
        client = self.outputs.client
        for s in streams:
            newer = f"({self.cursors[s]}" if s in self.cursors else "-"
            out = client.xrevrange(self.outputs.key(f"out:{s}"), "+", newer, count=n)
            if out:
                self.cursors[s] = out[0][0].decode()
            for raw_id, f in out:
                got.append((int(raw_id.decode().split("-")[0]),
                            json.loads(f[b"p"]).get("ts")))
        return got

    def count(self, streams: Sequence[str]) -> int:
        """Records in the streams so far."""
        return sum(self.outputs.size(s) for s in streams)


class Coordinator:
    """The instances of one run: start, watch, replace, stop (see the module docstring)."""

    def __init__(self, root: Path, base: InstanceSpec, k: int, flows: Mapping[str, Dataflow],
                 *, dead_s: float, meter: CpuMeter, log: Callable[[str], None] | None) -> None:
        from reuse.runtime.common.planners import make_planner

        self.root, self.base, self.k, self.flows = root, base, k, flows
        # the same planner as every instance's, for the counts and the streams' tasks; neither
        # re-plans on a remove (issue 36: the instances' engines follow the journal with
        # re-planning off, and this book-keeping knows one running sink task per stream)
        self.planner = make_planner(base.mode == "reuse", base.match)
        self.parents: dict[str, list[str]] = {}  # live running task -> its parents
        self.sources: set[str] = set()
        self.stream_task: dict[str, str] = {}  # sink stream -> its running sink task
        self.broker: Any = None
        self.feed: BrokerInput | None = None  # a broker-fed run's ingest
        self.dead_s = dead_s
        self.meter = meter
        self.log = log
        self.oplog = OpLog(base.redis, base.run, patience_s=PATIENCE_S)
        self.registry = Registry(base.redis, base.run, patience_s=PATIENCE_S)
        self.children: dict[str, Child] = {}
        self.events: list[dict[str, Any]] = []
        self.consumer = Consumer(OutputLog(base.redis, base.run, patience_s=PATIENCE_S))
        self.streams: set[str] = set()  # every submission's sink streams so far
        self.stopping = False
        self.keeper: Any = None
        self.proposed: set[str] = set()  # proposal keys this coordinator's planner has applied
        # a heartbeat is judged only after dead_s of this coordinator's life: a resumed one
        # finds the beats its Redis held at the death, before the instances beat again
        self.began = time.time()
        self._next = 0

    def keep(self, broker: Any, feed: BrokerInput | None = None) -> None:
        """Own the run's Redis, and restart it whenever it dies (its keeper thread; the
        restarts are in ``<root>/redis/restarts.jsonl``); and a broker-fed run's ingest
        (:func:`reuse.runtime.apps.runs._feed_input`), closed before the Redis."""
        from reuse.runtime.dataplane.keeper import Keeper

        self.broker, self.feed = broker, feed
        self.keeper = Keeper({"redis": broker},
                             log=self.root / "redis" / "restarts.jsonl").start()

    def propose(self, op: str, dag: str, *, key: str) -> int:
        """Decide ``op`` on ``dag`` in the journal (idempotent per ``key``); returns its cut.
        The planner's book-keeping is done once per key, so a resumed coordinator proposes its
        dead predecessor's steps again to rebuild it."""
        cut = self.oplog.propose(op, dag, key=key, by="coordinator").cut
        if key in self.proposed:
            return cut
        self.proposed.add(key)
        if op == "submit":
            pl = self.planner.submit(self.flows[dag])
            for t in pl.start:
                self.parents[t.id] = list(t.parents)
                if t.kind == "source":
                    self.sources.add(t.id)
            for sink, rid in pl.sinks.items():
                self.stream_task[sink_stream(dag, cut, sink)] = rid
                self.streams.add(sink_stream(dag, cut, sink))
        elif op == "remove":
            for rid in self.planner.remove(dag).stop:
                self.parents.pop(rid, None)
        return cut

    def hold(self, seconds: float, *, sample: bool = False) -> Held:
        """Watch and read for ``seconds`` (:meth:`tick` about every 0.25 s): what was read and
        replaced meanwhile. ``sample``: read only a sample of each stream's newest records
        (:meth:`Consumer.sample`) instead of all of them."""
        end = time.time() + seconds
        seen = Held()
        while True:
            self.tick(seen, sample=sample)
            if time.time() >= end:
                return seen
            time.sleep(min(0.25, max(0.0, end - time.time())))

    def tick(self, seen: Held, *, sample: bool = False) -> None:
        """Once: replace the dead instances, note a restored K, read the streams, into
        ``seen``."""
        seen.failures += len(self.watch())
        self.restored()
        streams = sorted(self.streams)
        seen.arrivals += (self.consumer.sample(streams) if sample
                          else self.consumer.read(streams))

    def shared(self) -> frozenset[str] | None:
        """The running tasks a replica instance runs now (``None``: every task)."""
        return instance_tasks(False, self.planner.users(), self.parents, self.base.min_users)

    def counts(self) -> dict[str, int]:
        """Live running tasks and the copies the replica instances run (sources excluded)."""
        tasks = [t for t in self.parents if t not in self.sources]
        shared = self.shared()
        reps = len(tasks) if shared is None else len(shared - self.sources)
        return {"running_tasks": len(tasks), "replica_tasks": reps * self.k}

    def replicated_streams(self) -> set[str]:
        """The sink streams every instance computes now (a replica instance runs their task)."""
        shared = self.shared()
        return {s for s, rid in self.stream_task.items()
                if rid in self.parents and (shared is None or rid in shared)}

    def close(self) -> None:
        """Kill what still runs, stop Redis (its keeper first) and the meter."""
        self.kill_all()
        if self.feed is not None:
            self.feed.close()
        if self.keeper is not None:
            self.keeper.stop()
        if self.broker is not None:
            self.broker.stop()
        self.meter.stop()

    @property
    def catch_up_events(self) -> int:
        """A joiner's batch bound: ten triggers' worth, so the backlog of its start-up (its
        JVM's, about ten seconds) is worked off in a few batches."""
        return max(1, round(10 * self.base.rate * self.base.trigger_s))

    def spawn(self, *, home: bool, join: int | None = None, root: str | None = None,
              start_seq: int | None = None, max_events: int | None = None) -> Child:
        iid = f"i{self._next}"
        self._next += 1
        spec = replace(self.base, id=iid, home=home, join=join,
                       root=root or str(self.root / "apps" / iid),
                       start_seq=self.base.start_seq if start_seq is None else start_seq,
                       max_events=self.base.max_events if max_events is None else max_events)
        Path(spec.root).mkdir(parents=True, exist_ok=True)
        path = self.root / "apps" / f"{iid}.spec.json"
        write_json(path, spec.as_dict(), private=True)  # its Redis URL holds the password
        logf = open(self.root / "apps" / f"{iid}.log", "ab")  # noqa: SIM115 - the child's
        proc = subprocess.Popen([sys.executable, "-m", "reuse.runtime.apps.instance", str(path)],
                                stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
        logf.close()
        child = Child(spec, proc, int(time.time() * 1000))
        self.children[iid] = child
        self.meter.add_roots([proc.pid])
        return child

    def live(self) -> list[Child]:
        return [c for c in self.children.values() if c.state == "live"]

    def adopt(self, recorded: Sequence[Recorded], events: Sequence[Mapping[str, Any]]) -> None:
        """Take over the instances a dead coordinator recorded (:func:`recorded_instances`, from
        its ``apps.json``) and its replacements so far: the live ones by PID (:class:`Adopted`;
        one that has ended since is found dead, or done, by the next :meth:`watch`). An
        instance it spawned after its last ``apps.json`` is not known here: it runs to the
        stop cut and exits by itself, and its id is not given again (ids come from the spec
        files)."""
        for r in recorded:
            child = Child(r.spec, Adopted(r.pid, r.spec.id, self.registry), r.started_ms,
                          r.state, r.died_ms)
            self.children[r.spec.id] = child
            if child.state == "live":
                self.meter.add_roots([child.pid])
        self.events = [dict(e) for e in events]
        ids = [int(p.name.split(".")[0][1:]) for p in (self.root / "apps").glob("i*.spec.json")]
        self._next = max(ids, default=-1) + 1

    def wait_ready(self, timeout_s: float = 180.0) -> None:
        """Until every live instance has processed a batch (its JVM is up)."""
        deadline = time.time() + timeout_s
        while True:
            self.watch()
            beats = {i.id: i.frontier for i in self.registry.instances()}
            if all(beats.get(c.spec.id, -1) > 0 for c in self.live()):
                return
            if time.time() > deadline:
                raise SparkRuntimeError(f"instances did not start within {timeout_s:.0f}s; see "
                                        f"{self.root / 'apps'}/<id>.log")
            time.sleep(0.5)

    def watch(self) -> list[dict[str, Any]]:
        """Replace every instance found dead; returns the replacements made."""
        now_ms = int(time.time() * 1000)
        beats = {i.id: i for i in self.registry.instances()}
        dead = []
        for c in self.live():
            b = beats.get(c.spec.id)
            rc = c.proc.poll()
            if rc == 0:  # it processed everything below the stop cut
                c.state = "stopped"
                continue
            exited = rc is not None
            stale = (b is not None and b.frontier > 0 and b.age_s > self.dead_s
                     and time.time() - self.began > self.dead_s)
            if exited or stale:
                c.state, c.died_ms = "dead", now_ms
                if not exited:  # hung: make sure it is gone before another takes its place
                    _kill_group(c.pid)
                dead.append(c)
        # where a joiner can take its states from: live instances that are not themselves
        # replacements still catching up (nor those made below)
        pending = {e["new"] for e in self.events if e["restored_ms"] is None}
        survivors = [c for c in self.live() if c.spec.id not in pending]
        made = [ev for c in dead if (ev := self._replace(c, now_ms, survivors)) is not None]
        if dead:
            self.write_apps()
        return made

    def _replace(self, dead: Child, now_ms: int, live: list[Child]) -> dict[str, Any] | None:
        own_tasks = dead.spec.home and self.base.min_users > 1
        if self.stopping and live and not own_tasks:
            return None  # the live ones finish the run; a joiner would have nothing to do
        if not live or own_tasks:
            new = self.spawn(home=dead.spec.home, root=dead.spec.root,
                             start_seq=dead.spec.start_seq, max_events=self.catch_up_events)
            how, cut = "restart", None
        else:
            iid = f"i{self._next}"
            cut = self.oplog.propose("join", iid, key=f"join-{iid}", by="coordinator").cut
            new = self.spawn(home=dead.spec.home, join=cut, start_seq=cut,
                             max_events=self.catch_up_events)
            how = "join"
        ev = {"event": how, "dead": dead.spec.id, "dead_pid": dead.pid, "new": new.spec.id,
              "new_pid": new.pid, "detected_ms": now_ms, "cut": cut, "restored_ms": None}
        self.events.append(ev)
        if self.log:
            self.log(f"instance {dead.spec.id} (pid {dead.pid}) died; {new.spec.id} "
                     + (f"joins at cut {cut}" if cut is not None else "restarts from its disk"))
        return ev

    def restored(self) -> None:
        """Note when each replacement has caught up (its frontier within a trigger's worth of
        ``seq`` of the lowest of the others'): K-safety is back."""
        pending = [e for e in self.events if e["restored_ms"] is None]
        if not pending:
            return
        beats = {i.id: i for i in self.registry.instances()}
        live = {c.spec.id for c in self.live()}
        for e in pending:
            me = beats.get(e["new"])
            others = [beats[i].frontier for i in live if i != e["new"] and i in beats]
            slack = self.base.rate * self.base.trigger_s
            if me is not None and me.frontier > 0 and (not others
                                                       or me.frontier >= min(others) - slack):
                e["restored_ms"] = int(time.time() * 1000)
                e["restored_s"] = round((e["restored_ms"] - e["detected_ms"]) / 1000, 3)
                self.write_apps()

    def write_apps(self) -> Path:
        """``<root>/apps.json``: every instance (driver PID, executors, role, fate) and every
        replacement."""
        regs = {i.id: i for i in self.registry.instances()}
        inst = []
        for iid, c in self.children.items():
            r = regs.get(iid)
            inst.append({"id": iid, "driver_pid": c.pid,
                         "executors": list(r.executors) if r is not None else [],
                         "batches": int(str(r.extra.get("batches", 0))) if r is not None else 0,
                         "host": r.host if r is not None else "", "home": c.spec.home,
                         "root": c.spec.root, "join": c.spec.join, "state": c.state,
                         "started_ms": c.started_ms, "died_ms": c.died_ms,
                         "frontier": r.frontier if r is not None else -1})
        path = self.root / "apps.json"
        write_json(path, {"run": self.base.run, "redis": shown_url(self.base.redis),
                          "k_safe": self.k,
                          "replicate_min_users": self.base.min_users, "instances": inst,
                          "replacements": self.events})
        return path

    def stop(self, timeout_s: float = 120.0) -> int:
        """Propose ``stop``; wait for every live instance to finish below its cut; returns it."""
        cut = self.oplog.propose("stop", "", key="stop", by="coordinator").cut
        self.stopping = True
        deadline = time.time() + timeout_s
        while self.live() and time.time() < deadline:
            self.watch()
            time.sleep(0.3)
        self.kill_all()
        return cut

    def kill_all(self) -> None:
        for c in self.children.values():
            if c.proc.poll() is None:
                _kill_group(c.pid)
                c.state = "dead" if c.state == "live" else c.state


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
