"""Workload loaders: real dataflow collections turned into the project's JSON dataflow format."""
