"""nnxrl writes only its own files: never through a symbolic link, never over a user's.

A run directory holds the names in ``RUN_FILES`` and nothing nnxrl writes elsewhere.
Before a run (or a command that writes into one) starts, each of those names that is
a symbolic link is refused, naming the link: a link there would send records,
configs or deletions to a file outside the run. Whole files are written aside and
renamed into place (``write_text``), so a stop or a full disk never leaves one empty
or half written. A directory nnxrl replaces (a saved policy) is written aside too and
renamed over the old one only when that one is nnxrl's own (``check_replaceable``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from nnxrl.errors import StorageError
from nnxrl.schema import ConfigError

# Every name nnxrl writes in a run directory (the lock is run_lock's).
RUN_FILES = (
    "config.yaml",
    "run.json",
    "metrics.jsonl",
    "metrics_aggregate.jsonl",
    "timing.jsonl",
    "nonfinite.json",
    "mlflow_run_id",
    "mlflow_child_runs.json",
    "checkpoints",
    "policy",
    "episode.gif",
    "tensorboard",
    "wandb",
    "best.yaml",
    "sweep.json",
    "sweep.png",
    "pbt.json",
    "pbt_lineage.png",
    "best_schedule.yaml",
    ".nnxrl.lock",
)
# What a saved policy directory holds (policy.py).
POLICY_FILES = frozenset({"policy.yaml", "params"})


def refuse_links(directory: str | Path, names: tuple[str, ...] = RUN_FILES) -> None:
    """A ConfigError if any of ``names`` in ``directory`` is a symbolic link."""
    for name in names:
        refuse_link(Path(directory) / name)


def refuse_link(path: Path) -> None:
    if path.is_symlink():
        raise ConfigError(
            f"{path} is a symbolic link (to {os.readlink(path)}); nnxrl writes only its own "
            f"files in a run directory, never through a link. Remove it (`rm {path}`) or "
            "choose another directory"
        )


def write_text(path: str | Path, text: str) -> None:
    """Write ``path`` whole or not at all: into a temporary file beside it, then renamed
    over it (a link at ``path`` is refused, never followed). StorageError if it fails."""
    path = Path(path)
    refuse_link(path)
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        try:
            view = memoryview(text.encode())
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(partial, path)
    except OSError as e:
        partial.unlink(missing_ok=True)
        raise StorageError(
            f"could not write {path} ({e.strerror or e}); nothing was changed there. Free "
            "space or choose a writable directory, then run again"
        ) from None


def check_replaceable(directory: str | Path, what: str) -> None:
    """A ConfigError unless ``directory`` is missing, empty or a policy nnxrl saved
    (only ``POLICY_FILES``), so that replacing it loses nothing of the user's."""
    directory = Path(directory)
    refuse_link(directory)
    if not directory.exists():
        return
    if not directory.is_dir():
        raise ConfigError(f"{what}: {directory} is a file, not a directory; choose a directory")
    others = sorted(p.name for p in directory.iterdir() if p.name not in POLICY_FILES)
    links = [p.name for p in directory.iterdir() if p.is_symlink()]
    if others or links:
        shown = ", ".join((others or links)[:5]) + (", ..." if len(others) > 5 else "")
        raise ConfigError(
            f"{what}: {directory} holds files that are not part of a saved policy ({shown}); "
            "nnxrl replaces only a policy directory it wrote. Choose another directory "
            "(e.g. a new one)"
        )


def replace_directory(directory: Path, written: Path) -> None:
    """Put the directory ``written`` in the place of ``directory`` (checked with
    ``check_replaceable``): the old one is moved aside, the new one renamed in, and
    only then is the old one removed."""
    check_replaceable(directory, "the destination")
    old = directory.with_name(f".{directory.name}.old-{os.getpid()}")
    if directory.exists():
        os.replace(directory, old)
    os.replace(written, directory)
    shutil.rmtree(old, ignore_errors=True)


def ensure_writable_dir(path: str | Path, what: str) -> Path:
    """Create ``path`` if needed and check that files can be written in it; a
    ConfigError naming ``what`` (e.g. '--out') otherwise."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{what}: {path} is a file, not a directory; choose a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".nnxrl-write-check-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise ConfigError(
            f"{what}: cannot write to {path} ({e.strerror}); choose a writable directory"
        ) from None
    return path


def ensure_writable_file(path: str | Path, what: str) -> Path:
    """Check that ``path`` can be written (its folder exists and is writable) without
    leaving anything behind; a ConfigError naming ``what`` (e.g. '--json') otherwise."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{what}: {path} is a directory; give a file name")
    if not path.parent.is_dir():
        raise ConfigError(
            f"{what}: the folder {path.parent} does not exist; create it first "
            f"(mkdir -p {path.parent}) or choose another path"
        )
    existed = path.exists()
    try:
        with path.open("ab"):
            pass
    except OSError as e:
        raise ConfigError(
            f"{what}: cannot write {path} ({e.strerror}); choose a writable path"
        ) from None
    if not existed:
        path.unlink()
    return path
