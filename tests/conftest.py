"""Shared test settings.

Learning checks train from ``seed`` = ``NNXRL_TEST_SEED_OFFSET`` (default 0), so that
a claim can be checked at other seeds too (``NNXRL_TEST_SEED_OFFSET=1000 uv run
pytest -m learning``): it must hold at any offset, not for one trajectory.

Tests see two CPU devices, as the CLI does on a 2-core machine, so that runs with
several seeds exercise the seed-sharded path.

The suite runs in two pytest-xdist workers (pyproject's addopts). A test that signals
or kills a process at a chosen moment would see that moment moved by another test
running beside it, so it does that part alone: every test holds a shared lock on one
file while it runs, and such a test takes the fixture ``alone`` and wraps the moment in
``with alone():``, which holds the lock exclusively (the rest of that test, its
reference runs and its resume, runs beside others).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from typing import IO

import pytest

from nnxrl.parallel.devices import use_cpu_devices

use_cpu_devices()


@pytest.fixture(autouse=True)
def shared_lock(tmp_path_factory) -> Iterator[SharedLock]:
    # the workers' temporary folders share this parent
    path = tmp_path_factory.getbasetemp().parent / "alone.lock"
    with path.open("a") as file:
        fcntl.flock(file, fcntl.LOCK_SH)
        try:
            yield SharedLock(file)
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)


@pytest.fixture
def alone(shared_lock: SharedLock) -> Callable[[], contextlib.AbstractContextManager]:
    """``with alone():`` runs its block while no other test runs (see the docstring)."""
    return shared_lock.exclusive


class SharedLock:
    def __init__(self, file: IO) -> None:
        self.file = file

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        # Linux drops the shared lock before waiting for the exclusive one, so two tests
        # asking at once do not deadlock: one waits for the other's block to end
        fcntl.flock(self.file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self.file, fcntl.LOCK_SH)


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
