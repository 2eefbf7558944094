"""Shared test settings.

Learning checks train from ``seed`` = ``NNXRL_TEST_SEED_OFFSET`` (default 0), so that
a claim can be checked at other seeds too (``NNXRL_TEST_SEED_OFFSET=1000 uv run
pytest -m learning``): it must hold at any offset, not for one trajectory.

Tests see two CPU devices, as the CLI does on a 2-core machine, so that runs with
several seeds exercise the seed-sharded path, and compile through the user's persistent
compilation cache, as runs do.

The suite runs in two pytest-xdist workers (pyproject's addopts). A test that signals
or kills a process at a chosen moment would see that moment moved by another test
running beside it, so it does that part alone: it takes the fixture ``alone`` and wraps
the moment in ``with alone() as pause_others:``. The block holds the lock that lets one
such block run at a time; from its call of ``pause_others()`` to its end the other
workers and every process they started are paused (SIGSTOP, then SIGCONT). A test calls
it once its process is started and near the moment (past its import and compile), so
that the other worker waits only for the moment itself. The paused tests lose no work,
only wall-clock time; the rest of the test, its reference runs and its resume, runs
beside others.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import math
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nnxrl.config import CompileCacheConfig
from nnxrl.parallel.devices import use_cpu_devices
from nnxrl.store.compile_cache import use_compile_cache

DURATIONS = Path(__file__).with_name("durations.json")

use_cpu_devices()
# the tests' own compiled programs (a test's jit, not only its runs') in JAX's
# persistent cache, as a run's are: a second suite run reads them back
use_compile_cache(CompileCacheConfig())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest test files first, by their seconds in ``tests/durations.json``
    (``benchmarks/suite_durations.py`` measures them; a file not in it counts as the
    longest). Each worker is handed a whole file at a time in this order (pyproject's
    ``--dist loadfile --no-loadscope-reorder``), so the last file to start is a short
    one and the two workers end within seconds of each other."""
    seconds = json.loads(DURATIONS.read_text())
    items.sort(key=lambda item: -seconds.get(item.path.name, math.inf))


@pytest.fixture
def alone(tmp_path_factory) -> Callable[[], contextlib.AbstractContextManager]:
    """``with alone() as pause_others:``: the rest of the block after ``pause_others()``
    runs while every other test is paused (see the module docstring)."""
    # the workers' temporary folders share this parent
    return functools.partial(others_paused, tmp_path_factory.getbasetemp().parent)


@contextlib.contextmanager
def others_paused(folder: Path) -> Iterator[Callable[[], None]]:
    paused: list[str] = []
    watchdog: subprocess.Popen | None = None

    def pause_others() -> None:
        nonlocal watchdog
        assert not paused and watchdog is None, "pause_others() is called once a block"
        paused.extend(pause_other_workers())
        if paused:  # should this worker die inside the block, a watchdog resumes them
            args = [sys.executable, "-c", WATCHDOG, str(os.getpid()), *paused]
            watchdog = subprocess.Popen(args)

    with (folder / "alone.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one block at a time
        try:
            yield pause_others
        finally:
            if watchdog is not None:
                watchdog.kill()
            resume(paused)


WATCHDOG = """
import os, signal, sys, time
while os.path.exists(f"/proc/{sys.argv[1]}"):
    time.sleep(1.0)
for pid in sys.argv[2:]:
    try:
        os.kill(int(pid), signal.SIGCONT)
    except ProcessLookupError:
        pass
"""


def pause_other_workers() -> list[str]:
    """SIGSTOP the other xdist workers (the controller's other children) and their
    descendants, listing again until no new one appears (one may start a child as it
    is stopped); uv processes are left running (they wait on their child, and may
    hold uv's locks)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return []  # one process runs every test
    mine, paused = str(os.getpid()), []
    while True:
        children = children_by_parent()
        others = set(descendants(children, str(os.getppid()))) - {mine}
        others -= set(descendants(children, mine))
        new = [p for p in others if p not in paused and process_name(p) != "uv"]
        if not new:
            return paused
        for pid in new:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGSTOP)
            paused.append(pid)


def resume(pids: list[str]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGCONT)


def children_by_parent() -> dict[str, list[str]]:
    """Every process's children, from ``/proc/PID/stat`` (its 4th field is the parent;
    the 2nd, the name in parentheses, may hold spaces)."""
    children: dict[str, list[str]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            parent = stat.read_text().rsplit(")", 1)[1].split()[1]
            children.setdefault(parent, []).append(stat.parent.name)
    return children


def descendants(children: dict[str, list[str]], pid: str) -> Iterator[str]:
    for child in children.get(pid, []):
        yield child
        yield from descendants(children, child)


def process_name(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


@pytest.fixture
def seed_offset() -> int:
    """The first seed of a learning check (see the module docstring)."""
    text = os.environ.get("NNXRL_TEST_SEED_OFFSET", "0")
    try:
        return int(text)
    except ValueError:
        raise pytest.UsageError(
            f"NNXRL_TEST_SEED_OFFSET={text!r}: expected a non-negative integer"
        ) from None
