"""Starting JAX as a config asks: how many CPU devices, and which process group.

Both must be settled before JAX's backend starts (the first JAX operation), so
``start_jax`` runs first where a run is assembled (``training.prepare``; reading a
config runs no JAX). Once JAX has started it changes nothing; an explicit
``mesh.cpu_devices`` that JAX did not get is reported where the mesh is built.

- CPU devices: ``jax_num_cpu_devices`` (JAX's own option; the ``JAX_NUM_CPU_DEVICES``
  variable wins), default one per core, so a library user sees the same devices as
  the command line.
- Many processes: ``jax.distributed.initialize`` with the ``distributed`` section's
  coordinator address, process count and index, each taken from the environment
  when not set (``JAX_COORDINATOR_ADDRESS``, ``NNXRL_NUM_PROCESSES``,
  ``NNXRL_PROCESS_ID``), or detected by JAX under SLURM. CPU processes exchange
  gradients through gloo (``jax_cpu_collectives_implementation``).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

import jax

from nnxrl.config.mesh import DistributedConfig, MeshConfig
from nnxrl.schema import ConfigError


def start_jax(mesh: MeshConfig, distributed: DistributedConfig) -> None:
    """Set JAX's CPU device count and join the process group, if JAX has not started."""
    if jax_started():
        return
    use_cpu_devices(mesh.cpu_devices)
    settings = process_group(distributed)
    if settings is not None:
        if jax.config.jax_cpu_collectives_implementation in (None, "", "none"):
            jax.config.update("jax_cpu_collectives_implementation", "gloo")
        join_process_group(settings, distributed.timeout_seconds)


def join_process_group(settings: dict[str, Any], timeout: int) -> None:
    """``jax.distributed.initialize``, waiting at most ``timeout`` seconds for the
    coordinator and the other processes. JAX's own client ends the whole process
    (an abort, no Python exception) when its deadline passes, so a watchdog thread
    gives up first: it prints one line naming the address and what to check, and
    exits with status 2 (nothing has been written yet: this runs before --out is touched).
    An error JAX raises is a ConfigError with the same advice."""
    address = settings["coordinator_address"] or "(none given, and none detected)"
    advice = (
        f"could not join the process group at coordinator {address} within {timeout} s. "
        "Check that process 0 runs and listens at that host:port, that every one of the "
        f"{settings['num_processes'] or '?'} processes was started with its own process_id, "
        "and that the address is reachable from here; or set distributed.timeout_seconds, "
        "distributed.coordinator_address (or JAX_COORDINATOR_ADDRESS), or "
        "distributed.enabled: false for one process"
    )
    watchdog = threading.Timer(
        timeout, give_up, args=(f"nnxrl: config error: distributed: {advice}",)
    )
    watchdog.daemon = True
    watchdog.start()
    try:
        jax.distributed.initialize(**settings, initialization_timeout=timeout + 60)
    except Exception as e:  # JAX raises RuntimeError/ValueError with XLA's status text
        detail = " ".join(str(e).split())[:300]
        raise ConfigError(f"distributed: {advice} ({type(e).__name__}: {detail})") from None
    finally:
        watchdog.cancel()


def give_up(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
    os._exit(2)


def jax_started() -> bool:
    """True once JAX's backends exist (device counts and the process group are fixed)."""
    from jax._src import xla_bridge  # JAX exposes no public test for this

    return xla_bridge.backends_are_initialized() or jax.distributed.is_initialized()


def use_cpu_devices(count: int | None = None) -> None:
    """Let JAX see ``count`` CPU devices (None: one per core), unless JAX has started
    or ``JAX_NUM_CPU_DEVICES`` / an earlier ``jax_num_cpu_devices`` setting says otherwise."""
    from nnxrl.parallel.jax_variables import BAD_CPU_DEVICES

    if BAD_CPU_DEVICES is not None:
        raise ConfigError(
            f"JAX_NUM_CPU_DEVICES={BAD_CPU_DEVICES!r}: expected a count of CPU devices >= 1; "
            "fix it or unset it (unset JAX_NUM_CPU_DEVICES: one device per core)"
        )
    if jax_started() or "JAX_NUM_CPU_DEVICES" in os.environ:
        return
    if count is None and jax.config.jax_num_cpu_devices > 0:
        return  # set by the caller before
    jax.config.update("jax_num_cpu_devices", count or os.cpu_count() or 1)


def process_group(distributed: DistributedConfig) -> dict[str, Any] | None:
    """``jax.distributed.initialize``'s arguments, or None for a single-process run."""
    address = distributed.coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS")
    count = distributed.num_processes or _int_env("NNXRL_NUM_PROCESSES", low=1)
    index = distributed.process_id
    if index is None:
        index = _int_env("NNXRL_PROCESS_ID")
    enabled = distributed.enabled
    if enabled is None:
        enabled = address is not None or _int_env("SLURM_NTASKS", 1) > 1
        if enabled and address is None and "SLURM_JOB_ID" not in os.environ:
            tasks = os.environ["SLURM_NTASKS"]
            raise ConfigError(
                f"distributed: SLURM_NTASKS={tasks} asks for {tasks} processes, but this is "
                "no SLURM job (no SLURM_JOB_ID) and no coordinator address is set; launch "
                "with srun, set distributed.coordinator_address (or JAX_COORDINATOR_ADDRESS) "
                "to process 0's host:port, or distributed.enabled: false for one process"
            )
    if not enabled:
        return None
    return {"coordinator_address": address, "num_processes": count, "process_id": index}


def _int_env(name: str, default: int | None = None, low: int = 0) -> int | None:
    """The integer in environment variable ``name`` (``default`` when unset or empty);
    a ConfigError naming the variable for anything else."""
    value = os.environ.get(name)
    if value in (None, ""):
        return default
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or number < low:
        raise ConfigError(
            f"{name}={value!r}: expected an integer >= {low}; fix it or unset it (unset {name})"
        )
    return number


def is_main_process() -> bool:
    """Process 0 writes the run's records, console output and trackers."""
    return jax.process_index() == 0


def any_process(*flags: bool) -> tuple[bool, ...]:
    """Each flag, true if it is true on any process (the flags themselves when there is
    one process), so that every process takes the same branch: the run loop agrees
    this way on when to stop and when to checkpoint."""
    if jax.process_count() == 1:
        return tuple(bool(f) for f in flags)
    import numpy as np
    from jax.experimental import multihost_utils

    votes = multihost_utils.process_allgather(np.array(flags, np.int32))
    return tuple(bool(v) for v in np.asarray(votes).reshape(-1, len(flags)).any(axis=0))
