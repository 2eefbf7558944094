"""The host side of a training run: build, compile, run chunks, hand metrics to the logger.

The compiled program is ``vmap`` over seeds of ``train_chunk`` (a guarded scan
over updates, ``chunk.py``). The host dispatches chunk k+1 before it waits for
chunk k's metrics, so the device is never idle while the host hands metrics to
the logger. Checkpoints (``checkpoint.py``) are written every
``checkpoint.every_updates`` (or ``every_minutes``), at the end, when the run is stopped (Ctrl-C,
SIGTERM, ``stop_after``) and when a non-finite value stops it; ``resume=True``
continues the run in a directory from its latest checkpoint.
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

from nnxrl import checkpoint
from nnxrl import config as config_lib
from nnxrl.algos.ppo import hyperparams_from, make_ppo
from nnxrl.chunk import SEED_AXIS, train_chunk
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


@dataclass
class Programs:
    """A run's compiled programs and what placing a restored state needs."""

    init: Any  # () -> the first RunState of every seed
    chunk: Any  # (state, hp) -> (state, metrics [S, updates_per_chunk])
    hp: Any
    template: Any  # the RunState's shapes and dtypes (all seeds)
    sharding: NamedSharding  # of every RunState array: seed axis over devices
    algo: Any


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
    one_chunk = partial(train_chunk, update_fn=algo.update, num_updates=config.updates_per_chunk)
    chunk = (
        jax.jit(
            jax.vmap(one_chunk, in_axes=(0, None), axis_name=SEED_AXIS),
            in_shardings=(by_seed, replicated),
            out_shardings=(by_seed, by_seed),
            donate_argnums=0,
        )
        .lower(state_shape, hp)
        .compile(options)
    )
    return Programs(init, chunk, hp, state_shape, by_seed, algo)


