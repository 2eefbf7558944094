"""Training a config: compile the programs, prepare the run directory, run the loop.

The compiled program is ``vmap`` over seeds of ``train_chunk`` (a guarded scan over
updates, ``chunk.py``); ``loop.py`` dispatches the chunks, logs and checkpoints;
``run_dir.py`` decides where a fresh or resumed run starts; ``stop.py`` turns Ctrl-C
and SIGTERM into a clean stop. Stop signals are handled from compilation to the last
record written, so a stop at any moment leaves a run that ``--resume`` continues.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from nnxrl import config as config_lib
from nnxrl.config import population, schedule
from nnxrl.errors import NonFiniteError, Stopped, StorageError
from nnxrl.logging import Backend, make_logger, members_of
from nnxrl.logging.records import records_to_arrays
from nnxrl.parallel.devices import is_main_process, start_jax
from nnxrl.parallel.mesh import host_copy
from nnxrl.progress import attended, waiting
from nnxrl.run import run_dir
from nnxrl.run.loop import Outcome, RunLoop
from nnxrl.run.programs import Programs, check_one_program, compile_programs
from nnxrl.run.run_dir import StartPoint
from nnxrl.run.stop import StopRequest, graceful_stop
from nnxrl.store import checkpoint
from nnxrl.store import lock as run_lock


def train(
    config: config_lib.Config,
    out_dir: str | Path | None = None,
    *,
    progress: bool | None = None,
    resume: bool = False,
    step: int | None = None,
    stop_after: int | None = None,
    extra_backends: tuple[Backend, ...] = (),
) -> RunResult:
    """Train ``config`` and return the result: every seed's final parameters, the
    metric history as arrays, the run directory. With ``out_dir=None`` nothing is
    written (no checkpoints, no files; the history is kept in memory); otherwise the
    run is written there as by ``nnxrl train`` (``resume`` continues it, from ``step``
    or the latest checkpoint; ``stop_after`` stops, checkpointed, after that many).
    ``progress`` shows what ``nnxrl train`` prints while it trains (compiling, then the
    progress line with its ETA); by default when stdout is a terminal or a notebook's
    cell (``progress.attended``), not when it is a file or a pipe.

    A sweep is one run of its settings x seeds (``RunResult.setting_metrics``). One
    whose settings differ in keys that change the program (``sweep.allow_recompile``)
    is several programs: ``nnxrl.train_groups`` trains those."""
    check_one_program(config)
    return run_training(
        config,
        out_dir,
        quiet=not (attended() if progress is None else progress),
        resume=resume,
        step=step,
        stop_after=stop_after,
        extra_backends=extra_backends,
    )


def prepare(config: config_lib.Config) -> config_lib.Config:
    """What a run needs before anything is written: JAX started as the config's
    ``mesh`` and ``distributed`` sections say (unless it has started), and the checks
    that need the config's parts (``config.check_parts``: env, action space, add-on)."""
    start_jax(config.mesh, config.distributed)
    return config_lib.check_parts(config)


@dataclass
class RunResult:
    """What a run gives back."""

    out_dir: Path | None
    final_state: Any  # every seed's RunState (leading seed axis)
    compile_seconds: float
    train_seconds: float
    train_end: float  # time.perf_counter() when the device finished the last chunk
    env_steps_per_second: float
    # per seed: the rolling return over its last logging.return_window finished episodes
    # at the end (None if no episode ended), and how many episodes that mean holds
    final_returns: list[float | None] = field(default_factory=list)
    final_episodes: list[int] = field(default_factory=list)
    # a sweep's (index, values) of each setting it trained, in member order; () otherwise
    settings: tuple = ()
    best_setting: int | None = None  # a sweep's best by final rolling return (exported)
    # where ``metrics`` comes from: the records a run without files kept in memory,
    # else None (its out_dir's metrics.jsonl); and whose rows they are
    records: list[dict] | None = None
    members: Any = None

    @cached_property
    def metrics(self) -> dict[str, np.ndarray]:
        """name -> [M, U] per member (seed; in a sweep setting-major, seeds inner) and
        update (NaN where undefined), and 'update', 'env_steps' [U]. A run that wrote
        files keeps none of its records in memory (an endless one would fill it): they
        are read from its metrics.jsonl here, on first use."""
        from nnxrl.logging.jsonl import read_records

        records = self.records
        if records is None and self.out_dir is not None:
            path = self.out_dir / "metrics.jsonl"
            if not path.exists():
                raise FileNotFoundError(
                    f"RunResult.metrics: {path} is gone (the run wrote its records there and "
                    "keeps none in memory)"
                )
            records = read_records(path)
        return records_to_arrays(records or [], self.members)

    @property
    def params(self) -> Any:
        """Every member's network parameters (an nnx.State, leading member axis)."""
        return self.final_state.params

    def setting_metrics(self, index: int) -> dict[str, np.ndarray]:
        """A sweep's metrics of setting ``index``: name -> [S, U] over its seeds."""
        positions = [i for i, _ in self.settings]
        if index not in positions:
            raise KeyError(f"setting {index} is not one of this run's: {positions}")
        per_setting = self.metrics["episode_count"].shape[0] // len(positions)  # seeds
        start = positions.index(index) * per_setting
        return {
            k: v if k in ("update", "env_steps") else v[start : start + per_setting]
            for k, v in self.metrics.items()
        }


