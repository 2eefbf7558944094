"""In-memory backend: keeps every record of a run that writes no files, from which
``nnxrl.train`` gives ``RunResult.metrics`` (a run with files reads them back from its
metrics.jsonl instead, keeping none in memory)."""

from __future__ import annotations

from nnxrl.logging.records import LogBatch


class MemoryBackend:
    name = "memory"

    def __init__(self) -> None:
        self.records: list[dict] = []

    def open(self) -> None:
        pass

    def write(self, batch: LogBatch) -> None:
        self.records.extend(batch.records)

    def close(self, status: str) -> None:
        pass
