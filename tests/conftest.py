"""Shared test settings.

Tests see two CPU devices, as the CLI does on a 2-core machine, so that runs with
several seeds exercise the seed-sharded path.
"""

from __future__ import annotations

from nnxrl.cli import use_all_cpu_cores

use_all_cpu_cores()
