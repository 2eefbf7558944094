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

import errno
import hashlib
import json
import os
import shutil
from pathlib import Path

from nnxrl.errors import StorageError
from nnxrl.hints import first_few
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
# What a saved policy directory holds (policy.py), the manifest among it: each file's
# path in the folder and the SHA-256 of what nnxrl wrote there.
POLICY_MANIFEST = ".nnxrl-policy.json"
POLICY_FILES = frozenset({"policy.yaml", "params", POLICY_MANIFEST})


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


def cut(path: str | Path, size: int, tail: bytes = b"") -> None:
    """Cut ``path`` in place to its first ``size`` bytes, then write ``tail`` there (a
    link at ``path`` is refused, never followed). Nothing is written when the file
    already is exactly that. StorageError if it fails."""
    path = Path(path)
    refuse_link(path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
        try:
            if os.fstat(fd).st_size == size and not tail:
                return
            os.ftruncate(fd, size)
            os.lseek(fd, size, os.SEEK_SET)
            view = memoryview(tail)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
    except OSError as e:
        raise StorageError(
            f"could not cut {path} back to its first {size:,} bytes ({e.strerror or e}); "
            "free space or make it writable, then run again"
        ) from None


def check_replaceable(directory: str | Path, what: str, *, run_owned: bool = False) -> None:
    """A ConfigError unless ``directory`` is missing, empty or a policy nnxrl saved and
    nobody changed since: every file in it listed in its manifest with the digest of
    what nnxrl wrote, so that replacing it loses nothing of the user's. ``run_owned``:
    the policy folder of a run directory, where a policy without a manifest (saved by
    an older nnxrl) is nnxrl's too if it holds only the policy's names."""
    directory = Path(directory)
    refuse_link(directory)
    if not directory.exists():
        return
    if not directory.is_dir():
        raise ConfigError(f"{what}: {directory} is a file, not a directory; choose a directory")
    foreign = not_written_here(directory, run_owned)
    if foreign:
        raise ConfigError(
            f"{what}: {directory} holds files that are not part of a policy nnxrl saved "
            f"there ({first_few(foreign, 5)}); nnxrl replaces only a policy folder it "
            f"wrote, unchanged (listed in its {POLICY_MANIFEST}). Choose another directory "
            "(e.g. a new one)"
        )


def not_written_here(directory: Path, run_owned: bool) -> list[str]:
    """The paths in ``directory`` (links among them) that its manifest does not list
    with their present digest: none for a policy nnxrl saved and nobody changed."""
    found = tree_paths(directory)
    links = [p for p in found if (directory / p).is_symlink()]
    if links:
        return links
    manifest = read_manifest(directory)
    if manifest is None:
        legacy = run_owned and (directory / "policy.yaml").is_file()
        return [p for p in found if not (legacy and p.split("/")[0] in POLICY_FILES)]
    return [p for p in found if p != POLICY_MANIFEST and manifest.get(p) != digest(directory / p)]


def tree_paths(directory: Path) -> list[str]:
    """Every file and link under ``directory`` (links not followed), as sorted
    '/'-separated paths relative to it; empty folders are not listed."""
    found = []
    for folder, subfolders, files in os.walk(directory):
        names = files + [d for d in subfolders if (Path(folder) / d).is_symlink()]
        found += [(Path(folder) / n).relative_to(directory).as_posix() for n in names]
    return sorted(found)


def write_manifest(directory: Path) -> None:
    """Record every file under ``directory`` with its digest (``POLICY_MANIFEST``)."""
    listed = {p: digest(directory / p) for p in tree_paths(directory) if p != POLICY_MANIFEST}
    write_text(directory / POLICY_MANIFEST, json.dumps(listed, indent=1, sort_keys=True))


def read_manifest(directory: Path) -> dict[str, str] | None:
    """The manifest's path -> digest, or None when it is missing or not one."""
    try:
        listed = json.loads((directory / POLICY_MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return listed if isinstance(listed, dict) else None


def damaged_since_saved(directory: Path, under: str) -> list[str]:
    """The files under ``directory / under`` that its manifest lists and that are now
    missing or hold other bytes ([] where it has no manifest: nothing to compare)."""
    listed = read_manifest(directory) or {}
    return [
        p
        for p, saved in sorted(listed.items())
        if p.startswith(f"{under}/")
        and (not (directory / p).is_file() or digest(directory / p) != saved)
    ]


def digest(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def replace_directory(directory: Path, written: Path, *, run_owned: bool = False) -> None:
    """Put the directory ``written`` in the place of ``directory`` (checked with
    ``check_replaceable``): the old one is moved aside, the new one renamed in, and
    only then is the old one removed."""
    check_replaceable(directory, "the destination", run_owned=run_owned)
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
            f"{what}: cannot write to {shown_path(str(path))} ({os_problem(e, str(path))}); "
            "choose a writable directory"
        ) from None
    return path


def shown_path(path: str) -> str:
    """``path`` as a message shows it: whole up to 120 characters, else its start and
    its end."""
    return path if len(path) <= 120 else f"{path[:60]}...{path[-40:]}"


def os_problem(e: OSError, path: str) -> str:
    """What the OS said of ``path``; for a path too long, how long it and its longest
    name are and what the file system allows."""
    said = e.strerror or str(e)
    if e.errno != errno.ENAMETOOLONG or not path:
        return said
    longest = max(Path(path).parts, key=len)
    try:
        limits = (
            os.pathconf(existing_parent(Path(path)), "PC_NAME_MAX"),
            os.pathconf("/", "PC_PATH_MAX"),
        )
    except (OSError, ValueError):
        limits = (255, 4096)
    return (
        f"{said}: the path is {len(path):,} characters and its longest name "
        f"{len(longest):,} ({longest[:30]}...); this file system allows {limits[0]} per name "
        f"and {limits[1]:,} in all: choose a shorter path"
    )


def existing_parent(path: Path) -> Path:
    """The nearest folder above ``path`` that exists (whose file system's limits apply)."""
    for parent in path.absolute().parents:
        if parent.is_dir():
            return parent
    return Path("/")


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
