"""Shared test settings.

Tests see two CPU devices, as the CLI does on a 2-core machine, so that runs with
several seeds exercise the seed-sharded path.
"""

from __future__ import annotations

from nnxrl.devices import use_cpu_devices

use_cpu_devices()
