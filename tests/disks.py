"""Disks a test can make fail: a small tmpfs it fills, one mounted read-only."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest


def mount_tmpfs(path: Path, options: str) -> None:
    """A tmpfs at ``path`` with mount ``options`` (the test is skipped without root)."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)])
    if done.returncode != 0:
        pytest.skip("this machine does not allow mounting a tmpfs")


def remount_read_only(path: Path) -> None:
    """The tmpfs at ``path`` (``mount_tmpfs``) read-only from now on."""
    subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)


def unmount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)])


def fill(disk: Path) -> Path:
    """Write a file until the disk is full; returns it (delete it to free the space).

    Unbuffered: a buffered file keeps the tail of a short write and raises
    ENOSPC again when it is closed, which would lose the filler's path."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as f:
        try:
            while f.write(b"\0" * 65536):
                pass
        except OSError as e:
            assert e.errno == errno.ENOSPC
    return filler
