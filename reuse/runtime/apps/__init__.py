"""k-safety across applications (issue 24): ``reuse run --k-safe K --replicas apps``.

K+1 engine instances, each its own driver and Spark application, follow one operation journal
(:mod:`reuse.runtime.control`) and publish every sink's records to de-duplicated streams, so a
driver's death (or its machine's) pauses no replicated output for longer than a trigger.

- :mod:`~reuse.runtime.apps.roles`: what each instance runs and how far it may claim (plain
  decisions).
- :mod:`~reuse.runtime.apps.instance`: one instance (a child process: its driver).
- :mod:`~reuse.runtime.apps.coordinator`: ``reuse run``'s side: start, watch, replace, account.

Nothing is imported here, so the CLI can check parameters before anything starts.
"""
