"""JSON Lines backend: one JSON object per update per seed (always on)."""

from __future__ import annotations

import json
from pathlib import Path


class JsonlBackend:
    name = "jsonl"

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._file = self.path.open("a")

    def write(self, records: list[dict]) -> None:
        for record in records:
            self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def close(self, status: str) -> None:
        self._file.close()
