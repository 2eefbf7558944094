"""The device mesh a run trains on: seeds and each seed's envs split over devices.

The mesh has two axes, ``seeds`` and ``envs`` (``mesh.seeds`` x ``mesh.envs``
devices, across every process of a multi-process run). Each seed shard's devices
run the one-device program on their own seeds (``per_seed_shard``: ``jax.shard_map``
over ``seeds``). Within a seed shard the program is written for the whole env batch
and only the arrays it starts from are placed: every run-state leaf with an env
axis is split over ``envs`` (each device steps its share of envs and keeps their
state), and parameters and optimiser state are the same on every device of a seed.
JAX's sharding propagation partitions that: means over the batch become
all-reduces, so the gradient of a minibatch split over devices is averaged across
them inside the program.

What is the same whatever the device count: the rollouts (envs and actions draw from
keys that do not depend on placement), advantages and targets, and, with
``mesh.invariant``, every minibatch, hence the parameters, up to the order of float
sums. What is not, by default: minibatch composition. Each device shuffles its own
share (``shuffle_groups``: the batch is cut into one group per env shard and each
minibatch takes the same number of items from every group), so the training data
never crosses devices; with one device this is the plain shuffle.

Which leaves have an env axis is found, not declared: the run state is shaped at two
env counts and the axis that follows ``env.num_envs`` is the env axis. So an env or
add-on registered by a user is split correctly without saying anything.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import jax
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from nnxrl.config import Config, ConfigError, env_split_problem, population

SEEDS, ENVS = "seeds", "envs"  # the mesh's axis names


@dataclass(frozen=True)
class Layout:
    """A run's mesh and what follows from it."""

    mesh: Mesh  # axes (seeds, envs)
    shuffle_groups: int  # minibatch shuffling groups: env shards, or 1 when invariant

    @property
    def seed_shards(self) -> int:
        return self.mesh.shape[SEEDS]

    @property
    def env_shards(self) -> int:
        return self.mesh.shape[ENVS]

    @property
    def replicated(self) -> NamedSharding:
        return NamedSharding(self.mesh, P())

    @property
    def by_seed(self) -> NamedSharding:
        return NamedSharding(self.mesh, P(SEEDS))

    def describe(self) -> str:
        devices = self.mesh.devices.size
        kind = self.mesh.devices.flat[0].platform
        processes = jax.process_count()
        across = f" in {processes} processes" if processes > 1 else ""
        invariant = self.env_shards > 1 and self.shuffle_groups == 1
        shuffle = "; minibatches from the whole batch" if invariant else ""
        return (
            f"mesh: {self.seed_shards} seed x {self.env_shards} env shards on {devices} "
            f"{kind} device(s){across}{shuffle}"
        )


def make_layout(config: Config, devices: list | None = None) -> Layout:
    """The mesh for ``config`` on ``devices`` (default: every device of every process).
    An unset ``mesh.seeds`` takes as many devices as divide the seeds, an unset
    ``mesh.envs`` (on accelerators) as many of the rest as divide the env batch; an
    impossible explicit choice is a ConfigError naming it."""
    devices = list(devices if devices is not None else jax.devices())
    check_cpu_devices(config, devices)
    seeds, envs = mesh_shape(config, len(devices), split_envs(devices[0].platform))
    used = seeds * envs
    if used < len(devices) and jax.process_count() > 1:
        raise ConfigError(
            f"mesh: {seeds} seed x {envs} env shards use {used} of the {len(devices)} devices "
            f"of the {jax.process_count()} processes; a multi-process run must use them all "
            "(choose num_seeds and env.num_envs so that they split over every device)"
        )
    mesh = jax.make_mesh(
        (seeds, envs), (SEEDS, ENVS), devices=devices[:used], axis_types=(AxisType.Auto,) * 2
    )
    return Layout(mesh, 1 if config.mesh.invariant else envs)


def shuffle_groups(config: Config) -> int:
    """Blocks of envs the minibatch shuffle keeps apart: the env shards of the mesh
    ``config`` gets on this run's devices (1 with ``mesh.invariant``)."""
    if config.mesh.invariant:
        return 1
    devices = jax.devices()
    return mesh_shape(config, len(devices), split_envs(devices[0].platform))[1]


def split_envs(platform: str) -> bool:
    """Whether an unset ``mesh.envs`` splits each seed's envs over the devices left
    after the seeds: yes on accelerators; not on CPU, whose "devices" share the same
    cores, so splitting adds only the all-reduces (PPO on CartPole, 4 envs on 2 CPU
    devices: 2.6x slower than on one, ``benchmarks/scaling.py``)."""
    return platform != "cpu"


