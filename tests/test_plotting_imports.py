"""Making a gymnax env imports no plotting library (gymnax's module-level pyplot and
seaborn imports are deferred), and the deferred modules still work when first used."""

from __future__ import annotations

import subprocess
import sys

MAKE_THEN_PLOT = """
import sys
from nnxrl.envs.gymnax_env import make_gymnax_env
env = make_gymnax_env("CartPole-v1", 2)
print("after make:", sorted(m for m in ("seaborn", "scipy.stats", "pandas", "matplotlib.pyplot")
      if m in sys.modules and type(sys.modules[m]).__name__ != "DeferredModule"))
import seaborn as sns
palette = sns.color_palette("cubehelix", 3)
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
figure, axes = plt.subplots()
axes.plot([0, 1], [1, 0])
print("palette:", len(palette), "pyplot:", type(sys.modules["matplotlib.pyplot"]).__name__,
      "seaborn:", type(sys.modules["seaborn"]).__name__, "figures:", plt.get_fignums())
"""


def test_a_gymnax_env_is_made_without_importing_plotting_libraries_which_work_later():
    done = subprocess.run(
        [sys.executable, "-c", MAKE_THEN_PLOT], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "after make: []", lines
    assert lines[1] == "palette: 3 pyplot: module seaborn: module figures: [1]", lines
