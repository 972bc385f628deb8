"""The engine contract's conformance (issue 32): every engine class has every member of
:class:`~reuse.runtime.engines.contract.Engine`, with parameters a driver can call (no Spark).

How a member is checked, on the class (an engine cannot be made without a Spark session):

- A **method** of the protocol must be a function defined on the class (or a base), and its
  parameters must accept every call the protocol's signature allows, compared with
  :func:`inspect.signature` (names and kinds, not types): each positional parameter at the
  same place, under the same name unless it is positional-only; each keyword-only parameter
  by name (or a ``**kwargs``); a default wherever the protocol has one; and no parameter the
  protocol does not pass, unless it has a default. The types are mypy's business: the static
  conformance check at the bottom of ``reuse/runtime/engines/contract.py``.
- A **data member** (a property or an annotated attribute of the protocol) must be an
  attribute of the class (a class attribute or a property), or be assigned to ``self`` in a
  top-level statement of the ``__init__`` that constructing the class runs (read with
  :mod:`ast` from its source; a ``super().__init__()`` there adds the next ``__init__`` in the
  MRO). Only top-level statements count, as they run whenever ``__init__`` returns; an
  assignment under an ``if`` or in another method may not have happened, and a bare
  annotation (``x: int``) creates no attribute. A member the protocol lets drivers set
  (``on_op``) must not be a read-only property.

The check must reject an incomplete engine, so it is run on deliberate dummies too: a
complete one (:class:`FakeEngine`, also accepted by ``isinstance(..., Engine)``) and copies
with one member missing or wrong.

A member an engine lacks is an ``xfail(strict=True)`` case naming it (:data:`LACKS`, empty
today): when the engine gains it, the case passes and the strict mark fails the run, so the
mark must go.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import textwrap
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import pytest

from reuse.core.dataflow import Dataflow
from reuse.runtime.common.planners import Planner, make_planner
from reuse.runtime.common.policy import Policy
from reuse.runtime.common.recovery import Failures
from reuse.runtime.engines import contract
from reuse.runtime.engines.conformance import SharedQueryEngine
from reuse.runtime.engines.contract import (
    Counts,
    Engine,
    JournalOp,
    Ledger,
    LedgerDag,
    RemoveResult,
    SubmitResult,
    TaskOptions,
)
from reuse.runtime.engines.partial.engine import Runtime
from reuse.runtime.engines.shared.engine import InplaceRuntime

P = inspect.Parameter
_NONE = object()

# --- the checker -------------------------------------------------------------------------------


def own_members(proto: type) -> dict[str, str]:
    """Member -> ``"method"``, ``"property"`` or ``"attribute"`` (settable), as declared in
    the body of one protocol class."""
    out = {n: "attribute" for n in vars(proto).get("__annotations__", {})
           if not n.startswith("_")}
    for name, value in vars(proto).items():
        if name.startswith("_"):
            continue
        if isinstance(value, property):
            out[name] = "property"
        elif inspect.isfunction(value):
            out[name] = "method"
    return out


def _protocols(proto: type) -> list[type]:
    """``proto`` and the protocols it extends, bases first (not ``typing.Protocol``)."""
    return [k for k in reversed(proto.__mro__)
            if getattr(k, "_is_protocol", False) and k.__module__ != "typing"]


def protocol_members(proto: type) -> dict[str, str]:
    """Every member of a protocol, its bases' included (see :func:`own_members`)."""
    out: dict[str, str] = {}
    for k in _protocols(proto):
        out.update(own_members(k))
    return out


def _self_targets(target: ast.expr, me: str) -> set[str]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return {n for t in target.elts for n in _self_targets(t, me)}
    if isinstance(target, ast.Starred):
        return _self_targets(target.value, me)
    if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
            and target.value.id == me):
        return {target.attr}
    return set()


def _calls_super_init(stmt: ast.stmt) -> bool:
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "__init__" and isinstance(call.func.value, ast.Call)
            and isinstance(call.func.value.func, ast.Name)
            and call.func.value.func.id == "super")