def mesh_shape(config: Config, num_devices: int, envs_too: bool = True) -> tuple[int, int]:
    """(seed shards, env shards) for ``num_devices`` devices; an unset ``mesh.envs``
    is 1 unless ``envs_too`` (``split_envs``)."""
    m = config.mesh
    if m.seeds is not None and m.envs is not None:
        if m.seeds * m.envs > num_devices:
            raise ConfigError(
                f"mesh.seeds x mesh.envs = {m.seeds} x {m.envs} needs {m.seeds * m.envs} "
                f"devices; there are {num_devices}"
            )
        return m.seeds, m.envs
    if m.envs is not None:
        if m.envs > num_devices:
            raise ConfigError(f"mesh.envs: {m.envs} is more than the {num_devices} devices")
        free = num_devices // m.envs
        return max(d for d in range(1, free + 1) if population.num_members(config) % d == 0), m.envs
    if m.seeds is not None:
        if m.seeds > num_devices:
            raise ConfigError(f"mesh.seeds: {m.seeds} is more than the {num_devices} devices")
        seeds = m.seeds
    else:
        seeds = math.gcd(population.num_members(config), num_devices)
    return seeds, largest_env_split(config, num_devices // seeds) if envs_too else 1


def largest_env_split(config: Config, at_most: int) -> int:
    """The most devices (dividing ``at_most``) one seed's env batch splits over."""
    return max(
        d for d in range(1, at_most + 1) if at_most % d == 0 and not env_split_problem(config, d)
    )


def check_cpu_devices(config: Config, devices: list) -> None:
    """An explicit mesh.cpu_devices that JAX did not get (it had started before the
    config was loaded) is an error, not a silent change of the run."""
    want = config.mesh.cpu_devices
    if want is None or devices[0].platform != "cpu":
        return
    have = len(jax.local_devices())
    if have != want:
        raise ConfigError(
            f"mesh.cpu_devices: {want}, but JAX is running with {have} CPU device(s): it "
            "started before the run did. Train (nnxrl.train) before any other JAX work, call "
            f"nnxrl.use_cpu_devices({want}) first, or set JAX_NUM_CPU_DEVICES={want} in the "
            "environment"
        )


# --------------------------------------------------------------------------------------
# Placing the run state
# --------------------------------------------------------------------------------------


def state_shardings(layout: Layout, at_n: Any, at_2n: Any, num_envs: int) -> Any:
    """The sharding of every leaf of the run state (leading seed axis included), from
    one seed's state shapes with ``num_envs`` (``at_n``) and twice as many (``at_2n``)
    envs: the axis whose length follows the env count is split over ``envs``."""

    def spec(a: jax.ShapeDtypeStruct, b: jax.ShapeDtypeStruct) -> NamedSharding:
        axes: list[str | None] = [SEEDS] + [None] * a.ndim
        for i, (n, m) in enumerate(zip(a.shape, b.shape, strict=True)):
            if n == num_envs and m == 2 * num_envs:
                axes[i + 1] = ENVS
                break
        return NamedSharding(layout.mesh, P(*axes))

    return jax.tree.map(spec, at_n, at_2n)


def with_num_envs(config: Config, num_envs: int) -> Config:
    """``config`` with another env count (for shaping only: not validated)."""
    return dataclasses.replace(config, env=dataclasses.replace(config.env, num_envs=num_envs))


def host_copy(tree: Any) -> Any:
    """NumPy copies of ``tree``'s arrays on this process. Arrays split over several
    processes are gathered (a collective: every process must call it)."""
    from jax.experimental import multihost_utils

    def one(x: Any) -> Any:
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            return multihost_utils.process_allgather(x, tiled=True)
        return jax.device_get(x)

    return jax.tree.map(one, tree)


def per_seed_shard(fn: Any, layout: Layout, hp_axis: int | None) -> Any:
    """``fn`` of the members one device holds -> the same of every member: each seed
    shard's device runs ``fn`` on its own seeds (``jax.shard_map`` over the ``seeds``
    axis; the ``envs`` axis is still split by sharding propagation). ``fn`` takes
    (state, hp), the state split along its seed axis, hp too when ``hp_axis`` is 0,
    else whole; it returns (state, metrics), both stacked on the seed axis.

    Why not propagation alone, as for envs: with the seeds axis left to XLA's
    partitioner, a replay buffer's write (a scatter along each seed's time axis) made
    it copy the whole buffer twice per update (DQN on MinAtar Asterix, 2 seeds, a 20k
    image buffer on 2 CPU devices: 94 env steps/s, against 2,586 with this, and 1,726
    with both seeds on one device; ``benchmarks/ab.py``). Here no array
    crosses devices inside the program but the guard's one flag per update."""
    return jax.shard_map(
        fn,
        mesh=layout.mesh,
        in_specs=(P(SEEDS), P(SEEDS) if hp_axis == 0 else P()),
        out_specs=P(SEEDS),
        axis_names=frozenset({SEEDS}),
        check_vma=False,  # hp, whole on every device, enters each seed's own state
    )
