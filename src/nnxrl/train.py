"""Training a config: compile the programs, prepare the run directory, run the loop.

The compiled program is ``vmap`` over seeds of ``train_chunk`` (a guarded scan over
updates, ``chunk.py``); ``run_loop.py`` dispatches the chunks, logs and checkpoints;
``run_dir.py`` decides where a fresh or resumed run starts; ``stop.py`` turns Ctrl-C
and SIGTERM into a clean stop. Stop signals are handled from compilation to the last
record written, so a stop at any moment leaves a run that ``--resume`` continues.
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

from nnxrl import checkpoint, run_dir
from nnxrl import config as config_lib
from nnxrl.algos.ppo import hyperparams_from, make_ppo
from nnxrl.chunk import SEED_AXIS, train_chunk
from nnxrl.envs import CRAFTAX_IDS, make_env
from nnxrl.errors import NonFiniteError, StorageError
from nnxrl.intrinsic import addon_for
from nnxrl.logging import Backend, make_logger
from nnxrl.run_loop import RunLoop
from nnxrl.stop import Stopped, graceful_stop


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


def run_training(
    config: config_lib.Config,
    out_dir: str | Path,
    *,
    quiet: bool = False,
    extra_backends: tuple[Backend, ...] = (),
    resume: bool = False,
    step: int | None = None,
    stop_after: int | None = None,
) -> RunResult:
    """Train ``config``, writing ``out_dir/config.yaml``, ``metrics.jsonl``, checkpoints,
    the exported policy and whatever the configured backends write. ``resume``
    continues the run in ``out_dir`` from its latest checkpoint (or ``step``).

    Ends early by raising: ``Stopped`` (a KeyboardInterrupt) after Ctrl-C, SIGTERM or
    ``stop_after`` updates, with every completed update checkpointed; NonFiniteError
    when a loss or parameter is NaN/inf, with the last good state checkpointed;
    StorageError when metrics.jsonl or a checkpoint cannot be written."""
    out_dir = run_dir.ensure_writable_dir(out_dir, "--out")
    start = run_dir.prepare(config, out_dir, resume, step)
    config_lib.dump(config, out_dir / "config.yaml")
    with graceful_stop() as stop:
        logger = make_logger(
            config,
            out_dir,
            extra_backends,
            console=not quiet,
            mlflow_run_id=start.mlflow_run_id,
            start_update=start.update,
        )
        status = "failed"
        try:
            t0 = time.perf_counter()
            programs = compile_programs(config)
            compile_seconds = time.perf_counter() - t0
            if not quiet:
                print(f"compiled in {compile_seconds:.1f} s", flush=True)
            state = start_state(programs, out_dir, start.update, quiet)
            loop = RunLoop(config, programs, logger, out_dir, stop, start.update, stop_after)
            outcome = loop.run(state)
            train_end = time.perf_counter()
            if outcome.kind == "finished":
                export_policy(config, out_dir, outcome.state)
            status = {"finished": "finished", "stopped": "killed"}.get(outcome.kind, "failed")
        except KeyboardInterrupt:  # a second Ctrl-C: stop at once
            status = "killed"
            raise
        finally:
            logger.close(status)  # a stop signal now waits until every record is written
        if outcome.kind == "nonfinite":
            raise NonFiniteError(outcome.message)
        if outcome.kind == "unrecorded":
            raise StorageError(outcome.message)
        if outcome.kind == "stopped" or stop.requested:
            raise Stopped(outcome.update, out_dir)

    last = outcome.last_metrics  # empty when only records were written back
    final_returns = [
        None if int(c) == 0 else float(r)
        for c, r in zip(
            np.asarray(last.get("episode_count", np.zeros((0, 1))))[:, -1],
            np.asarray(last.get("episode_return", np.zeros((0, 1))))[:, -1],
            strict=True,
        )
    ]
    steps = (config.num_updates - start.update) * config.batch_size * config.num_seeds
    return RunResult(
        out_dir=out_dir,
        final_state=outcome.state,
        compile_seconds=compile_seconds,
        train_seconds=outcome.seconds,
        train_end=train_end,
        env_steps_per_second=steps / max(outcome.seconds, 1e-9),
        final_returns=final_returns,
    )


def start_state(programs: Programs, out_dir: Path, update: int, quiet: bool) -> Any:
    """The initial state (update 0) or the checkpoint of ``update``, on the devices."""
    if update == 0:
        return programs.init()
    restored, _ = checkpoint.restore(out_dir, programs.template, update)
    if not quiet:
        print(f"resumed from the checkpoint at update {update}", flush=True)
    return jax.device_put(restored, programs.sharding)


def export_policy(config: config_lib.Config, out_dir: Path, state: Any) -> None:
    from nnxrl.policy import save_policy

    save_policy(out_dir / "policy", config, state.params)
