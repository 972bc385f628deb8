"""The paper's enactment: a streaming query per partial DAG (``--merge partial``, ``relaunch``)."""