def init_attributes(cls: type) -> set[str]:
    """The attributes every constructed instance of ``cls`` has from ``__init__``: those
    assigned to ``self`` in top-level statements of the ``__init__`` that runs, and of the
    next one in the MRO wherever it calls ``super().__init__()`` at top level."""
    names: set[str] = set()
    for k in cls.__mro__:
        init = vars(k).get("__init__")
        if init is None:
            continue
        if not inspect.isfunction(init):  # object's: nothing assigned
            break
        fn = ast.parse(textwrap.dedent(inspect.getsource(init))).body[0]
        assert isinstance(fn, ast.FunctionDef)
        me = fn.args.args[0].arg
        chained = False
        for stmt in fn.body:
            if isinstance(stmt, (ast.Return, ast.Raise)):
                break
            if isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    names |= _self_targets(t, me)
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                names |= _self_targets(stmt.target, me)
            elif isinstance(stmt, ast.AugAssign):
                names |= _self_targets(stmt.target, me)
            chained = chained or _calls_super_init(stmt)
        if not chained:
            break
    return names


def signature_problems(name: str, want: Callable[..., object],
                       got: Callable[..., object]) -> list[str]:
    """Why a method ``got`` cannot take every call the protocol's ``want`` allows (both
    unbound: ``self`` is dropped)."""
    wp = list(inspect.signature(want).parameters.values())[1:]
    gp = list(inspect.signature(got).parameters.values())[1:]
    var_pos = any(p.kind is P.VAR_POSITIONAL for p in gp)
    var_kw = any(p.kind is P.VAR_KEYWORD for p in gp)
    g_positional = [p for p in gp if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    by_name = {p.name: p for p in gp}
    used: set[str] = set()
    out: list[str] = []
    w_positional = [p for p in wp if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    for i, w in enumerate(w_positional):
        if i >= len(g_positional):
            if not var_pos:
                out.append(f"{name}: takes no positional parameter for {w.name!r}")
            continue
        g = g_positional[i]
        used.add(g.name)
        if w.kind is P.POSITIONAL_OR_KEYWORD and (g.kind is P.POSITIONAL_ONLY
                                                  or g.name != w.name):
            out.append(f"{name}: parameter {i + 1} is {g.name!r}, the contract's {w.name!r} "
                       "(callers may pass it by name)")
        if w.default is not P.empty and g.default is P.empty:
            out.append(f"{name}: parameter {g.name!r} needs a default")
    for w in wp:
        if w.kind is P.KEYWORD_ONLY:
            k = by_name.get(w.name)
            if k is None or k.kind is P.POSITIONAL_ONLY or k.name in used:
                if not var_kw:
                    out.append(f"{name}: takes no keyword {w.name!r}")
                continue
            used.add(k.name)
            if w.default is not P.empty and k.default is P.empty:
                out.append(f"{name}: keyword {k.name!r} needs a default")
        elif w.kind is P.VAR_POSITIONAL and not var_pos:
            out.append(f"{name}: takes no *{w.name}")
        elif w.kind is P.VAR_KEYWORD and not var_kw:
            out.append(f"{name}: takes no **{w.name}")
    for g in gp:
        if (g.name not in used and g.default is P.empty
                and g.kind not in (P.VAR_POSITIONAL, P.VAR_KEYWORD)):
            out.append(f"{name}: requires {g.name!r}, which the contract does not pass")
    return out


def member_problems(cls: type, name: str, proto: type) -> list[str]:
    """Why ``cls`` does not provide the protocol member ``name`` (empty: it does)."""
    kind = protocol_members(proto)[name]
    static = inspect.getattr_static(cls, name, _NONE)
    if kind == "method":
        if static is _NONE:
            return [f"{cls.__name__} has no method {name}"]
        if not inspect.isfunction(static):
            return [f"{cls.__name__}.{name} is not a method"]
        return signature_problems(name, getattr(proto, name), static)
    if static is _NONE:
        if name in init_attributes(cls):
            return []
        return [f"{cls.__name__} has no {name}: neither a class attribute nor assigned in "
                "__init__"]
    if inspect.isfunction(static):
        return [f"{cls.__name__}.{name} is a method, the contract's is data"]
    if kind == "attribute" and isinstance(static, property) and static.fset is None:
        return [f"{cls.__name__}.{name} is a read-only property; drivers set it"]
    return []


# --- the engines -------------------------------------------------------------------------------

#: (engine, member) -> why it fails today: the members to add or change.
LACKS: dict[tuple[str, str], str] = {}  # every engine has every member today

#: engine -> its class and the protocol it is held to (the shared query's internals too).
ENGINES: dict[str, tuple[type, type]] = {
    "shared": (InplaceRuntime, SharedQueryEngine),
    "partial": (Runtime, Engine),
}


def _cases() -> list[object]:
    cases: list[object] = []
    for key, (cls, proto) in ENGINES.items():
        for name in protocol_members(proto):
            why = LACKS.get((key, name))
            marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
            cases.append(pytest.param(cls, name, proto, id=f"{key}-{name}", marks=marks))
    return cases


@pytest.mark.parametrize(("cls", "name", "proto"), _cases())
def test_engine_has_member(cls: type, name: str, proto: type) -> None:
    assert member_problems(cls, name, proto) == []


def test_every_known_gap_names_a_member() -> None:
    """A stale entry in :data:`LACKS` (a member renamed or dropped) would xfail nothing."""
    for key, name in LACKS:
        assert name in protocol_members(ENGINES[key][1]), (key, name)


# --- the checker rejects what is not an engine ---------------------------------------------------


class _FakeWithoutStartSeq:
    """Every member but ``start_seq`` (see :class:`FakeEngine`)."""

    def __init__(self) -> None:
        self.policy: Policy = Policy.of("reuse", "inplace")
        self.planner: Planner = make_planner(True)
        self.root = Path("run")
        self.mode, self.match, self.source = "reuse", "exact", "replay"
        self.t0, self.rate, self.trigger_s = 0, 10.0, 2.0
        self.limit: int | None = None
        self.data_dir = "data"
        self.opts: TaskOptions = {"data_dir": "data", "pi_iterations": 1, "record": "digest",
                                  "limit": None}
        self.sources: dict[str, str] = {}
        self.dags: dict[str, LedgerDag] = {}
        self.log: list[dict[str, object]] = []
        self.failures = Failures()
        self.on_op: Callable[[str, str, int], None] | None = None

    def start_sources(self, types: Iterable[str]) -> None:
        pass

    def submit(self, flow: Dataflow, *, at: int | None = None) -> SubmitResult:
        return {"dag": flow.id, "J": at or 0, "started": [], "reused": [], "sinks": {},
                "seconds": 0.0}

    def remove(self, dag_id: str, *, at: int | None = None) -> RemoveResult:
        return {"dag": dag_id, "R": at or 0, "stop": [], "started": [], "replanned": {},
                "seconds": 0.0}

    def defragment(self, *, at: int | None = None) -> Mapping[str, object]:
        return {}

    def bound(self) -> int:
        return -1

    def arrival_rate(self) -> float:
        return self.rate

    def poll(self) -> None:
        pass

    def qhw(self) -> int:
        return -1

    def warm(self) -> bool:
        return True

    def wait_processed(self, seq: int, timeout_s: float = 120.0) -> None:
        pass

    def wait_stopped(self, timeout_s: float = 120.0) -> None:
        pass

    def take_lag(self) -> tuple[int | None, int | None]:
        return None, None

    def malformed(self) -> int | None:
        return None

    def counts(self) -> Counts:
        return {"running_tasks": 0, "paused_tasks": 0, "queries": 0, "replica_tasks": 0}

    def ledger(self) -> Ledger:
        return {"engine": "fake", "mode": self.mode, "match": self.match, "merge": "inplace",
                "unmerge": "free", "source": {"kind": "replay"}, "t0": self.t0,
                "rate": self.rate, "limit": self.limit, "data_dir": self.data_dir,
                "opts": self.opts, "tasks": {}, "dags": self.dags, "log": self.log,
                "replicas": {}}

    def save_ledger(self) -> Path:
        return self.root / "ledger.json"

    def replay(self, ops: Iterable[JournalOp], flows: Mapping[str, Dataflow], *,
               start_seq: int) -> None:
        raise NotImplementedError

    def close(self, *, clean: bool = False) -> None:
        pass


class FakeEngine(_FakeWithoutStartSeq):
    """A complete engine without Spark: the checker and ``isinstance`` must accept it."""

    def __init__(self) -> None:
        super().__init__()
        self.start_seq = 0


class _AnnotatedStartSeq(_FakeWithoutStartSeq):
    start_seq: int  # declared, never set: no attribute


def _without(*names: str, **replace: object) -> type:
    """A flat copy of :class:`FakeEngine` without ``names``, with ``replace`` (``start_seq``
    as a class attribute: its ``__init__`` is the base's)."""
    body = {k: v for k, v in vars(_FakeWithoutStartSeq).items()
            if k not in ("__dict__", "__weakref__") and k not in names}
    return type("Broken", (), {**body, "start_seq": 0, **replace})


def _qhw_of_one_query(self: object, qname: str) -> int:
    return -1


def _remove_renamed(self: object, dag: str, *, at: int | None = None) -> RemoveResult:
    raise NotImplementedError


def _wait_without_default(self: object, seq: int, timeout_s: float) -> None:
    pass


def _submit_without_at(self: object, flow: Dataflow) -> SubmitResult:
    raise NotImplementedError


def test_a_complete_engine_passes() -> None:
    for name in protocol_members(Engine):
        assert member_problems(FakeEngine, name, Engine) == [], name
    assert isinstance(FakeEngine(), Engine)


@pytest.mark.parametrize(("broken", "name", "why"), [
    (_without("malformed"), "malformed", "has no method malformed"),
    (_FakeWithoutStartSeq, "start_seq", "has no start_seq"),
    (_AnnotatedStartSeq, "start_seq", "has no start_seq"),
    (_without(qhw=_qhw_of_one_query), "qhw", "requires 'qname'"),
    (_without(remove=_remove_renamed), "remove", "is 'dag', the contract's 'dag_id'"),
    (_without(wait_processed=_wait_without_default), "wait_processed", "needs a default"),
    (_without(submit=_submit_without_at), "submit", "takes no keyword 'at'"),
    (_without(on_op=property(lambda self: None)), "on_op", "read-only property"),
    (_without(poll=None), "poll", "is not a method"),
], ids=["method-missing", "attribute-missing", "annotation-only", "extra-required-parameter",
        "parameter-renamed", "default-missing", "keyword-missing", "settable-read-only",
        "not-callable"])
def test_an_incomplete_engine_fails(broken: type, name: str, why: str) -> None:
    problems = member_problems(broken, name, Engine)
    assert problems and why in problems[0], problems
    others = [m for m in protocol_members(Engine)
              if m != name and member_problems(broken, m, Engine)]
    assert others == [], "only the broken member may fail"


def test_isinstance_agrees() -> None:
    """``runtime_checkable`` sees the same members as :func:`protocol_members`, and rejects
    the same dummies (one without a method, one without a data member)."""
    attrs = getattr(Engine, "__protocol_attrs__", None)  # Python 3.12 on
    if attrs is None:
        attrs = typing._get_protocol_attrs(Engine)  # type: ignore[attr-defined]  # 3.10, 3.11
    assert set(protocol_members(Engine)) == set(attrs)
    assert isinstance(_without()(), Engine)
    assert not isinstance(_without("malformed")(), Engine)
    assert not isinstance(_FakeWithoutStartSeq(), Engine)


# --- the contract module itself -------------------------------------------------------------------


def test_every_member_is_documented_in_its_role() -> None:
    """Each role's docstring says, per member, what each engine must do; :class:`Engine`'s
    lists them all by role."""
    for k in _protocols(SharedQueryEngine):
        for name in own_members(k):
            assert f"``{name}" in (k.__doc__ or ""), f"{k.__name__}: {name} undocumented"
    for name in protocol_members(Engine):
        assert f"``{name}``" in (Engine.__doc__ or ""), f"Engine lists no {name}"


def test_no_untyped_escape_hatch() -> None:
    tree = ast.parse(Path(contract.__file__).read_text(encoding="utf-8"))
    found = [n.lineno for n in ast.walk(tree)
             if (isinstance(n, ast.Name) and n.id == "Any")
             or (isinstance(n, ast.Attribute) and n.attr == "Any")
             or (isinstance(n, ast.alias) and n.name == "Any")]
    assert found == [], f"Any at lines {found}"


def test_importing_the_contract_starts_no_spark() -> None:
    code = ("import sys, reuse.runtime.engines.contract; "
            "assert 'pyspark' not in sys.modules, 'pyspark imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