def default_out_dir(config_path: str | Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{Path(config_path).stem}-{stamp}"


class NonFiniteError(RuntimeError):
    """Training produced a NaN or inf; the message names the seed, update and metric."""


class StopRequest:
    """Set by Ctrl-C / SIGTERM (or ``stop_after``): the run finishes the chunk in
    flight, logs it, checkpoints and stops. A second Ctrl-C stops at once."""

    def __init__(self) -> None:
        self.requested = False

    def handler(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print(
            "\nnnxrl: stopping after the current chunk (saving a checkpoint); "
            "press Ctrl-C again to stop at once",
            file=sys.stderr,
            flush=True,
        )


@contextmanager
def graceful_stop():
    """Route SIGINT and SIGTERM to a StopRequest while training (main thread only)."""
    stop = StopRequest()
    try:
        previous = {
            sig: signal.signal(sig, stop.handler) for sig in (signal.SIGINT, signal.SIGTERM)
        }
    except ValueError:  # not the main thread: leave signals alone
        yield stop
        return
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def prepare_run_dir(
    config: config_lib.Config, out_dir: Path, resume: bool
) -> tuple[int | None, str | None]:
    """A fresh run needs a directory without a run in it; a resumed one needs a
    checkpoint of the same config. Returns (checkpoint update to resume from or
    None, MLflow run id to continue or None); trims the JSONL files to match."""
    from nnxrl.logging.jsonl import last_complete_update, truncate_after

    if not resume:
        if (out_dir / "metrics.jsonl").exists() or checkpoint.available(out_dir):
            raise config_lib.ConfigError(
                f"--out: {out_dir} already holds a run; continue it with "
                f"`nnxrl train --resume {out_dir}` or choose another directory"
            )
        return None, None
    meta = checkpoint.load_meta(out_dir)
    differences = checkpoint.config_differences(meta["config"], config_lib.to_dict(config))
    if differences:
        raise config_lib.ConfigError(
            f"the checkpoint in {out_dir} was made with a different config; only logging.* "
            "may change on resume. Differing keys: " + "; ".join(differences)
        )
    # resume from the newest checkpoint whose updates all reached metrics.jsonl
    logged = last_complete_update(out_dir / "metrics.jsonl", config.num_seeds)
    usable = [u for u in checkpoint.available(out_dir) if u <= logged]
    if not usable:
        raise checkpoint.CheckpointError(
            f"{out_dir}: no checkpoint at or before update {logged}, the last one fully "
            f"written to metrics.jsonl (checkpoints: {checkpoint.available(out_dir)})"
        )
    update = usable[-1]
    if update >= config.num_updates:
        raise config_lib.ConfigError(
            f"--resume: the run in {out_dir} is already complete ({update} of "
            f"{config.num_updates} updates); a resumed run continues the same run, it does "
            "not extend it (total_env_steps sets the learning-rate schedule)"
        )
    truncate_after(out_dir, update)
    run_id_file = out_dir / "mlflow_run_id"
    return update, (run_id_file.read_text().strip() if run_id_file.exists() else None)


def run_training(
    config: config_lib.Config,
    out_dir: str | Path,
    *,
    quiet: bool = False,
    extra_backends: tuple[Backend, ...] = (),
    resume: bool = False,
    stop_after: int | None = None,
) -> RunResult:
    """Train ``config``, writing ``out_dir/config.yaml``, ``metrics.jsonl``, checkpoints,
    the exported policy and whatever the configured backends write. ``resume``
    continues the run in ``out_dir`` from its latest checkpoint. Ctrl-C, SIGTERM or
    ``stop_after`` updates stop it after checkpointing every completed update; the
    KeyboardInterrupt is then re-raised. A non-finite loss or parameter raises
    NonFiniteError after checkpointing the last good state."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    start_update, mlflow_run_id = prepare_run_dir(config, out_dir, resume)
    config_lib.dump(config, out_dir / "config.yaml")
    logger = make_logger(
        config, out_dir, extra_backends, console=not quiet, mlflow_run_id=mlflow_run_id
    )

    status = "failed"
    try:
        with graceful_stop() as stop:
            t0 = time.perf_counter()
            programs = compile_programs(config)
            compile_seconds = time.perf_counter() - t0
            if not quiet:
                print(f"compiled in {compile_seconds:.1f} s", flush=True)
            if start_update is None:
                state, start_update = programs.init(), 0
            else:
                restored, _ = checkpoint.restore(out_dir, programs.template, start_update)
                state = jax.device_put(restored, programs.sharding)
                if not quiet:
                    print(f"resumed from the checkpoint at update {start_update}", flush=True)
            run = ChunkRunner(config, programs, logger, out_dir, stop, stop_after)
            state, last_metrics, train_seconds = run(state, start_update)
            train_end = time.perf_counter()
            export_policy(config, out_dir, state)
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
    steps = (config.num_updates - start_update) * config.batch_size * config.num_seeds
    return RunResult(
        out_dir=out_dir,
        final_state=state,
        compile_seconds=compile_seconds,
        train_seconds=train_seconds,
        train_end=train_end,
        env_steps_per_second=steps / max(train_seconds, 1e-9),
        final_returns=final_returns,
    )


def export_policy(config: config_lib.Config, out_dir: Path, state: Any) -> None:
    from nnxrl.policy import save_policy

    save_policy(out_dir / "policy", config, state.params)


class ChunkRunner:
    """Runs the chunks of one run: dispatch, log, checkpoint, stop."""

    def __init__(self, config, programs: Programs, logger: MetricLogger, out_dir, stop, stop_after):
        self.config, self.programs, self.logger = config, programs, logger
        self.out_dir, self.stop, self.stop_after = out_dir, stop, stop_after
        c = config.checkpoint
        self.every, self.every_seconds = c.every_updates, 60.0 * c.every_minutes
        self.enabled, self.keep = c.enabled, c.keep
        self.saved_time = time.perf_counter()
        self.last: dict = {}  # the last chunk's metrics that were logged
        self.saved_at: int | None = None  # the update of the newest checkpoint written

    def due(self, update: int) -> bool:
        """A periodic checkpoint after this update? (by count, or else by time)"""
        if not self.enabled or update >= self.config.num_updates:
            return False
        if self.every is not None:
            return update % self.every == 0
        return time.perf_counter() - self.saved_time >= self.every_seconds

    def save(self, state: Any, update: int) -> None:
        if not self.enabled or update == self.saved_at:
            return
        self.saved_at, self.saved_time = update, time.perf_counter()
        meta = {"config": config_lib.to_dict(self.config)}
        checkpoint.save(self.out_dir, update, state, meta, keep=self.keep)

    def log(self, metrics: Any, first_update: int) -> int | None:
        """Hand a finished chunk to the logger; returns the last good update if the
        chunk hit a non-finite value (its records stop before it), else None."""
        metrics = jax.device_get(metrics)
        nonfinite = np.asarray(metrics.pop("nonfinite"))  # [S, L]
        bad = np.flatnonzero(nonfinite.any(axis=0))
        if bad.size == 0:
            self.logger.log_chunk(metrics, first_update)
            self.last = metrics
            return None
        j = int(bad[0])
        if j > 0:
            self.logger.log_chunk({k: v[:, :j] for k, v in metrics.items()}, first_update)
        seeds = np.flatnonzero(nonfinite[:, j]).tolist()
        names = sorted(
            k for k, v in metrics.items() if not np.all(np.isfinite(np.asarray(v)[seeds, j]))
        )
        self.failure = (
            f"non-finite values at update {first_update + j}, seed(s) {seeds}: "
            f"{', '.join(names) or 'the parameters'}"
        )
        return first_update + j - 1

    def __call__(self, state: Any, start_update: int) -> tuple[Any, dict, float]:
        """Run from ``start_update`` to the end. Returns (state, last metrics, seconds)."""
        config, upc = self.config, self.config.updates_per_chunk
        chunk, hp = self.programs.chunk, self.programs.hp
        jax.block_until_ready(state)
        self.logger.start_clock()
        t1 = time.perf_counter()
        pending: list[tuple[Any, int]] = []  # (metrics, first update) dispatched, not logged
        update = start_update

        def log_until(in_flight: int) -> int | None:
            while len(pending) > in_flight:
                metrics, first = pending.pop(0)
                good = self.log(metrics, first)
                if good is not None:
                    return good
            return None

        while update < config.num_updates and not self.stop.requested:
            state, metrics = chunk(state, hp)
            pending.append((metrics, update + 1))
            update += upc
            save_now = self.due(update)
            # keep one chunk in flight while logging, except before a checkpoint
            good = log_until(0 if save_now else 1)
            if good is not None:
                return self.stop_on_nonfinite(state, good)
            if save_now:
                self.save(state, update)
            if self.stop_after is not None and update >= self.stop_after:
                self.stop.requested = True
        good = log_until(0)
        if good is not None:
            return self.stop_on_nonfinite(state, good)
        jax.block_until_ready(state)
        seconds = time.perf_counter() - t1  # training time, without the final save
        self.save(state, update)
        if update < config.num_updates:
            raise KeyboardInterrupt
        return state, self.last, seconds

    def stop_on_nonfinite(self, state: Any, good: int):
        self.save(state, good)  # the guard kept every seed at its last good state
        where = f"; the last good state is checkpointed at update {good}" if self.enabled else ""
        raise NonFiniteError(self.failure + where)
