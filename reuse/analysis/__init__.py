"""What the planner's replays say, beyond the running-task counts (no Spark, no plotting).

- :mod:`~reuse.analysis.billing`: each dataflow's bill for shared tasks (Shapley rule), and
  :mod:`~reuse.analysis.billing_live` the same from a live run's measured CPU;
- :mod:`~reuse.analysis.blast`: how many dataflows one executor failure cuts off, with and
  without k-safety;
- :mod:`~reuse.analysis.figure4`: Figure 4 in the paper's reading and ours;
- :mod:`~reuse.analysis.walks`: random walks over many seeds, and the median walk;
- :mod:`~reuse.analysis.paper`: the paper's reported numbers, to compare with ours.
"""
