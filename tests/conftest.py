"""Shared test settings.

Learning checks train from ``seed`` = ``NNXRL_TEST_SEED_OFFSET`` (default 0), so that
a claim can be checked at other seeds too (``NNXRL_TEST_SEED_OFFSET=1000 uv run
pytest -m learning``): it must hold at any offset, not for one trajectory.

Tests see two CPU devices, as the CLI does on a 2-core machine, so that runs with
several seeds exercise the seed-sharded path.

The suite runs in two pytest-xdist workers (pyproject's addopts). A test marked
``timed`` signals or kills a process at a chosen moment of its run; another test
running beside it would move that moment (as would one beside a test that frees a full
disk on a timer), so it runs alone: every test holds a
shared lock on one file while it runs, a ``timed`` test an exclusive one.
"""

from __future__ import annotations

import fcntl
import os

import pytest

from nnxrl.parallel.devices import use_cpu_devices

use_cpu_devices()


@pytest.fixture(autouse=True)
def one_timed_test_at_a_time(request, tmp_path_factory):
    # the workers' temporary folders share this parent
    path = tmp_path_factory.getbasetemp().parent / "timed-tests.lock"
    exclusive = request.node.get_closest_marker("timed") is not None
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


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
