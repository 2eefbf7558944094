"""JAX's persistent compilation cache, on by default, in a per-user folder.

A run compiles two programs (init and a chunk of updates); with the cache, a second
run of the same config (same shapes, settings, JAX version and devices) reads both
from disk instead of compiling them. The cache is keyed by JAX on the program and
everything that affects its compilation, so a changed config simply misses.

The folder is the config's ``compile_cache.dir``, else ``$XDG_CACHE_HOME/nnxrl/jax``,
else ``~/.cache/nnxrl/jax``. It only ever holds derived data: deleting it costs one
cold compile. Like any compilation cache, it is trusted code: do not point it at a
folder others can write to.

A folder that exists but cannot be written (a read-only mount, a cache warmed into a
container image) is read and never written: its programs still load, a miss compiles
as usual and is kept nowhere (said once, in one line).
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import jax
from jax.experimental.compilation_cache import compilation_cache

from nnxrl.config import CompileCacheConfig


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/nnxrl/jax``, or ``~/.cache/nnxrl/jax``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "nnxrl" / "jax"


def use_compile_cache(settings: CompileCacheConfig) -> Path | None:
    """Point this process's persistent compilation cache where ``settings`` say (or
    switch it off); returns the folder in use. A folder that cannot be made is
    reported in one line and the run compiles without a cache; one that exists but
    cannot be written is used read-only (``writable`` tells which)."""
    folder = Path(settings.dir).expanduser() if settings.dir else default_cache_dir()
    problem = None if not settings.enabled else _unwritable(folder)
    read_only = problem is not None and _readable(folder)
    if problem:
        print(
            f"nnxrl: compile cache {folder} "
            + (
                f"is read-only ({problem}): programs are loaded from it and none is saved "
                "(set compile_cache.dir to a writable folder to save them)."
                if read_only
                else f"cannot be used ({problem}); compiling without it. Set "
                "compile_cache.dir to a writable folder, or compile_cache.enabled=false."
            ),
            file=sys.stderr,
        )
    enabled = settings.enabled and (not problem or read_only)
    if enabled:
        if not jax.config.jax_enable_compilation_cache or (
            jax.config.jax_compilation_cache_dir != str(folder)
        ):
            jax.config.update("jax_enable_compilation_cache", True)
            compilation_cache.set_cache_dir(str(folder))
            compilation_cache.reset_cache()  # JAX opens its cache once: make it reopen
    elif jax.config.jax_enable_compilation_cache:
        jax.config.update("jax_enable_compilation_cache", False)
        compilation_cache.reset_cache()
    # a read-only folder: JAX reads it and never tries to write (each try would warn)
    never = float("inf") if read_only else settings.min_compile_seconds
    jax.config.update("jax_persistent_cache_min_compile_time_secs", never)
    return folder if enabled else None


def writable(folder: Path) -> bool:
    """Whether ``folder`` (created if missing) can be written."""
    return _unwritable(folder) is None


@contextmanager
def persistent_cache_off() -> Iterator[None]:
    """JAX's persistent cache neither read nor written inside (then as it was): a
    program compiled here is fresh (``saved_programs.py`` needs that to save it).
    Threads that compile at once (``programs.py``) share one switch: the first in
    turns the cache off, the last out turns it back on."""
    with _switch.lock:
        if _switch.depth == 0:
            _switch.was_on = jax.config.jax_enable_compilation_cache
            if _switch.was_on:
                jax.config.update("jax_enable_compilation_cache", False)
                compilation_cache.reset_cache()
        _switch.depth += 1
    try:
        yield
    finally:
        with _switch.lock:
            _switch.depth -= 1
            if _switch.depth == 0 and _switch.was_on:
                jax.config.update("jax_enable_compilation_cache", True)
                compilation_cache.reset_cache()


class _Switch:
    """``persistent_cache_off``'s state: how many are inside, and whether the cache
    was on when the first came in."""

    def __init__(self) -> None:
        self.lock, self.depth, self.was_on = threading.Lock(), 0, False


_switch = _Switch()


def _unwritable(folder: Path) -> str | None:
    """Why ``folder`` cannot hold the cache, or None when it can (created if missing)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        return e.strerror or str(e)
    return None


def _readable(folder: Path) -> bool:
    """Whether ``folder`` is a folder whose entries can be listed and read."""
    return folder.is_dir() and os.access(folder, os.R_OK | os.X_OK)
