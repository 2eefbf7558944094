"""JSON Lines backend, the record of truth (always on): ``metrics.jsonl`` holds one
object per update per seed; ``metrics_aggregate.jsonl`` one per update with each
metric's mean, std, min and max across seeds. Neither holds timings, so a repeated
(or resumed) run writes the same bytes; the wall-clock times go beside them, in
``timing.jsonl``: one object per chunk with its last ``update``, ``env_steps``,
``time`` (Unix seconds when its records were written), ``elapsed`` (seconds of
training of this start, compilation excluded) and ``sps``. A resumed run appends
its own (its updates follow the checkpoint it resumed from). Timings are not the
record: one that cannot be written is left out.

A failed write (disk full, I/O error) is undone (the file is cut back to its last
whole line) and retried with back-off for up to ``retry_seconds``. If it still
fails, the backend keeps every record it could not write in ``unwritten`` and sets
``error``; the run loop then stops the run and stores those records in its last
checkpoint, from which ``--resume`` writes them back.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from nnxrl.hints import command
from nnxrl.logging.records import LogBatch, Members

RECORD_FILES = ("metrics.jsonl", "metrics_aggregate.jsonl")
TIMING_FILE = "timing.jsonl"


def read_records(path: Path, *, live: bool = False) -> list[dict]:
    """The records of a JSONL file; a line that is not a JSON record with an integer
    ``update`` is a ValueError naming the file and line (a run cut short mid-line is
    trimmed by --resume, not here). ``live``: a run still writes the file, so a last
    line not yet ended by a newline is one being written, left out."""
    return list(iter_records(path, live=live))


def iter_records(path: Path, *, live: bool = False) -> Iterator[dict]:
    """``read_records`` a line at a time: what a long run's files need."""
    if not path.exists():
        return
    with path.open("rb") as lines:
        for number, line in enumerate(lines, 1):
            if live and not line.endswith(b"\n"):
                return  # the line being written
            yield parse_record(path, number, line.decode(errors="replace"))


def parse_record(path: Path, number: int, line: str) -> dict:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        raise ValueError(
            f"{path}, line {number}: not a complete JSON record (was the run killed "
            f"while writing it? `{command('train --resume')}` trims such a line)"
        ) from None
    if not isinstance(record, dict) or not isinstance(record.get("update"), int):
        raise ValueError(
            f"{path}, line {number}: not an nnxrl record (a JSON object with an integer "
            f"'update'); got {line[:80]!r}"
        )
    return record


def batches_through(out_dir: str | Path, update: int, most: int = 1_000) -> Iterator[LogBatch]:
    """The records of updates 1..``update`` in both files, as LogBatches of whole
    updates (about ``most`` lines each): what a tracker sends of a resumed run's
    earlier updates, read a line at a time, never the whole files at once."""
    records, aggregates = (iter_records(Path(out_dir) / name) for name in RECORD_FILES)
    earlier = partial(LogBatch, sps=None, elapsed=0.0)  # no rate: sent, not trained
    batch, pending = earlier(records=[], aggregates=[]), None
    for aggregate in itertools.takewhile(lambda a: a["update"] <= update, aggregates):
        batch.aggregates.append(aggregate)
        for record in itertools.chain([pending] if pending else [], records):
            pending = record if record["update"] > aggregate["update"] else None
            if pending:
                break
            batch.records.append(record)
        if len(batch.records) + len(batch.aggregates) >= most:
            yield batch
            batch = earlier(records=[], aggregates=[])
    if batch.aggregates:
        yield batch


@dataclass(frozen=True)
class RecordOrder:
    """How far a metrics.jsonl is in order: ``last`` is the last update whose records
    of every member are there, update-major, members in order (0 if none). ``problem``
    says what the first line out of that order is (a duplicate, a record out of order,
    a line that is not JSON with more after it) at ``line`` (1-based); None when the
    file simply ends, whole or cut short mid-line by a kill."""

    last: int
    problem: str | None = None
    line: int | None = None


