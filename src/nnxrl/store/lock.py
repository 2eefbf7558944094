"""One writer per run directory: an exclusive lock held while a run writes there.

``train`` (fresh or ``--resume``), ``export`` into a run and ``sweep-report`` hold
``RUN_DIR/.nnxrl.lock`` while they write. The lock is an ``flock`` on that file, which
the kernel releases whenever its holder exits, however it exits (a crash or SIGKILL
too), so a lock can never stay taken by a dead process. The file also says who holds
it (pid and host); a second writer is refused at once, naming that pid. The holder
empties the file when it lets go, so a file that still names a process when the lock
is free was left by one that died: the next writer takes it over and says so.
``holder`` tells a reader whether a writer is at work there now.

The lock is advisory and local to a machine's kernel: on a network file system two
hosts may not see each other's ``flock`` (then the host name in the message helps).
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nnxrl.errors import ConfigError, RunLockedError, StorageError

LOCK_FILE = ".nnxrl.lock"


@contextmanager
def hold(run_dir: str | Path, what: str = "train") -> Iterator[None]:
    """Hold the run directory's lock for the body (see the module docstring)."""
    path = Path(run_dir) / LOCK_FILE
    if path.is_symlink():
        raise ConfigError(
            f"{path} is a symbolic link; nnxrl writes only its own files in a run "
            "directory. Remove the link and run again"
        )
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as e:
        raise StorageError(f"cannot create the run's lock file {path} ({e.strerror})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise RunLockedError(
                f"{run_dir} is being written by another nnxrl process ({_holder(fd)}); one "
                "run directory takes one writer at a time. Wait for it to finish, stop it "
                "(Ctrl-C or `kill PID`: it checkpoints), or choose another directory"
            ) from None
        left = _holder(fd)
        if left:
            print(
                f"nnxrl: {path}: the lock was left by {left}, which is no longer running; "
                "taking it over",
                file=sys.stderr,
                flush=True,
            )
        try:
            _write_holder(fd, what)
        except OSError as e:
            raise StorageError(
                f"cannot write the run's lock file {path} ({e.strerror}); free space or "
                "choose a writable directory"
            ) from None
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # let go: an empty file is a lock left cleanly
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def holder(run_dir: str | Path) -> str:
    """Who holds the run directory's lock now ('' when no process does): a reader
    (plot, compare) of a run still being written reads it up to its last whole update."""
    try:
        fd = os.open(Path(run_dir) / LOCK_FILE, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return ""
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as e:
            held = e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
            return (_holder(fd) or "another process") if held else ""
        fcntl.flock(fd, fcntl.LOCK_UN)
        return ""
    finally:
        os.close(fd)


def _holder(fd: int) -> str:
    """Who the lock file says holds it ('' when it is empty)."""
    os.lseek(fd, 0, os.SEEK_SET)
    text = os.read(fd, 4096).decode(errors="replace").strip()
    return text


def _write_holder(fd: int, what: str) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, f"pid {os.getpid()} on {socket.gethostname()} ({what})\n".encode())
