"""``nnxrl`` and ``python -m nnxrl``: the command line, whose process ends once the
command is done and Python's exit handlers have run, without tearing down its modules.

After the exit handlers, Python's own exit frees every module one by one: a training
run that logs to MLflow's store has imported about 3,500 of them (SQLAlchemy, pandas,
MLflow's own), and their teardown took 0.9-1.4 s of a repeated ``nnxrl train
ppo-cartpole`` of 8-10 s, 0.2-0.5 s of a run without trackers (docs/performance.md,
"Process end"); the OS frees the same memory at once. So when the command returns its
exit code, the process ends with ``os._exit`` as the last step of Python's exit: the
threads Python waits for have ended and every other exit handler (logging's, JAX's,
MLflow's, W&B's, a plugin's) has run, since this one is registered before any library
is imported and handlers run last registered, first; stdout and stderr are flushed
before it. Whatever else ends the process (a refused argument, an uncaught error)
takes Python's whole exit. In Python, call ``nnxrl.cli.main``, not ``run``: ``run``
ends the process it is called in.
"""

import atexit
import os
import sys


def run() -> int:
    """Run the command line (``nnxrl.cli.main`` on ``sys.argv``); return its exit
    code, with which the process then ends at its exit handlers' end."""
    returned: list[int] = []
    atexit.register(end_without_teardown, returned)
    from nnxrl.cli import main  # imported after the registration: its handlers run first

    returned.append(main())
    return returned[0]


def end_without_teardown(returned: list[int]) -> None:
    """The last exit handler: end the process with the command's exit code, once the
    command returned one."""
    if returned:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        os._exit(returned[0])


if __name__ == "__main__":
    sys.exit(run())