def records_in_order(path: Path, members: Members) -> RecordOrder:
    """Check ``path`` against the order the logger writes (see ``RecordOrder``), a
    line at a time: an endless run's records can outgrow memory."""
    if not path.exists():
        return RecordOrder(0)
    number = 0
    with path.open("rb") as lines:
        for number, line in enumerate(lines, 1):
            update, row = divmod(number - 1, members.count)
            complete = update  # updates 1..update are whole before this line
            try:
                record = json.loads(line.decode(errors="replace"))
                got = (record["update"], members.row(record))
            except json.JSONDecodeError:
                if not lines.readline():  # the last line, cut short by a killed process
                    return RecordOrder(complete)
                return RecordOrder(complete, "not a complete JSON record", number)
            except (KeyError, TypeError, ValueError):
                return RecordOrder(complete, "not a record of this run (no update or seed)", number)
            if got != (update + 1, row):
                who = f"update {got[0]}, member {got[1]}"
                problem = f"{who} where update {update + 1}, member {row} belongs"
                if got[0] <= update:
                    problem = f"{who} again (a duplicate or a record out of order)"
                return RecordOrder(complete, problem, number)
    return RecordOrder(number // members.count)


def truncate_after(out_dir: str | Path, update: int, num_members: int) -> None:
    """Keep the records of updates 1..``update`` in both files (``num_members`` lines
    an update in metrics.jsonl, one in the aggregates; the lines before are in order,
    ``records_in_order``) and drop the rest: later updates, a cut-short line, a
    duplicate. A resumed run then appends exactly where its checkpoint left off. The
    files are cut in place, read a line at a time: a long run's records need neither
    memory nor free disk to be trimmed. StorageError if a file cannot be cut."""
    from nnxrl.store import own_files

    for name, per_update in zip(RECORD_FILES, (num_members, 1), strict=True):
        path = Path(out_dir) / name
        if path.exists():
            size, unended = kept_size(path, update * per_update, update)
            own_files.cut(path, size, b"\n" if unended else b"")


def kept_size(path: Path, most_lines: int, update: int) -> tuple[int, bool]:
    """The bytes of ``path``'s first lines (at most ``most_lines``) that are whole
    records of updates <= ``update``, and whether the last of them lacks its newline
    (the kill came between a record and its newline)."""
    size, unended = 0, False
    with path.open("rb") as lines:
        for line in itertools.islice(lines, most_lines):
            try:
                if json.loads(line.decode(errors="replace"))["update"] > update:
                    break
            except (json.JSONDecodeError, KeyError, TypeError):
                break
            size, unended = size + len(line), not line.endswith(b"\n")
    return size, unended


class JsonlBackend:
    name = "jsonl"
    retry_seconds = 30.0  # how long a failed write is retried before the run is stopped

    def __init__(self, out_dir: str | Path, start_update: int = 0):
        self.paths = {name: Path(out_dir) / name for name in (*RECORD_FILES, TIMING_FILE)}
        self.files: dict[str, int] = {}  # name -> file descriptor
        self.error: OSError | None = None  # set when a write failed for good
        self.unwritten: list[LogBatch] = []  # batches not (fully) written since then
        self.recorded_through = start_update  # the last update both files hold

    def open(self) -> None:
        pass  # files are opened at the first write: a failed start leaves none

    def write(self, batch: LogBatch) -> None:
        if self.error is None:
            try:
                self._append("metrics.jsonl", [json.dumps(r) for r in batch.records])
                self._append("metrics_aggregate.jsonl", [json.dumps(a) for a in batch.aggregates])
                self.recorded_through = batch.aggregates[-1]["update"]
                self._write_timing(batch)
                return
            except OSError as e:
                self.error = e
                print(
                    f"nnxrl: {self.paths['metrics.jsonl'].parent}: the metrics files could "
                    f"not be written for {self.retry_seconds:.0f} s ({e.strerror or e}); "
                    "stopping the run",
                    file=sys.stderr,
                    flush=True,
                )
        self.unwritten.append(batch)

    def _write_timing(self, batch: LogBatch) -> None:
        last = batch.aggregates[-1]
        line = {"update": last["update"], "env_steps": last["env_steps"], "time": time.time()}
        line |= {"elapsed": batch.elapsed, "sps": batch.sps}
        try:
            self._append_once(TIMING_FILE, (json.dumps(line) + "\n").encode())
        except OSError:
            pass  # the records are what must be kept; a time that cannot be is left out

    def _append(self, name: str, lines: list[str]) -> None:
        """Append whole lines or nothing, retrying with back-off."""
        data = "".join(line + "\n" for line in lines).encode()
        deadline, delay, warned = time.monotonic() + self.retry_seconds, 0.05, False
        while True:
            try:
                return self._append_once(name, data)
            except OSError as e:
                if time.monotonic() + delay > deadline:
                    raise
                if not warned:
                    warned = True
                    print(
                        f"nnxrl: writing {self.paths[name]} failed ({e.strerror or e}); "
                        f"retrying for up to {self.retry_seconds:.0f} s",
                        file=sys.stderr,
                        flush=True,
                    )
                time.sleep(delay)
                delay = min(2 * delay, 2.0)

    def _append_once(self, name: str, data: bytes) -> None:
        if name not in self.files:
            self.files[name] = os.open(
                self.paths[name], os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644
            )
        fd = self.files[name]
        start = os.lseek(fd, 0, os.SEEK_END)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            os.ftruncate(fd, start)  # cut back to the last whole line
            raise

    def unrecorded(self) -> dict:
        """What ``unwritten`` holds, as the lines each file lacks, for a checkpoint."""
        return {
            "recorded_through": self.recorded_through,
            "metrics.jsonl": [json.dumps(r) for b in self.unwritten for r in b.records],
            "metrics_aggregate.jsonl": [
                json.dumps(a) for b in self.unwritten for a in b.aggregates
            ],
        }

    def close(self, status: str) -> None:
        for fd in self.files.values():
            os.close(fd)
        self.files = {}
