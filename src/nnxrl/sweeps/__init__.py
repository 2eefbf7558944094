"""Sweeps, the pure parts: the space of settings a sweep section describes, and PBT's
step on the stacked population (the run trains them: ``run/``; reports: ``analysis/``)."""