def run_training(
    config: config_lib.Config,
    out_dir: str | Path | None,
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
    StorageError when metrics.jsonl or a checkpoint cannot be written. With
    ``out_dir=None`` nothing is written and checkpoints are off."""
    prepare(config)
    main = is_main_process()  # process 0 writes records and prints; all save checkpoints
    quiet = quiet or not main
    # a stop from here on (even while the run directory is read) ends with a checkpoint
    with graceful_stop() as stop:
        if out_dir is None:
            checkpoints_off = dataclasses.replace(config.checkpoint, enabled=False)
            config = dataclasses.replace(config, checkpoint=checkpoints_off)
            start = StartPoint(0, None)
            return train_from(config, None, start, stop, quiet, extra_backends, stop_after)
        out_dir = run_dir.ensure_writable_dir(out_dir, "--out")
        with run_lock.hold(out_dir) if main else nullcontext():  # one writer per directory
            start = prepare_run_dir(config, out_dir, resume, step, main)
            return train_from(config, out_dir, start, stop, quiet, extra_backends, stop_after)


def train_from(
    config: config_lib.Config,
    out_dir: Path | None,
    start: StartPoint,
    stop: StopRequest,
    quiet: bool,
    extra_backends: tuple[Backend, ...],
    stop_after: int | None,
) -> RunResult:
    """``run_training`` once the run directory is prepared (and locked): compile, run
    the loop from ``start``, export, and report how the run ended."""
    main = is_main_process()
    logger = make_logger(
        config,
        out_dir if main else None,  # other processes keep their records in memory
        extra_backends if main else (),
        console=not quiet,
        mlflow_run_id=start.mlflow_run_id,
        start_update=start.update,
    )
    status = "failed"
    try:
        ran = compile_and_run(config, out_dir, start, stop, quiet, logger, stop_after)
        status = {"finished": "finished", "stopped": "killed"}.get(ran.outcome.kind, "failed")
    except KeyboardInterrupt:  # a second Ctrl-C: stop at once
        status = "killed"
        raise
    finally:
        logger.close(status)  # a stop signal now waits until every record is written
    raise_if_cut_short(ran.outcome, stop, out_dir)
    return result_of(config, ran, start, logger, out_dir)


class Ran(NamedTuple):
    """What ``compile_and_run`` gives back."""

    outcome: Outcome
    compile_seconds: float
    train_end: float  # time.perf_counter() when the device finished the last chunk
    best: int | None  # a sweep's best setting


def compile_and_run(
    config: config_lib.Config,
    out_dir: Path | None,
    start: StartPoint,
    stop: StopRequest,
    quiet: bool,
    logger: Any,
    stop_after: int | None,
) -> Ran:
    """Compile, run the loop from ``start`` and, if it finished, export the policy
    (and attach a video of it)."""
    t0 = time.perf_counter()
    said = "compiling the programs, or loading them if this config ran before"
    with nullcontext() if quiet else waiting(said, sys.stdout):
        programs = compile_programs(config, run_init=start.update == 0)
    compile_seconds = time.perf_counter() - t0
    if not quiet:
        done = "loaded the compiled programs" if programs.loaded else "compiled"
        print(f"{done} in {compile_seconds:.1f} s; {programs.layout.describe()}", flush=True)
    state = start_state(programs, out_dir, start.update, quiet)
    loop = RunLoop(config, programs, logger, out_dir, stop, start.update, stop_after)
    outcome = loop.run(state)
    train_end = time.perf_counter()
    best = best_setting(config, final_window(outcome.last_metrics)[0])
    if outcome.kind == "finished" and out_dir is not None:
        # every process takes part in both (collectives); process 0 writes
        params = host_copy(outcome.state.params)
        # ppo.normalize_obs: the observation moments go with the policy (else ())
        obs_moments = host_copy(getattr(outcome.state.normalizer, "obs", ()))
        save_final_policy(config, out_dir, params, best, obs_moments, outcome.update)
        if is_main_process() and config.logging.log_video:
            attach_episode(config, out_dir, params, logger, quiet, best, obs_moments)
    return Ran(outcome, compile_seconds, train_end, best)


def raise_if_cut_short(outcome: Outcome, stop: StopRequest, out_dir: Path | None) -> None:
    """A run that did not finish ends by raising: NonFiniteError, StorageError or
    Stopped (every completed update checkpointed)."""
    if outcome.kind == "nonfinite":
        raise NonFiniteError(outcome.message)
    if outcome.kind == "unrecorded":
        raise StorageError(outcome.message)
    if outcome.kind == "stopped" or stop.requested:
        saved = out_dir is not None and outcome.update in checkpoint.available(out_dir)
        raise Stopped(outcome.update, out_dir, checkpointed=saved)


def result_of(
    config: config_lib.Config, ran: Ran, start: StartPoint, logger: Any, out_dir: Path | None
) -> RunResult:
    """The RunResult of a finished run."""
    outcome = ran.outcome
    final_returns, final_episodes = final_window(outcome.last_metrics)
    steps = (
        (schedule.num_updates(config) - start.update)
        * schedule.batch_size(config)
        * population.num_members(config)
    )
    return RunResult(
        out_dir=out_dir,
        final_state=outcome.state,
        compile_seconds=ran.compile_seconds,
        train_seconds=outcome.seconds,
        train_end=ran.train_end,
        env_steps_per_second=steps / max(outcome.seconds, 1e-9),
        final_returns=final_returns,
        final_episodes=final_episodes,
        settings=population.settings(config) if config.is_sweep else (),
        best_setting=ran.best,
        records=None if logger.memory is None else logger.memory.records,
        members=members_of(config),
    )


def best_setting(config: config_lib.Config, finals: list[float | None]) -> int | None:
    """A sweep's setting with the best mean final rolling return over its seeds
    (settings with a diverged or episode-less seed are passed over; the first setting
    when none qualifies); None for a run that is not a sweep."""
    if not config.is_sweep:
        return None
    n, best, best_value = config.num_seeds, population.settings(config)[0][0], -np.inf
    for position, (index, _) in enumerate(population.settings(config)):
        values = finals[position * n : (position + 1) * n]
        if len(values) == n and all(v is not None for v in values) and np.mean(values) > best_value:
            best, best_value = index, float(np.mean(values))
    return best


def final_window(last: dict) -> tuple[list[float | None], list[int]]:
    """Each member's rolling return and its episode count after the last logged update
    (empty lists when the run logged no chunk: only records were written back; None
    for a member with no finished episode or, in a sweep, one that diverged)."""
    if "episode_return_window" not in last:
        return [], []
    counts = np.asarray(last["episodes_in_window"])[:, -1].astype(int).tolist()
    values = np.asarray(last["episode_return_window"])[:, -1].tolist()
    diverged = np.asarray(last.get("nonfinite", np.zeros((len(values), 1))))[:, -1] > 0
    returns = [
        float(v) if c > 0 and not bad else None
        for v, c, bad in zip(values, counts, diverged, strict=True)
    ]
    return returns, counts


def prepare_run_dir(
    config: config_lib.Config, out_dir: Path, resume: bool, step: int | None, main: bool
) -> StartPoint:
    """Where the run starts (``run_dir.prepare``), decided by process 0, which also
    writes config.yaml; the other processes are told the update to start from."""
    start = run_dir.prepare(config, out_dir, resume, step) if main else StartPoint(0, None)
    if main:
        run_dir.write_config(config, out_dir, fresh=not resume)
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        update = multihost_utils.broadcast_one_to_all(np.int32(start.update))
        start = dataclasses.replace(start, update=int(update))
    return start


def start_state(programs: Programs, out_dir: Path, update: int, quiet: bool) -> Any:
    """The initial state (update 0) or the checkpoint of ``update``, on the devices."""
    if update == 0:
        return programs.init()
    restored, meta = checkpoint.restore(out_dir, programs.template, update)
    if not quiet:
        print(f"resumed from the checkpoint at update {update}", flush=True)
    if meta.get("left_out"):
        print(
            f"nnxrl: not an exact resume: checkpoint {update} holds no replay buffer "
            "(checkpoint.replay: false), so the buffer refills from empty and learning "
            "waits for learning_starts transitions again",
            file=sys.stderr,
            flush=True,
        )
    return restored


def attach_episode(
    config: config_lib.Config,
    out_dir: Path,
    params: Any,
    logger: Any,
    quiet: bool,
    setting: int | None = None,
    obs_moments: Any = None,
) -> None:
    """logging.log_video: one greedy episode of seed 0 (of a sweep's best ``setting``) to
    ``out_dir/episode.gif``, handed to the backends that keep files. An env without a
    renderer is said and skipped."""
    import sys

    from nnxrl.agent.policy import setting_policy
    from nnxrl.agent.render import render_episode

    path = out_dir / "episode.gif"
    policy = setting_policy(config, params, setting, obs_moments)
    try:
        info = render_episode(
            policy,
            0,
            path,
            jax.random.key(config.seed),
            greedy=True,
            fast_compile=config.fast_compile,
        )
    except ValueError as e:  # no renderer for this env
        print(f"nnxrl: logging.log_video: {e}; no video attached", file=sys.stderr, flush=True)
        return
    if not quiet:
        print(f"rendered a greedy episode of seed 0 to {path} (return {info['return']:.2f})")
    logger.attach(path)


def save_final_policy(
    config: config_lib.Config,
    out_dir: Path,
    params: Any,
    setting: int | None = None,
    obs_moments: Any = None,
    update: int = 0,
) -> None:
    """Every seed's policy (with its observation moments) after ``update`` to
    ``out_dir/policy`` (a sweep: those of ``setting``), with where it comes from."""
    from nnxrl.agent.policy import provenance, save_policy, setting_policy

    policy = setting_policy(config, params, setting, obs_moments)
    policy.source = provenance(out_dir, update)
    save_policy(out_dir / "policy", policy, run_owned=True)
