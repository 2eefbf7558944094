"""Analysis of finished runs, beside the training layers and importing none of them:
reading runs' records (``runs.py``), learning curves (``plots.py``), the scores a
comparison ranks (``scores.py``), rliable's interval estimates (``interval_estimates.py``:
the one IQM and the one bootstrap), and ``nnxrl compare`` (``comparison.py``, its
figures in ``comparison_figures.py``)."""
