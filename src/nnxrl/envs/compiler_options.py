"""The XLA options every program of a run is compiled with (``jit(...,
compiler_options=...)``, per program, so that one env's needs do not slow another's).

- The env's own, on CPU (``EnvSpec.cpu_options``): Craftax keeps YNNPACK to single dot
  products, which keeps world generation's compile short and would slow CartPole.
- ``FAST_COMPILE`` for a ``fast_compile`` run: XLA's backend optimisations off, so
  compiling takes about two thirds of the time and the program runs slower (measured in
  ``docs/performance.md``): for smoke runs and debugging, not for training.
"""

from __future__ import annotations

from typing import Any

import jax

from nnxrl.envs import EnvSpec

FAST_COMPILE = {"xla_backend_optimization_level": "0"}


def compiler_options(spec: EnvSpec, fast: bool = False) -> dict[str, Any]:
    """The XLA options of a program of the env ``spec`` describes (``fast``: the
    run's ``fast_compile``)."""
    options = dict(spec.cpu_options) if jax.default_backend() == "cpu" else {}
    return {**options, **FAST_COMPILE} if fast else options
