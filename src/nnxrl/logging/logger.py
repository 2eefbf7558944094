"""The host-side metric logger: the training loop hands over, threads write.

``log_chunk`` only enqueues the arrays a compiled chunk returned (already on the
host) with the time the chunk finished, then returns. A dispatcher thread turns
them into a LogBatch (records, aggregates, SPS) and gives it to each backend's
own worker thread, so a slow backend delays nobody: not training, not the other
backends. ``close`` drains every queue and joins every thread, so nothing handed
over is lost. A backend that raises is reported once on stderr and disabled; the
others carry on.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from nnxrl.logging.records import LogBatch, Members, aggregate, chunk_to_records, merged


class Backend(Protocol):
    """A metric sink. One may also have ``attach(path)``, to keep a file (the
    end-of-run episode GIF) with the run."""

    name: str

    def open(self) -> None:
        """Connect or create files; runs on the backend's own thread, before any write."""

    def write(self, batch: LogBatch) -> None:
        """Receive one chunk of records, in update order."""

    def close(self, status: str) -> None:
        """Flush and release; status is 'finished', 'killed' or 'failed'."""


_STOP = object()


@dataclass(frozen=True)
class Attachment:
    """A file for the backends that take one (``Backend.attach``), e.g. an episode GIF."""

    path: Path


# The largest share of its thread's time a backend spends writing while training runs.
DUTY_CYCLE = 0.1


# A tracker thread's niceness while training runs (Linux): it yields the CPU to
# training. The run's records (metrics.jsonl, which checkpoints wait for) and the
# thread that makes them keep the process's priority, and a tracker gets it back for
# the flush at the end, where the system permits, so that neither starves on a
# machine busy with other work.
TRACKER_NICENESS = 10


def set_priority(thread: threading.Thread, niceness: int | None) -> None:
    """Set ``thread``'s niceness (Linux; None: the calling thread's); elsewhere, or
    where not permitted (raising priority needs the privilege to), it runs as it is."""
    try:
        if niceness is None:
            niceness = os.getpriority(os.PRIO_PROCESS, 0)  # Linux: this thread's
        os.setpriority(os.PRIO_PROCESS, thread.native_id, niceness)
    except (AttributeError, OSError, TypeError):
        pass


def brief(error: BaseException) -> str:
    """An exception as one short line (database errors carry their whole SQL)."""
    lines = str(error).strip().splitlines() or [""]
    return f"{type(error).__name__}: {lines[0][:300]}"


class _Worker:
    """One backend fed from its own queue by its own thread."""

    def __init__(self, backend: Backend, rest: bool = True, quiet: bool = False):
        self.backend = backend
        self.quiet = quiet  # say nothing about the backlog at close
        self.rest = rest  # keep to DUTY_CYCLE while training runs (not the record)
        self.failed = False
        self.draining = threading.Event()  # set at close: write the rest at full speed
        self.priority = threading.Lock()  # the thread lowers it, close restores it
        self.queue: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._run, name=f"nnxrl-{backend.name}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self._call("open")  # at full priority: a tracker opened late gets every point late
        with self.priority:
            if self.rest and not self.draining.is_set():
                set_priority(threading.current_thread(), TRACKER_NICENESS)
        item = self.queue.get()
        while item is not _STOP:
            started = time.perf_counter()
            if isinstance(item, Attachment):
                if hasattr(self.backend, "attach"):
                    self._call("attach", item.path)
                self.queue.task_done()
                item = None
            else:  # this chunk and, for a backend that takes them whole, those queued behind
                batches, item = self._queued_batches(item)
                self._call("write", merged(batches))
                for _ in batches:
                    self.queue.task_done()
            # While training runs, stay in the background: rest so that writing takes at
            # most DUTY_CYCLE of this thread's time; what is left is written at close.
            busy = time.perf_counter() - started
            if self.rest:
                self.draining.wait(busy * (1.0 / DUTY_CYCLE - 1.0))
            item = self.queue.get() if item is None else item
        self.queue.task_done()

    def _queued_batches(self, first: LogBatch) -> tuple[list[LogBatch], Any]:
        """``first`` and the chunks queued right behind it, if the backend writes many
        chunks as one (``merges = True``: one transaction for a backlog, not one per
        chunk); and the next item that is not a chunk (None if none was taken)."""
        batches = [first]
        while getattr(self.backend, "merges", False):
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                return batches, None
            if not isinstance(item, LogBatch):
                return batches, item
            batches.append(item)
        return batches, None

    def _call(self, method: str, *args: Any) -> None:
        if self.failed:
            return
        try:
            getattr(self.backend, method)(*args)
        except Exception as e:  # a failing backend must not stop training or the others
            self.failed = True
            print(
                f"nnxrl: logging backend {self.backend.name!r} failed in {method}() and is "
                "disabled "
                f"(training and the other backends go on): {brief(e)}",
                file=sys.stderr,
                flush=True,
            )

    def close(self, status: str) -> None:
        with self.priority:  # the flush runs at the process's priority
            self.draining.set()
            if self.rest:
                set_priority(self.thread, None)
        backlog = self.queue.qsize()
        if backlog > 2 and not self.failed and not self.quiet:
            print(
                f"nnxrl: writing the last {backlog} chunks to {self.backend.name}...",
                file=sys.stderr,
                flush=True,
            )
        self.queue.put(_STOP)
        self.thread.join()
        self._call("close", status)


