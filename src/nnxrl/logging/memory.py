"""In-memory backend: keeps every record, for runs that write nothing (``nnxrl.train``
with ``out_dir=None``)."""

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
