"""No silent waits: a long step (compiling, playing evaluation episodes, rendering)
says what it is doing when it starts and, while it lasts, how long it has taken.

    with waiting("compiling the training programs", stream=sys.stdout):
        programs = compile_programs(config)

prints ``nnxrl: compiling the training programs...`` at once and, every ``every``
seconds until the block ends, ``nnxrl: compiling the training programs (30 s so
far)``, from a daemon thread (the block itself runs undisturbed).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

EVERY = 15.0  # seconds between reports while a step lasts


@contextmanager
def waiting(what: str, stream: TextIO | None = None, every: float = EVERY) -> Iterator[None]:
    """Say ``what`` is being done, then how long it has taken every ``every`` s."""
    out = stream or sys.stderr
    print(f"nnxrl: {what}...", file=out, flush=True)
    started, done = time.perf_counter(), threading.Event()

    def report() -> None:
        while not done.wait(every):
            print(
                f"nnxrl: {what} ({time.perf_counter() - started:.0f} s so far)",
                file=out,
                flush=True,
            )

    thread = threading.Thread(target=report, name="nnxrl-waiting", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def attended(stream: TextIO | None = None) -> bool:
    """Whether someone is watching ``stream`` (default stdout): a terminal, or a
    Jupyter or IPython kernel's cell output. What ``nnxrl.train`` shows progress to by
    default; a script whose output goes to a file or a pipe stays quiet."""
    out = stream or sys.stdout
    if getattr(out, "isatty", lambda: False)():
        return True
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})
