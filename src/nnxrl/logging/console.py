"""Console backend: a live progress line on a terminal, summary lines everywhere.

On a terminal the last line is redrawn after each chunk: updates done / total,
env steps, SPS, ETA and the latest mean return across seeds. When stdout is not a
terminal (CI, a log file) only the summary lines are written, every
``print_every`` chunks and at the end.
"""

from __future__ import annotations

import sys
from typing import TextIO

from nnxrl.logging.records import LogBatch


def _format_duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class ConsoleBackend:
    name = "console"

    def __init__(self, num_updates: int, print_every: int = 10, stream: TextIO | None = None):
        self.num_updates = num_updates
        self.print_every = print_every
        self.stream = stream or sys.stdout
        self.live = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._chunks = 0

    def _status(self, batch: LogBatch) -> str:
        last = batch.aggregates[-1]
        update = last["update"]
        ret = last.get("episode_return/mean")
        shown = f"{ret:9.2f}" if ret is not None else "     none"
        steps_per_update = last["env_steps"] / update
        sps = batch.sps or 0.0
        remaining = (self.num_updates - update) * steps_per_update * last["num_seeds"]
        eta = _format_duration(remaining / sps) if sps > 0 else "?"
        done = update / self.num_updates
        bar = "#" * int(20 * done) + "-" * (20 - int(20 * done))
        return (
            f"[{bar}] update {update}/{self.num_updates}  env steps {last['env_steps']:,}"
            f"  {sps:,.0f} steps/s  ETA {eta}  return {shown}"
        )

    def open(self) -> None:
        pass

    def write(self, batch: LogBatch) -> None:
        self._chunks += 1
        status = self._status(batch)
        final = batch.aggregates[-1]["update"] == self.num_updates
        if self._chunks % self.print_every == 0 or final:
            loss = batch.aggregates[-1].get("loss/total/mean", float("nan"))
            line = f"{status}  loss {loss:.4f}  ({_format_duration(batch.elapsed)} elapsed)"
            print(("\r\033[K" if self.live else "") + line, file=self.stream, flush=True)
        elif self.live:
            print("\r\033[K" + status, end="", file=self.stream, flush=True)

    def close(self, status: str) -> None:
        if status != "finished":
            said = {"killed": "training stopped"}.get(status, f"training {status}")
            print(("\n" if self.live else "") + said, file=self.stream, flush=True)
