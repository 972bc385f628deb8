"""The core: the dataflow model and the paper's merge and unmerge (sections 3 and 4), in pure
Python with no Spark import.

- :mod:`~reuse.core.errors`: the one exception root (:class:`~reuse.core.errors.ReuseError`);
- :mod:`~reuse.core.dataflow`: dataflows and tasks (frozen), JSON in and out;
- :mod:`~reuse.core.equivalence`: task equivalence ``<->`` by Merkle signatures, and the
  literal definition the tests check it against;
- :mod:`~reuse.core.matching`: match policies, what counts as the same config and inputs
  (exact, or semantic with each task type's canonical form);
- :mod:`~reuse.core.plan`: plan deltas, what a submit or remove changes;
- :mod:`~reuse.core.manager`: :class:`~reuse.core.manager.Manager`, merge on submit and
  unmerge on remove;
- :mod:`~reuse.core.invariants`: what must hold after every step;
- :mod:`~reuse.core.reference`: a literal, slow implementation of sections 4.1-4.2 for tests;
- :mod:`~reuse.core.state`: the manager's durable snapshot and journal;
- :mod:`~reuse.core.traces`: submit/remove traces (section 5.1);
- :mod:`~reuse.core.planner`: a trace replayed through the manager without a runtime.
"""
