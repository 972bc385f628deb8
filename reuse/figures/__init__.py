"""Figures: the analyses drawn with matplotlib (the notebooks and ``experiments/`` call these).

- :mod:`~reuse.figures.traces`: planner-level Figures 2 and 4, and live runs' cores (Figure 3);
- :mod:`~reuse.figures.live`: the live runs' summary table, printed only as far as they decide;
- :mod:`~reuse.figures.seeds`: Figure 2 over many walk seeds, Figure 4 both ways;
- :mod:`~reuse.figures.billing`, :mod:`~reuse.figures.blast`: bills and blast radius;
- :mod:`~reuse.figures.placement`: the placement evaluation's Figures 5-10, saved with its report;
- :mod:`~reuse.figures.batch`: every notebook of a parameter set run through papermill.
"""
