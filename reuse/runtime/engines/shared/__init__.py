"""The shared query: shard queries run every task; a merge is a new deployment (``--merge inplace``)."""
