"""Compiling a run's programs: ``init`` (the first state of every seed) and a chunk of
updates (a guarded scan, ``chunk.py``), vmapped over seeds and with the seed axis
sharded over the devices; networks are initialised inside ``init``. The env may ask
for XLA options of its own (``EnvSpec.cpu_options``).

These two are the only programs compiled before training starts: seed keys are
derived inside ``init`` and hyperparameters are placed from NumPy, so no small eager
op compiles first, and each program is traced once. Both go through JAX's persistent
compilation cache (``compile_cache.py``), so a second run of a config starts at once."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from nnxrl import config as config_lib
from nnxrl.algos.registry import hyperparams_for, make_algorithm
from nnxrl.chunk import SEED_AXIS, train_chunk
from nnxrl.compile_cache import use_compile_cache
from nnxrl.envs import EnvSpec, make_env
from nnxrl.intrinsic import addon_for


def seed_key(seed: jax.Array, index: jax.Array) -> jax.Array:
    """The key of seed ``index`` of a run with base seed ``seed``: fold_in(key(seed), index)."""
    return jax.random.fold_in(jax.random.key(seed), index)


def compiler_options(spec: EnvSpec) -> dict[str, Any]:
    """Per-program XLA options the env asks for on this backend (EnvSpec.cpu_options:
    Craftax's, which would slow CartPole, so they are per env, not global)."""
    return dict(spec.cpu_options) if jax.default_backend() == "cpu" else {}


def seed_sharding(num_seeds: int) -> NamedSharding:
    """Split the seed axis over as many devices as divide num_seeds. On CPU, JAX sees
    one device per core when the CLI sets ``--xla_force_host_platform_device_count``,
    so seeds then run on all cores."""
    devices = jax.devices()
    n = max(d for d in range(1, len(devices) + 1) if num_seeds % d == 0)
    mesh = jax.make_mesh((n,), ("seed",), devices=devices[:n], axis_types=(AxisType.Auto,))
    return NamedSharding(mesh, P("seed"))


@dataclass
class Programs:
    """A run's compiled programs and what placing a restored state needs."""

    init: Any  # () -> the first RunState of every seed
    chunk_programs: dict[int, Any]  # updates per chunk -> (state, hp) -> (state, metrics)
    hp: Any
    template: Any  # the RunState's shapes and dtypes (all seeds)
    sharding: NamedSharding  # of every RunState array: seed axis over devices
    compile_chunk: Any  # updates -> a compiled chunk program of that many updates

    def chunk(self, num_updates: int) -> Any:
        """The program for a chunk of ``num_updates`` (compiled on first use: only a
        resumed run's last chunk may need another length)."""
        if num_updates not in self.chunk_programs:
            self.chunk_programs[num_updates] = self.compile_chunk(num_updates)
        return self.chunk_programs[num_updates]


def compile_programs(config: config_lib.Config) -> Programs:
    """Build env and algorithm; compile init and a chunk of updates for all seeds,
    with every array's leading seed axis sharded over the devices. ``init()`` gives
    the first RunState of every seed, networks included."""
    use_compile_cache(config.compile_cache)
    env = make_env(config.env)
    addon = addon_for(config, env.spec, config.algo_config.num_minibatches)
    algo = make_algorithm(config, env, addon)
    by_seed = seed_sharding(config.num_seeds)
    replicated = NamedSharding(by_seed.mesh, P())
    hp = jax.device_put(hyperparams_for(config), replicated)
    base_seed = jax.device_put(np.uint32(config.seed), replicated)
    indices = jax.device_put(np.arange(config.num_seeds, dtype=np.int32), by_seed)

    def init_seeds(base_seed: jax.Array, indices: jax.Array) -> Any:
        keys = jax.vmap(seed_key, in_axes=(None, 0))(base_seed, indices)
        return jax.vmap(algo.init)(keys)

    traced_init = jax.jit(
        init_seeds, in_shardings=(replicated, by_seed), out_shardings=by_seed
    ).trace(base_seed, indices)
    options = compiler_options(env.spec)
    try:
        init_compiled = traced_init.lower().compile(options)
    except Exception as e:  # an XLA release without the option: run without it
        print(
            f"nnxrl: XLA options {options} not accepted ({e}); Craftax resets on CPU will be slow",
            file=sys.stderr,
        )
        options = {}
        init_compiled = traced_init.lower().compile(options)
    init = partial(init_compiled, base_seed, indices)
    state_shape = jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=by_seed), traced_init.out_info
    )

    def compile_chunk(num_updates: int) -> Any:
        one_chunk = partial(train_chunk, update_fn=algo.update, num_updates=num_updates)
        return (
            jax.jit(
                jax.vmap(one_chunk, in_axes=(0, None), axis_name=SEED_AXIS),
                in_shardings=(by_seed, replicated),
                out_shardings=(by_seed, by_seed),
                donate_argnums=0,
            )
            .lower(state_shape, hp)
            .compile(options)
        )

    chunks = {config.updates_per_chunk: compile_chunk(config.updates_per_chunk)}
    return Programs(init, chunks, hp, state_shape, by_seed, compile_chunk)
