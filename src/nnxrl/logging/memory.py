"""In-memory backend: keeps every record of the run, from which ``nnxrl.train`` gives
``RunResult.metrics`` (a resumed run's starts with the records it resumed after)."""

from __future__ import annotations

from nnxrl.logging.records import LogBatch


class MemoryBackend:
    name = "memory"

    def __init__(self, earlier: list[dict] | None = None) -> None:
        self.records: list[dict] = list(earlier or [])

    def open(self) -> None:
        pass

    def write(self, batch: LogBatch) -> None:
        self.records.extend(batch.records)

    def close(self, status: str) -> None:
        pass
