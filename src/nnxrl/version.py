"""The installed nnxrl's version and the git commit of the checkout it runs in, in
one place (a leaf: the logging backends, the run directory and ``--version`` read
them without importing the package's public names)."""

from __future__ import annotations

import subprocess
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version


def version() -> str:
    """The version the package was installed at; ``0.0.0`` for a source tree that is
    not installed."""
    try:
        return _distribution_version("nnxrl")
    except PackageNotFoundError:
        return "0.0.0"


def git_commit() -> str | None:
    """The HEAD commit of the git repository around the working directory, or None."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and len(commit) == 40 else None