class MetricLogger:
    def __init__(
        self,
        backends: Sequence[Backend],
        batch_size: int,
        members: int | Members,  # the seeds, or who a sweep's members are
        quiet: bool = False,
    ):
        self.batch_size = batch_size
        self.members = members if isinstance(members, Members) else Members(members)
        # the record of truth (metrics.jsonl), whose failure stops the run
        self.record = next((b for b in backends if b.name == "jsonl"), None)
        # every record of the run, kept in memory (RunResult.metrics)
        self.memory = next((b for b in backends if b.name == "memory"), None)
        self.workers = [_Worker(b, rest=b is not self.record, quiet=quiet) for b in backends]
        self._queue: queue.Queue = queue.Queue()
        self._dispatcher = threading.Thread(target=self._dispatch, name="nnxrl-logger", daemon=True)
        self._dispatcher.start()
        self._start: float | None = None
        self._last: float | None = None
        self._closed = False

    def start_clock(self) -> None:
        """Mark the start of training (after compilation)."""
        self._start = self._last = time.perf_counter()

    def log_chunk(self, metrics: Mapping[str, Any], first_update: int) -> None:
        """Hand over one finished chunk (name -> [S, L] arrays); returns at once."""
        now = time.perf_counter()
        if self._start is None:
            self.start_clock()
        seconds = now - self._last
        self._last = now
        self._queue.put((metrics, first_update, seconds, now - self._start))

    def _dispatch(self) -> None:
        while (item := self._queue.get()) is not _STOP:
            try:
                metrics, first_update, seconds, elapsed = item
                records = chunk_to_records(metrics, first_update, self.batch_size, self.members)
                steps = len(records) * self.batch_size
                batch = LogBatch(
                    records=records,
                    aggregates=aggregate(records),
                    sps=steps / seconds if seconds > 0 else None,
                    elapsed=elapsed,
                )
                for worker in self.workers:
                    worker.queue.put(batch)
            finally:
                self._queue.task_done()
        self._queue.task_done()

    def attach(self, path: Path) -> None:
        """Hand a file to every backend that has ``attach`` (after the chunks before)."""
        self._queue.join()
        for worker in self.workers:
            worker.queue.put(Attachment(Path(path)))

    def wait_for_record(self) -> None:
        """Block until metrics.jsonl holds every chunk handed over (or has failed)."""
        self._queue.join()
        for worker in self.workers:
            if worker.backend is self.record:
                worker.queue.join()

    def record_error(self) -> OSError | None:
        """Why metrics.jsonl could not be written (after retries), or None."""
        return getattr(self.record, "error", None)

    def close(self, status: str = "finished") -> None:
        """Write everything handed over, then close each backend with ``status``."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._dispatcher.join()
        for worker in self.workers:
            worker.close(status)
