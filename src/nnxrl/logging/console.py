"""Console backend: a summary line every few chunks with the mean return across seeds."""

from __future__ import annotations

import sys
import time

import numpy as np


class ConsoleBackend:
    name = "console"

    def __init__(self, num_updates: int, print_every: int = 10, stream=None):
        self.num_updates = num_updates
        self.print_every = print_every
        self.stream = stream or sys.stdout
        self._chunks = 0
        self._start = time.perf_counter()
        self._start_steps = 0

    def write(self, records: list[dict]) -> None:
        self._chunks += 1
        last = records[-1]
        if self._chunks % self.print_every and last["update"] != self.num_updates:
            return
        latest = [r for r in records if r["update"] == last["update"]]
        returns = [r["episode_return"] for r in latest if r["episode_return"] is not None]
        mean = f"{np.mean(returns):9.2f}" if returns else "     none"
        elapsed = time.perf_counter() - self._start
        sps = last["env_steps"] / elapsed if elapsed > 0 else float("nan")
        print(
            f"update {last['update']:>6}/{self.num_updates}  env_steps {last['env_steps']:>10}"
            f"  return {mean}  loss {last['loss/total']:9.4f}  ~{sps:,.0f} steps/s",
            file=self.stream,
            flush=True,
        )

    def close(self, status: str) -> None:
        pass
