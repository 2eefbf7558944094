"""The host side of a training run: build, compile, run chunks, hand metrics to the logger.

The compiled program is ``vmap`` over seeds of ``train_chunk`` (a scan over
updates). The host dispatches chunk k+1 before it waits for chunk k's metrics,
so the device is never idle while the host hands metrics to the logger.
"""

from __future__ import annotations

import signal
import sys
import time
from contextlib import contextmanager
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
from nnxrl.intrinsic import addon_for
from nnxrl.logging import Backend, MetricLogger, make_logger


@dataclass
class RunResult:
    out_dir: Path
    final_state: Any
    compile_seconds: float
    train_seconds: float
    train_end: float  # time.perf_counter() when the device finished the last chunk
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
    algo = make_ppo(config, env, addon_for(config, env.spec))
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


@contextmanager
def sigterm_as_interrupt():
    """Treat SIGTERM like Ctrl-C while training, so both stop the run the same way."""

    def handler(signum, frame):
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_training(
    config: config_lib.Config,
    out_dir: str | Path,
    *,
    quiet: bool = False,
    extra_backends: tuple[Backend, ...] = (),
) -> RunResult:
    """Train ``config``, writing ``out_dir/config.yaml``, ``metrics.jsonl`` and whatever
    the configured backends write. Ctrl-C or SIGTERM stop it after writing every
    completed update; the KeyboardInterrupt is then re-raised."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    config_lib.dump(config, out_dir / "config.yaml")
    logger = make_logger(config, out_dir, extra_backends, console=not quiet)

    status = "failed"
    try:
        with sigterm_as_interrupt():
            t0 = time.perf_counter()
            init, chunk, hp = compile_programs(config)
            compile_seconds = time.perf_counter() - t0
            if not quiet:
                print(f"compiled in {compile_seconds:.1f} s", flush=True)
            state, last_metrics, train_seconds = run_chunks(config, init, chunk, hp, logger)
            train_end = time.perf_counter()
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
        train_end=train_end,
        env_steps_per_second=steps / max(train_seconds, 1e-9),
        final_returns=final_returns,
    )


def run_chunks(config: config_lib.Config, init, chunk, hp, logger: MetricLogger):
    """Dispatch chunk k+1 before handing chunk k's metrics to the logger, so the device
    never waits on the host. Returns (final state, last metrics, training seconds)."""
    state = init()
    jax.block_until_ready(state)
    logger.start_clock()
    t1 = time.perf_counter()
    pending = None  # (metrics, first_update) of the chunk in flight
    try:
        for first_update in range(1, config.num_updates + 1, config.updates_per_chunk):
            state, metrics = chunk(state, hp)
            if pending is not None:
                logger.log_chunk(jax.device_get(pending[0]), pending[1])
            pending = (metrics, first_update)
        logger.log_chunk(jax.device_get(pending[0]), pending[1])
    except KeyboardInterrupt:
        # keep the chunk in flight if it had already finished
        if pending is not None and all(x.is_ready() for x in jax.tree.leaves(pending[0])):
            logger.log_chunk(jax.device_get(pending[0]), pending[1])
        raise
    return state, pending[0], time.perf_counter() - t1
