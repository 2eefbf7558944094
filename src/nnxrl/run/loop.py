"""The run loop: dispatch chunks of updates, hand their metrics to the logger,
checkpoint, and stop; it returns an ``Outcome`` instead of raising.

The host dispatches chunk k+1 before it waits for chunk k's metrics, so the device is
never idle while the host hands metrics over. The last chunk is cut to the updates
left (a resumed run may use another ``logging.updates_per_chunk``). A run ends:

- ``finished``: every update done and checkpointed;
- ``stopped``: a stop was requested (Ctrl-C, SIGTERM, ``stop_after``); every
  completed update is logged and checkpointed;
- ``nonfinite``: the guard found a NaN or inf; records stop before that update and the
  last good state is checkpointed, marked so that ``--resume`` says why it stopped
  (in a sweep only that member stops: its records say ``diverged``, the rest go on);
- ``unrecorded``: metrics.jsonl could not be written even after retries; the
  checkpoint holds the records it lacks, and ``--resume`` writes them back.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import jax
import numpy as np

from nnxrl import config as config_lib
from nnxrl.config import hp_schedule, schedule
from nnxrl.errors import StorageError
from nnxrl.logging import MetricLogger
from nnxrl.parallel.devices import any_process, is_main_process
from nnxrl.run import evaluation, run_dir
from nnxrl.run.stop import StopRequest
from nnxrl.store import checkpoint
from nnxrl.sweeps.pbt import next_step_cut

# the replay buffer's leaves in the run state (``RunState.memory.buffer``), which a
# checkpoint leaves out with ``checkpoint.replay: false``
REPLAY_BUFFER = ".memory.buffer."


@dataclass(frozen=True)
class Outcome:
    kind: Literal["finished", "stopped", "nonfinite", "unrecorded"]
    update: int  # the update the state and the records reached
    state: Any
    seconds: float  # training time, without the final checkpoint
    last_metrics: dict = field(default_factory=dict)  # the last logged chunk's metrics
    message: str = ""


class RunLoop:
    """Runs the chunks of one run from ``start_update`` (see the module docstring)."""

    def __init__(
        self,
        config: config_lib.Config,
        programs: Any,
        logger: MetricLogger,
        out_dir: Path | None,  # None: nothing is written (checkpoints must be off)
        stop: StopRequest,
        start_update: int,
        stop_after: int | None = None,
    ) -> None:
        self.config, self.programs, self.logger = config, programs, logger
        self.out_dir, self.stop, self.stop_after = out_dir, stop, stop_after
        c = config.checkpoint
        self.cadence = checkpoint.Cadence(c.every_updates, 60.0 * c.every_minutes)
        self.start_update = start_update
        # a resumed run's start is already checkpointed; update 0 needs none
        self.saved_at: int = start_update
        self.last: dict = {}
        self.failure = ""  # set by hand_over when a chunk holds a non-finite value

    def run(self, state: Any) -> Outcome:
        config, upc = self.config, schedule.updates_per_chunk(self.config)
        jax.block_until_ready(state)
        self.logger.start_clock()
        started = time.perf_counter()
        pending: deque = deque()  # (metrics, first update) dispatched, not handed over
        update = self.start_update
        (halt,) = any_process(self.stop.requested)
        while update < schedule.num_updates(config) and not halt:
            count = min(upc, schedule.num_updates(config) - update)
            if config.sweep.pbt.interval:  # a PBT step falls between chunks (sweeps/pbt.py)
                count = min(count, next_step_cut(update, config.sweep.pbt.interval))
            change = hp_schedule.updates_to_next_change(config.hp_schedule, update)
            count = min(count, change or count)  # and so does a scheduled change
            hp = self.programs.hyperparams_at(update + 1)
            state, metrics = self.programs.chunk(count)(state, hp)
            previous, update = update, update + count
            pending.append((metrics, previous + 1, self.evaluate(state, update)))
            if self.stop_after is not None and update >= self.stop_after:
                self.stop.request()
            save_now = self.config.checkpoint.enabled and self.cadence.due(previous, update)
            # keep one chunk in flight while handing over, except before a checkpoint
            good = self.hand_over(pending, keep=0 if save_now else 1)
            if good is not None:  # metrics are the same on every process: all stop here
                return self.stop_nonfinite(state, good, started)
            failed = self.logger.record_error() is not None
            # every process must run the same chunks and save the same checkpoints
            save_now, halt = any_process(save_now, failed or self.stop.requested)
            if failed:
                break
            if save_now and update < schedule.num_updates(config):
                self.save_periodic(state, update)
        good = self.hand_over(pending, keep=0)
        if good is not None:
            return self.stop_nonfinite(state, good, started)
        jax.block_until_ready(state)
        seconds = time.perf_counter() - started
        self.logger.wait_for_record()  # the last checkpoint waits for the record
        if self.logger.record_error() is not None:
            return self.stop_unrecorded(state, update, seconds)
        self.save(state, update)
        kind = "finished" if update >= schedule.num_updates(config) else "stopped"
        return Outcome(kind, update, state, seconds, self.last)

    def hand_over(self, pending: deque, keep: int) -> int | None:
        """Hand finished chunks to the logger until ``keep`` are left in flight. Returns
        the last good update if a chunk holds a non-finite value, else None."""
        while len(pending) > keep:
            metrics, first, evaluated = pending.popleft()
            metrics = self.with_scheduled_values(jax.device_get(metrics), first)
            metrics = evaluation.with_evaluation(self.config, metrics, jax.device_get(evaluated))
            if self.config.is_sweep:  # a member that met a NaN/inf is frozen, the rest
                self.logger.log_chunk(metrics, first)  # train on; its records say so
                self.last = metrics
                continue
            nonfinite = np.asarray(metrics.pop("nonfinite"))  # [S, L]
            bad = np.flatnonzero(nonfinite.any(axis=0))
            if bad.size == 0:
                self.logger.log_chunk(metrics, first)
                self.last = metrics
                continue
            j = int(bad[0])
            if j > 0:
                self.logger.log_chunk({k: v[:, :j] for k, v in metrics.items()}, first)
            seeds = np.flatnonzero(nonfinite[:, j]).tolist()
            names = sorted(
                k for k, v in metrics.items() if not np.all(np.isfinite(np.asarray(v)[seeds, j]))
            )
            self.failure = (
                f"non-finite values at update {first + j}, seed(s) {seeds}: "
                f"{', '.join(names) or 'the parameters'}"
            )
            return first + j - 1
        return None

    def evaluate(self, state: Any, update: int) -> Any:
        """The evaluation after ``update``, dispatched (not waited for), if one is due
        (``run/evaluation.py``); None otherwise."""
        evaluate = getattr(self.programs, "evaluate", None)
        if evaluate is None or not evaluation.due(self.config, update):
            return None
        return evaluate(state, update)

    def with_scheduled_values(self, metrics: dict, first: int) -> dict:
        """A scheduled run's records carry ``hp/<key>``: the value each update of the
        chunk trained with (``config/hp_schedule.py``)."""
        entries = self.config.hp_schedule
        if not entries:
            return metrics
        seeds, count = np.shape(metrics["nonfinite"])
        data = config_lib.to_dict(self.config)
        values = hp_schedule.series(entries, data, first, count)
        return {**metrics, **{k: np.broadcast_to(v, (seeds, count)) for k, v in values.items()}}

    def save(self, state: Any, update: int, **meta: Any) -> None:
        """Checkpoint ``update`` unless it is already saved (StorageError if it cannot)."""
        if not self.config.checkpoint.enabled or update == self.saved_at:
            return
        meta = {"config": config_lib.saved_dict(self.config), **meta}
        leave_out = None if self.config.checkpoint.replay else REPLAY_BUFFER
        keep = self.config.checkpoint.keep
        checkpoint.save(self.out_dir, update, state, meta, keep=keep, leave_out=leave_out)
        self.saved_at, self.cadence.last_time = update, time.perf_counter()

    def save_periodic(self, state: Any, update: int) -> None:
        """A periodic checkpoint that cannot be written is reported and training goes
        on (the next one, or the last, tries again; earlier ones are intact)."""
        try:
            self.save(state, update)
        except StorageError as e:
            print(f"nnxrl: {e}; training goes on", file=sys.stderr, flush=True)

    def stop_nonfinite(self, state: Any, good: int, started: float) -> Outcome:
        self.save(state, good)  # the guard kept every seed at its last good state
        if self.out_dir is not None and is_main_process():
            run_dir.mark_nonfinite(self.out_dir, good, self.failure)
        seconds = time.perf_counter() - started
        where = (
            f"; the last good state is checkpointed at update {good}"
            if self.config.checkpoint.enabled
            else ""
        )
        return Outcome("nonfinite", good, state, seconds, self.last, self.failure + where)

    def stop_unrecorded(self, state: Any, update: int, seconds: float) -> Outcome:
        """metrics.jsonl failed for good: keep its missing records in a checkpoint."""
        error = self.logger.record_error()
        self.logger.close("failed")  # drain: every record handed over is now accounted for
        held = self.logger.record.unrecorded()
        reason = (
            f"{self.out_dir / 'metrics.jsonl'} could not be written after retries "
            f"({error.strerror or error}); it holds updates up to {held['recorded_through']}"
        )
        resume = f"free space, then `nnxrl train --resume {self.out_dir}`"
        try:
            self.save(state, update, unrecorded=held)
        except StorageError as e:
            raise StorageError(f"{reason}. {e}") from None
        if not self.config.checkpoint.enabled:
            raise StorageError(f"{reason}; checkpoints are off, so {resume} starts over")
        message = (
            f"{reason}. Training stopped at update {update}; its checkpoint keeps the "
            f"records that could not be written. {resume} writes them back and continues"
        )
        return Outcome("unrecorded", update, state, seconds, self.last, message)
