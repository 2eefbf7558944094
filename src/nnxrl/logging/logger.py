"""The host-side metric logger: a queue drained by a background thread.

The training loop calls ``log_chunk`` with the metrics a compiled chunk returned
and goes straight back to dispatching work; converting arrays to records and
writing every backend happens on the writer thread. ``close`` drains the queue
and joins the thread, so nothing enqueued is lost. A backend that raises is
reported once on stderr and disabled; the others carry on.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from nnxrl.logging.records import chunk_to_records


class Backend(Protocol):
    name: str

    def write(self, records: list[dict]) -> None:
        """Receive per-seed records, in update order."""

    def close(self, status: str) -> None:
        """Flush and release; status is 'finished', 'killed' or 'failed'."""


_STOP = object()


class MetricLogger:
    def __init__(self, backends: Sequence[Backend], batch_size: int):
        self.backends = list(backends)
        self.batch_size = batch_size
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._drain, name="nnxrl-logger", daemon=True)
        self._thread.start()
        self.records_written = 0

    def log_chunk(self, metrics: Mapping[str, Any], first_update: int) -> None:
        """Hand over one chunk's metrics (name -> [S, L]); returns at once."""
        self._queue.put((metrics, first_update))

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            metrics, first_update = item
            records = chunk_to_records(metrics, first_update, self.batch_size)
            for backend in list(self.backends):
                self._call(backend, "write", records)
            self.records_written += len(records)

    def _call(self, backend: Backend, method: str, *args: Any) -> None:
        try:
            getattr(backend, method)(*args)
        except Exception as e:  # a failing backend must not stop training or the others
            print(
                f"nnxrl: logging backend {backend.name!r} failed and is disabled: "
                f"{type(e).__name__}: {e}",
                file=sys.stderr,
            )
            if backend in self.backends:
                self.backends.remove(backend)

    def close(self, status: str = "finished") -> None:
        """Write everything still queued, then close each backend."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()
        for backend in list(self.backends):
            self._call(backend, "close", status)
