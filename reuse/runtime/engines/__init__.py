"""The two engines: a query per partial DAG (:mod:`.partial`) and the shared query (:mod:`.shared`)."""
