"""Stopping a run cleanly: Ctrl-C, SIGTERM and ``--stop-after`` become one request.

While a run is under way (compiling, training, and writing the last records), SIGINT
and SIGTERM only set a flag: the run finishes the chunk in flight, writes every
completed update, checkpoints and exits with 130. A stop signal that arrives again
within ``REPEAT_WINDOW`` seconds is the same request delivered twice (a signal to a
process group reaches both ``uv`` and Python, and ``uv`` forwards its copy), so it
is ignored; a deliberate second Ctrl-C later stops at once.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

REPEAT_WINDOW = 1.0  # seconds within which repeated stop signals count as one


class StopRequest:
    """The flag a signal handler sets; the run loop reads ``requested``."""

    def __init__(self) -> None:
        self.requested = False
        self.signalled_at: float | None = None  # monotonic time of the first stop signal

    def request(self) -> None:
        """Ask for a stop without a signal (``stop_after``)."""
        self.requested = True

    def handler(self, signum: int, frame: object) -> None:
        now = time.monotonic()
        if self.signalled_at is not None:
            if now - self.signalled_at < REPEAT_WINDOW:
                return  # the same request, delivered twice
            raise KeyboardInterrupt  # a second, deliberate Ctrl-C: stop at once
        self.signalled_at = now
        self.requested = True
        name = signal.Signals(signum).name
        print(
            f"\nnnxrl: {name}: stopping after the current chunk (writing every completed "
            "update and a checkpoint); press Ctrl-C again to stop at once",
            file=sys.stderr,
            flush=True,
        )


@contextmanager
def graceful_stop() -> Iterator[StopRequest]:
    """Route SIGINT and SIGTERM to a StopRequest (main thread only; elsewhere signals
    are left alone and only ``request()`` stops the run)."""
    stop = StopRequest()
    try:
        previous = {
            sig: signal.signal(sig, stop.handler) for sig in (signal.SIGINT, signal.SIGTERM)
        }
    except ValueError:  # not the main thread
        yield stop
        return
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
