"""Console backend: a live progress line on a terminal, summary lines everywhere.

On a terminal the last line is redrawn after each chunk; when stdout is not a
terminal (CI, a log file) only the summary lines are written, every
``print_every`` chunks and at the end. A line reads::

    [########------------] update 40/100  env steps 81,920 per seed
      52,311 steps/s all seeds  ETA 0:00:12  return 187.30 (last 100 ep., mean over 4 seeds)

``env steps`` counts one seed's steps; ``steps/s`` all seeds' steps over the last
``SPS_SECONDS`` of training (a chunk-by-chunk figure jumps with the hand-over
timing); ``return`` is the mean over seeds of each seed's rolling return over its
last ``logging.return_window`` finished episodes (``episode_return_window``). In a
sweep it is the best setting's, named with its values, and the median setting's.
"""

from __future__ import annotations

import statistics
import sys
from collections import deque
from typing import TextIO

from nnxrl.logging.records import LogBatch
from nnxrl.schema import describe_values

SPS_SECONDS = 10.0  # steps/s is measured over this trailing window of training time


def _format_duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class ConsoleBackend:
    name = "console"

    def __init__(
        self,
        num_updates: int,
        print_every: int = 10,
        stream: TextIO | None = None,
        return_window: int = 100,
        resume_command: str | None = None,
        num_settings: int = 1,
    ):
        self.num_updates = num_updates
        self.print_every = print_every
        self.stream = stream or sys.stdout
        self.live = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.return_window = return_window
        self.resume_command = resume_command  # shown when the run stops early
        self.num_settings = num_settings  # a sweep's, trained together
        self._chunks = 0
        self._progress: deque[tuple[float, int]] = deque()  # (elapsed s, all seeds' steps)

    def open(self) -> None:
        pass

    def write(self, batch: LogBatch) -> None:
        self._chunks += 1
        status = self._status(batch)
        final = batch.aggregates[-1]["update"] == self.num_updates
        loss = batch.aggregates[-1].get("loss/total/mean", float("nan"))
        line = f"{status}  loss {loss:.4f}  ({_format_duration(batch.elapsed)} elapsed)"
        if self._chunks % self.print_every == 0 or final:
            print(("\r\033[K" if self.live else "") + line, file=self.stream, flush=True)
        elif self.live:  # the line redrawn in place, loss and time included
            print("\r\033[K" + line, end="", file=self.stream, flush=True)

    def _status(self, batch: LogBatch) -> str:
        last = batch.aggregates[-1]
        update, seeds = last["update"], last["num_seeds"]
        members = seeds * self.num_settings
        steps_per_update = last["env_steps"] // update
        sps = self._trailing_sps(batch, steps_per_update * members)
        remaining = (self.num_updates - update) * steps_per_update * members
        eta = _format_duration(remaining / sps) if sps > 0 else "?"
        done = update / self.num_updates
        bar = "#" * int(20 * done) + "-" * (20 - int(20 * done))
        return (
            f"[{bar}] update {update}/{self.num_updates}  env steps {last['env_steps']:,} per "
            f"seed  {sps:,.0f} steps/s all seeds  ETA {eta}  {self._return(batch, seeds)}"
        )

    def _trailing_sps(self, batch: LogBatch, steps_per_update: int) -> float:
        """All seeds' env steps per second over the last SPS_SECONDS of training."""
        if not self._progress:  # the clock starts just before the first chunk
            first = batch.aggregates[0]["update"] - 1
            self._progress.append((0.0, first * steps_per_update))
        steps = batch.aggregates[-1]["update"] * steps_per_update
        self._progress.append((batch.elapsed, steps))
        while len(self._progress) > 2 and batch.elapsed - self._progress[1][0] >= SPS_SECONDS:
            self._progress.popleft()
        (t0, s0), (t1, s1) = self._progress[0], self._progress[-1]
        return (s1 - s0) / (t1 - t0) if t1 > t0 else 0.0

    def _return(self, batch: LogBatch, seeds: int) -> str:
        if self.num_settings > 1:
            return self._sweep_return(batch)
        last = batch.aggregates[-1]
        value = last.get("episode_return_window/mean")
        if value is None:
            return "return: no episode has ended yet"
        have = sum(
            r.get("episode_return_window") is not None
            for r in batch.records
            if r["update"] == last["update"]
        )
        over = f"{seeds} seeds" if have == seeds else f"{have} of {seeds} seeds"
        if seeds == 1:
            over = "1 seed"
        return f"return {value:.2f} (last {self.return_window} ep., mean over {over})"

    def _sweep_return(self, batch: LogBatch) -> str:
        """The best and the median setting's mean rolling return at the last update."""
        update = batch.aggregates[-1]["update"]
        rows = [a for a in batch.aggregates if a["update"] == update]
        scored = [a for a in rows if a.get("episode_return_window/mean") is not None]
        diverged = sum(a.get("diverged/mean") is not None for a in rows)
        note = f", {diverged} diverged" if diverged else ""
        if not scored:
            return f"return: no episode has ended yet ({len(rows)} settings{note})"
        scored.sort(key=lambda a: a["episode_return_window/mean"])
        best = scored[-1]
        median = statistics.median(a["episode_return_window/mean"] for a in scored)
        return (
            f"best return {best['episode_return_window/mean']:.2f} (setting "
            f"{best['setting']}: {describe_values(best['hparams'])}), median "
            f"{median:.2f} over {len(scored)} settings with a return{note}"
        )

    def close(self, status: str) -> None:
        if status == "finished":
            return
        said = {"killed": "training stopped"}.get(status, f"training {status}")
        if status == "killed" and self.resume_command:
            said += f"; continue with `{self.resume_command}`"
        print(("\n" if self.live else "") + said, file=self.stream, flush=True)
