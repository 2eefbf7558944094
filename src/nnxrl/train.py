"""The host side of a training run: build, compile, run chunks, hand metrics to the logger.

The compiled program is ``vmap`` over seeds of ``train_chunk`` (a scan over
updates). The host dispatches chunk k+1 before it waits for chunk k's metrics,
so the device is never idle while the host hands metrics to the logger.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from nnxrl import config as config_lib
from nnxrl.algos.ppo import hyperparams_from, make_ppo
from nnxrl.envs import CRAFTAX_IDS, make_env
from nnxrl.logging.console import ConsoleBackend
from nnxrl.logging.jsonl import JsonlBackend
from nnxrl.logging.logger import MetricLogger


@dataclass
class RunResult:
    out_dir: Path
    final_state: Any
    compile_seconds: float
    train_seconds: float
    env_steps_per_second: float
    final_returns: list[float | None] = field(default_factory=list)


def seed_keys(seed: int, num_seeds: int) -> jax.Array:
    """[S] independent keys: fold_in(key(seed), i) for seed i."""
    base = jax.random.key(seed)
    return jax.vmap(lambda i: jax.random.fold_in(base, i))(jnp.arange(num_seeds))


# On CPU, Craftax's world generation compiles into one very slow YNNPACK fusion;
# keeping those fusions to dot products avoids it (benchmarks/craftax_reset.py).
YNN_DOT_ONLY = {"xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_DOT"}


def compiler_options(config: config_lib.Config) -> dict[str, Any]:
    """Per-program XLA options: YNN_DOT_ONLY for Craftax on CPU (it slows CartPole)."""
    if config.env.id in CRAFTAX_IDS and jax.default_backend() == "cpu":
        return YNN_DOT_ONLY
    return {}


def seed_sharding(num_seeds: int) -> NamedSharding:
    """Split the seed axis over as many devices as divide num_seeds. On CPU, JAX sees
    one device per core when the CLI sets ``--xla_force_host_platform_device_count``,
    so seeds then run on all cores."""
    devices = jax.devices()
    n = max(d for d in range(1, len(devices) + 1) if num_seeds % d == 0)
    mesh = jax.make_mesh((n,), ("seed",), devices=devices[:n], axis_types=(AxisType.Auto,))
    return NamedSharding(mesh, P("seed"))


def compile_programs(config: config_lib.Config):
    """Build env and algorithm; return (init, train_chunk, hp) compiled for all seeds,
    with every array's leading seed axis sharded over the devices. ``init()`` gives
    the first RunState (networks are initialised on the host first)."""
    env = make_env(config.env)
    algo = make_ppo(config, env)
    hp = hyperparams_from(config)
    by_seed = seed_sharding(config.num_seeds)
    replicated = NamedSharding(by_seed.mesh, P())
    keys = seed_keys(config.seed, config.num_seeds)
    params = jax.tree.map(lambda *p: jnp.stack(p), *(algo.init_params(k) for k in keys))
    keys, params = jax.device_put((keys, params), by_seed)
    hp = jax.device_put(hp, replicated)
    options = compiler_options(config)
    init_fn = jax.jit(jax.vmap(algo.init), in_shardings=by_seed, out_shardings=by_seed)
    try:
        init_compiled = init_fn.lower(keys, params).compile(options)
    except Exception as e:  # an XLA release without the option: run without it
        print(
            f"nnxrl: XLA options {options} not accepted ({e}); Craftax resets on CPU will be slow",
            file=sys.stderr,
        )
        options = {}
        init_compiled = init_fn.lower(keys, params).compile(options)
    init = partial(init_compiled, keys, params)
    state_shape = jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=by_seed),
        jax.eval_shape(jax.vmap(algo.init), keys, params),
    )
    chunk = (
        jax.jit(
            jax.vmap(algo.train_chunk, in_axes=(0, None)),
            in_shardings=(by_seed, replicated),
            out_shardings=(by_seed, by_seed),
            donate_argnums=0,
        )
        .lower(state_shape, hp)
        .compile(options)
    )
    return init, chunk, hp


def default_out_dir(config_path: str | Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{Path(config_path).stem}-{stamp}"


def run_training(
    config: config_lib.Config, out_dir: str | Path, *, quiet: bool = False
) -> RunResult:
    """Train ``config`` writing ``out_dir/config.yaml`` and ``out_dir/metrics.jsonl``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    config_lib.dump(config, out_dir / "config.yaml")
    backends: list = [JsonlBackend(out_dir / "metrics.jsonl")]
    if not quiet:
        backends.append(ConsoleBackend(config.num_updates, config.logging.print_every))
    logger = MetricLogger(backends, config.batch_size)

    t0 = time.perf_counter()
    init, chunk, hp = compile_programs(config)
    compile_seconds = time.perf_counter() - t0

    status = "failed"
    try:
        state = init()
        jax.block_until_ready(state)
        t1 = time.perf_counter()
        per_chunk = config.updates_per_chunk
        pending = None  # (metrics, first_update) of the chunk in flight
        last_metrics = None
        for first_update in range(1, config.num_updates + 1, per_chunk):
            state, metrics = chunk(state, hp)
            if pending is not None:
                jax.block_until_ready(pending[0])
                logger.log_chunk(*pending)
            pending = (metrics, first_update)
        jax.block_until_ready(pending[0])
        logger.log_chunk(*pending)
        last_metrics = pending[0]
        train_seconds = time.perf_counter() - t1
        status = "finished"
    except KeyboardInterrupt:
        status = "killed"
        raise
    finally:
        logger.close(status)

    final_returns = [
        None if int(c) == 0 else float(r)
        for c, r in zip(
            np.asarray(last_metrics["episode_count"])[:, -1],
            np.asarray(last_metrics["episode_return"])[:, -1],
            strict=True,
        )
    ]
    steps = config.num_updates * config.batch_size * config.num_seeds
    return RunResult(
        out_dir=out_dir,
        final_state=state,
        compile_seconds=compile_seconds,
        train_seconds=train_seconds,
        env_steps_per_second=steps / max(train_seconds, 1e-9),
        final_returns=final_returns,
    )
