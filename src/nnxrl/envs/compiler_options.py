"""The XLA options every program of a run is compiled with (``jit(...,
compiler_options=...)``, per program, so that one env's needs do not slow another's).

- The env's own, on CPU (``EnvSpec.cpu_options``): Craftax keeps YNNPACK to single dot
  products, which keeps world generation's compile short and would slow CartPole.
- ``FAST_COMPILE`` for a ``fast_compile`` run: XLA's backend optimisations off, and
  its CPU fusion emitters too (fused loops emitted by the older element-wise emitter,
  which compiles sooner: a tiny run's programs in about half the time of the default's),
  so the program runs slower than a default run's: for smoke runs, tests and debugging,
  not for training (measured in ``docs/performance.md``).
- init, the program that makes a run's first state, with the fast options on CPU
  whatever ``fast_compile`` says: it runs once, so its compile is what it costs on the
  way to the first update.
"""

from __future__ import annotations

from typing import Any

import jax

from nnxrl.envs import EnvSpec

FAST_COMPILE = {"xla_backend_optimization_level": "0"}
# a bool, not "false": that string did not turn the emitters off (the compile got longer)
FAST_COMPILE_CPU = {**FAST_COMPILE, "xla_cpu_use_fusion_emitters": False}


def compiler_options(spec: EnvSpec, fast: bool = False) -> dict[str, Any]:
    """The XLA options of a program of the env ``spec`` describes (``fast``: the
    run's ``fast_compile``)."""
    on_cpu = jax.default_backend() == "cpu"
    options = dict(spec.cpu_options) if on_cpu else {}
    if fast:
        options |= FAST_COMPILE_CPU if on_cpu else FAST_COMPILE
    return options


def init_compiler_options(spec: EnvSpec, fast: bool = False) -> dict[str, Any]:
    """The XLA options of init: on CPU the fast ones (``FAST_COMPILE_CPU``) over the
    env's, whatever ``fast``; elsewhere those of the run's other programs (not measured
    there). PPO on CartPole, 8 seeds: init compiled in 1.1 s against 3.0 s and ran in
    0.06 s either way; Craftax-Classic, 64 envs: 2.1 s and a 1.4 s run against 7.0 s
    and 0.5 s (``docs/performance.md``, "init compiled for a short compile, and run beside
    the chunk's")."""
    return compiler_options(spec, fast or jax.default_backend() == "cpu")
