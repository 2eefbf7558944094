"""The mesh and distributed sections of a config (data only: reading them starts
no JAX)."""

from __future__ import annotations

from dataclasses import dataclass

from nnxrl.schema import setting as _field


@dataclass(frozen=True)
class MeshConfig:
    seeds: int | None = _field(
        None,
        "Devices the seed axis (in a sweep the population, settings x seeds) is split "
        "over (None: as many as divide both its size and the device count). Seeds need no "
        "communication, so they are split first.",
        low=1,
    )
    envs: int | None = _field(
        None,
        "Devices each seed's env batch is split over (None: on GPUs and TPUs the devices "
        "left after mesh.seeds, as many as divide env.num_envs and keep the minibatch "
        "split whole; on CPU 1, as its devices share the same cores). Each device steps "
        "its share of envs; gradients are averaged across them.",
        low=1,
    )
    invariant: bool = _field(
        False,
        "Draw every minibatch from the whole batch, as on one device, so that a run's "
        "numbers do not depend on mesh.envs (up to float summation order); costs a "
        "gather across devices per epoch. False: each device shuffles its own share.",
    )
    cpu_devices: int | None = _field(
        None,
        "JAX CPU devices (None: one per CPU core). Applied when the config is loaded, "
        "if JAX has not started yet; the JAX_NUM_CPU_DEVICES variable wins.",
        low=1,
        high=1024,
    )


@dataclass(frozen=True)
class DistributedConfig:
    enabled: bool | None = _field(
        None,
        "Join a multi-process run with jax.distributed (None: when a coordinator "
        "address is set here or in JAX_COORDINATOR_ADDRESS, or under SLURM with more "
        "than one task). Not saved in the run's config.yaml.",
    )
    coordinator_address: str | None = _field(
        None, "host:port of process 0 (None: JAX_COORDINATOR_ADDRESS or cluster detection)."
    )
    num_processes: int | None = _field(
        None, "Processes in the run (None: NNXRL_NUM_PROCESSES or cluster detection).", low=1
    )
    process_id: int | None = _field(
        None, "This process's index (None: NNXRL_PROCESS_ID or cluster detection).", low=0
    )
    timeout_seconds: int = _field(
        120,
        "How long a process waits for the coordinator and the other processes to join "
        "before it gives up with a message naming the address.",
        low=1,
    )
