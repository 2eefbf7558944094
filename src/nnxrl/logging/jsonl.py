"""JSON Lines backend (always on): ``metrics.jsonl`` holds one object per update per
seed; ``metrics_aggregate.jsonl`` one per update with each metric's mean, std, min
and max across seeds. Neither holds timings, so a repeated run writes the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

from nnxrl.logging.records import LogBatch


class JsonlBackend:
    name = "jsonl"

    def __init__(self, out_dir: str | Path):
        self.records_path = Path(out_dir) / "metrics.jsonl"
        self.aggregates_path = Path(out_dir) / "metrics_aggregate.jsonl"
        self._records = self.records_path.open("a")
        self._aggregates = self.aggregates_path.open("a")

    def open(self) -> None:
        pass

    def write(self, batch: LogBatch) -> None:
        self._records.writelines(json.dumps(r) + "\n" for r in batch.records)
        self._aggregates.writelines(json.dumps(a) + "\n" for a in batch.aggregates)
        self._records.flush()
        self._aggregates.flush()

    def close(self, status: str) -> None:
        self._records.close()
        self._aggregates.close()
