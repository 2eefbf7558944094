"""JSON Lines backend (always on): ``metrics.jsonl`` holds one object per update per
seed; ``metrics_aggregate.jsonl`` one per update with each metric's mean, std, min
and max across seeds. Neither holds timings, so a repeated run writes the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

from nnxrl.logging.records import LogBatch


def last_complete_update(path: Path, num_seeds: int) -> int:
    """The last update whose records for every seed are in ``path`` (0 if none)."""
    counts: dict[int, int] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:  # a line cut short by a killed process
                break
            counts[record["update"]] = counts.get(record["update"], 0) + 1
    last = 0
    for update in sorted(counts):
        if update != last + 1 or counts[update] < num_seeds:
            break
        last = update
    return last


def truncate_after(out_dir: str | Path, update: int) -> None:
    """Drop records after ``update`` (and any cut-short line) from both files, so a
    resumed run appends exactly where its checkpoint left off."""
    for name in ("metrics.jsonl", "metrics_aggregate.jsonl"):
        path = Path(out_dir) / name
        if not path.exists():
            continue
        kept = []
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                break
            if record["update"] > update:
                break
            kept.append(line + "\n")
        path.write_text("".join(kept))


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
