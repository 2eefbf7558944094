"""JAX's environment variables, read before JAX is imported.

JAX parses ``JAX_NUM_CPU_DEVICES`` when it is imported and fails with a traceback on a
value that is not a count. nnxrl imports this module first: a bad value is taken out
of the environment here and kept in ``BAD_CPU_DEVICES``, so that JAX imports, and
``devices.use_cpu_devices`` (the first thing the command line and ``start_jax`` do)
reports it as a config error naming the variable.
"""

from __future__ import annotations

import os

BAD_CPU_DEVICES: str | None = None

_value = os.environ.get("JAX_NUM_CPU_DEVICES")
if _value is not None and not (_value.strip().isdigit() and int(_value) >= 1):
    BAD_CPU_DEVICES = os.environ.pop("JAX_NUM_CPU_DEVICES")
