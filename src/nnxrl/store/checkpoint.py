"""Checkpoints of a whole run with Orbax: every seed's RunState and the run's position.

A checkpoint lives in ``RUN_DIR/checkpoints/<update>/`` and holds two items:

- ``state``: every array of the RunState (network and optimiser state, env state,
  PRNG keys as their raw key data, add-on state, recurrent hidden state, update
  counter), all seeds stacked on the leading axis, flattened to ``leaf_<i>``;
- ``meta`` (JSON): the update reached, the resolved config, the leaves' paths,
  shapes and dtypes, and the logging position (the MLflow run to continue).

``Cadence`` says when a run takes its periodic checkpoints.

Orbax writes a checkpoint into a temporary directory and renames it when complete,
so a process killed mid-save leaves the earlier checkpoints as they were. Nothing
is unpickled: arrays are read by tensorstore, the rest is JSON. Restoring needs a
template RunState (from the compiled init); shapes and dtypes must match it.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np

from nnxrl.errors import CheckpointError, StorageError


@dataclass
class Cadence:
    """When to take a periodic checkpoint: each time the update count passes a
    multiple of ``every_updates``, or else once ``every_minutes`` have gone by."""

    every_updates: int | None
    every_seconds: float
    last_time: float = field(default_factory=time.perf_counter)

    def due(self, previous: int, update: int) -> bool:
        if self.every_updates is not None:
            return update // self.every_updates > previous // self.every_updates
        return time.perf_counter() - self.last_time >= self.every_seconds


META_KEYS = ("update", "config", "paths", "shapes", "dtypes")  # what save writes in meta


def checkpoint_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / "checkpoints"


def _manager(directory: Path, keep: int | None = None, create: bool = False):
    import orbax.checkpoint as ocp

    options = ocp.CheckpointManagerOptions(
        max_to_keep=keep, create=create, enable_async_checkpointing=False
    )
    return ocp.CheckpointManager(directory.resolve(), options=options)


def _is_key(x: Any) -> bool:
    return jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _leaves(state: Any) -> tuple[list[Any], list[str]]:
    """The state's leaves as saved (keys as raw key data) and their paths. In a run of
    one process they are copied to NumPy first: Orbax writes a host array in about
    half the time of a device array, whose shards it handles one by one
    (``benchmarks/checkpoint_saves.py``). In a run of several, device arrays stay where
    they are, so that every process writes its own shards."""
    flat, _ = jax.tree_util.tree_flatten_with_path(state)
    to_host = np.asarray if jax.process_count() == 1 else lambda x: x
    arrays, paths = [], []
    for path, leaf in flat:
        arrays.append(to_host(jax.random.key_data(leaf) if _is_key(leaf) else leaf))
        paths.append(jax.tree_util.keystr(path))
    return arrays, paths


def save(
    run_dir: str | Path,
    update: int,
    state: Any,
    meta: dict,
    keep: int | None = None,
    leave_out: str | None = None,
) -> Path:
    """Write the checkpoint for ``update`` (keeping the newest ``keep``); returns its path.
    Leaves whose path holds ``leave_out`` (e.g. ``.memory.buffer``) are not written
    and come back as zeros (``restore``). In a multi-process run every process calls
    this and writes its shards."""
    arrays, paths = _leaves(state)
    left_out = [i for i, p in enumerate(paths) if leave_out and leave_out in p]
    meta = {
        **meta,
        "update": int(update),
        "paths": paths,
        "shapes": [list(a.shape) for a in arrays],
        "dtypes": [str(a.dtype) for a in arrays],
        "left_out": left_out,
    }
    # empty arrays (a feed-forward net's [S, B, 0] hidden state) are rebuilt from meta
    items = {f"leaf_{i:05d}": a for i, a in enumerate(arrays) if stored(meta, i)}
    return _write(run_dir, update, items, meta, keep)


def _write(run_dir: str | Path, update: int, items: dict, meta: dict, keep: int | None) -> Path:
    """Orbax's save of ``items`` and ``meta`` as the checkpoint of ``update``; a
    StorageError naming what is intact if it cannot."""
    import orbax.checkpoint as ocp

    directory = checkpoint_dir(run_dir)
    try:
        # a failed write leaves tensorstore's late callbacks printing pages of tracebacks
        with quiet_if_it_fails():
            manager = _manager(directory, keep, create=True)
            try:
                if int(update) in manager.all_steps():  # from before --resume --step: replace
                    manager.delete(int(update))
                manager.save(
                    int(update),
                    args=ocp.args.Composite(
                        state=ocp.args.StandardSave(items), meta=ocp.args.JsonSave(meta)
                    ),
                    force=True,
                )
                manager.wait_until_finished()
            finally:
                manager.close()
    except Exception as e:  # disk full, read-only, I/O error: say so, keep the others
        _remove_partial(directory)
        reason = getattr(e, "strerror", None) or " ".join(str(e).split())[:200]
        raise StorageError(
            f"could not write the checkpoint for update {update} in {directory} "
            f"({type(e).__name__}: {reason}); the earlier checkpoints are intact "
            f"(available: {available(run_dir)}). Free space, then "
            f"`nnxrl train --resume {Path(run_dir)}` continues from the newest"
        ) from None
    return directory / str(update)


def stored(meta: dict, i: int) -> bool:
    """Whether leaf ``i`` of a checkpoint is written: not empty, not left out."""
    return bool(math.prod(meta["shapes"][i])) and i not in meta.get("left_out", ())


def _remove_partial(directory: Path) -> None:
    """Remove what a failed save left (Orbax writes into '*.orbax-checkpoint-tmp*')."""
    import shutil

    if directory.is_dir():
        for path in directory.iterdir():
            if "tmp" in path.name:
                shutil.rmtree(path, ignore_errors=True)


def available(run_dir: str | Path) -> list[int]:
    """Updates with a complete checkpoint, oldest first."""
    directory = checkpoint_dir(run_dir)
    if not directory.is_dir():
        return []
    return sorted(_manager(directory).all_steps())


def others(run_dir: str | Path, damaged: int) -> str:
    """The checkpoints besides ``damaged``, to name in its error message: each is read
    in full, so the ones offered are ones that load, and damaged ones are said so."""
    whole, broken = [], []
    for update in available(run_dir):
        if update == damaged:
            continue
        try:
            read_items(run_dir, update, with_state=True, name_others=False)
        except CheckpointError:
            broken.append(update)
        else:
            whole.append(update)
    return f"{whole}" + (f", and {broken} damaged too" if broken else "")


def latest(run_dir: str | Path) -> int:
    steps = available(run_dir)
    if not steps:
        raise CheckpointError(
            f"no checkpoint in {checkpoint_dir(run_dir)}: the run saved none (was it "
            "started with checkpoints on?) or the directory is not a run directory"
        )
    return steps[-1]


def load_meta(run_dir: str | Path, update: int | None = None) -> dict:
    """The meta item of a checkpoint (the latest by default)."""
    return read_items(run_dir, update, with_state=False)[1]


def restore(run_dir: str | Path, template: Any, update: int | None = None) -> tuple[Any, dict]:
    """(state shaped like ``template``, meta) from the checkpoint for ``update`` (the
    latest by default). A template leaf with a sharding (``Programs.template``) comes
    back as a device array placed so, whatever devices wrote it; else as NumPy."""
    meta = load_meta(run_dir, update)
    flat, treedef = jax.tree_util.tree_flatten(template)
    if len(flat) != len(meta["paths"]):
        raise CheckpointError(
            f"checkpoint {meta['where']} holds {len(meta['paths'])} arrays but this run's "
            f"state has {len(flat)}: it was saved by a different algorithm or network"
        )
    expected = [jax.eval_shape(jax.random.key_data, w) if _is_key(w) else w for w in flat]
    for i, (want, path) in enumerate(zip(expected, meta["paths"], strict=True)):
        shape, dtype = tuple(meta["shapes"][i]), np.dtype(meta["dtypes"][i])
        if shape != tuple(want.shape) or dtype != want.dtype:
            raise CheckpointError(
                f"checkpoint {meta['where']}: {path} is {dtype}{list(shape)} but this "
                f"run needs {want.dtype}{list(want.shape)}"
            )
    shardings = [getattr(w, "sharding", None) for w in flat]
    targets = {
        f"leaf_{i:05d}": _target(want.shape, want.dtype, sharding)
        for i, (want, sharding) in enumerate(zip(expected, shardings, strict=True))
        if stored(meta, i)
    }
    items, meta = read_items(run_dir, meta["update"], with_state=True, targets=targets)
    leaves = []
    for i, (want, sharding) in enumerate(zip(flat, shardings, strict=True)):
        name = f"leaf_{i:05d}"
        if name in items:
            got = items[name]
        else:  # not stored: an empty array, or left out (an empty replay buffer is zeros)
            got = np.zeros(meta["shapes"][i], np.dtype(meta["dtypes"][i]))
            got = jax.device_put(got, sharding) if sharding is not None else got
        # keys come back through their raw data (nnxrl makes them with the default impl)
        leaves.append(jax.random.wrap_key_data(got) if _is_key(want) else got)
    return jax.tree_util.tree_unflatten(treedef, leaves), meta


def _target(shape: tuple, dtype: Any, sharding: Any) -> Any:
    """What Orbax restores a leaf as: a device array with ``sharding``, or NumPy."""
    if sharding is None:
        return np.empty(shape, dtype)
    return jax.ShapeDtypeStruct(tuple(shape), dtype, sharding=sharding)


def read_items(
    run_dir: str | Path,
    update: int | None,
    with_state: bool,
    targets: dict | None = None,
    name_others: bool = True,
) -> tuple[dict, dict]:
    """(arrays by leaf name or {}, meta) of a checkpoint; errors are CheckpointErrors,
    naming the other checkpoints that load when ``name_others``.
    Arrays come back as ``targets`` says (``_target``), by default as NumPy."""
    import orbax.checkpoint as ocp

    update = latest(run_dir) if update is None else int(update)
    where = checkpoint_dir(run_dir) / str(update)
    if update not in available(run_dir):
        raise CheckpointError(
            f"no checkpoint for update {update} in {checkpoint_dir(run_dir)}; "
            f"available: {available(run_dir)}"
        )
    args = {"meta": ocp.args.JsonRestore()}
    if with_state and targets is None:  # NumPy, whatever devices wrote the checkpoint
        targets = numpy_targets(read_items(run_dir, update, False, name_others=name_others)[1])
    if with_state:
        args["state"] = ocp.args.StandardRestore(targets)
    try:
        restored = _restore(run_dir, update, ocp.args.Composite(**args))
    except Exception as e:  # Orbax/tensorstore errors: name the checkpoint, not the internals
        raise CheckpointError(
            f"checkpoint {where} is damaged or incomplete and cannot be read "
            f"({first_line(e)}); use an earlier one with "
            f"--step U (`nnxrl train --resume RUN_DIR --step U`, and eval, render and "
            f"export take it too{_the_others(run_dir, update, name_others)})"
        ) from e
    meta = restored.meta
    if not isinstance(meta, dict) or not all(k in meta for k in META_KEYS):
        raise CheckpointError(
            f"checkpoint {where}: its meta item is not the one nnxrl writes (expected a JSON "
            f"object with {', '.join(META_KEYS)}); use an earlier one with --step U"
            f"{_the_others(run_dir, update, name_others)}"
        )
    meta = dict(meta)
    meta["where"] = str(where)
    return (restored.state if with_state else {}), meta


def numpy_targets(meta: dict) -> dict:
    """Empty NumPy arrays of every saved leaf's shape and dtype (zero-size ones are not
    saved), for Orbax to restore into."""
    shapes = zip(meta["shapes"], meta["dtypes"], strict=True)
    return {
        f"leaf_{i:05d}": np.empty(shape, np.dtype(dtype))
        for i, (shape, dtype) in enumerate(shapes)
        if stored(meta, i)
    }


def _restore(run_dir: str | Path, update: int, args: Any) -> Any:
    """Orbax's restore of ``args`` from the checkpoint of ``update`` (its log quiet
    unless it fails)."""
    with quiet_if_it_fails():
        manager = _manager(checkpoint_dir(run_dir))
        try:
            return manager.restore(update, args=args)
        finally:
            manager.close()


def first_line(e: Exception) -> str:
    """``Type: the first line of its message`` (at most 200 characters of it): what a
    reader's error says without its internals."""
    reason = str(e).splitlines()[0][:200] if str(e) else ""
    return f"{type(e).__name__}: {reason}"


def _the_others(run_dir: str | Path, update: int, name_others: bool) -> str:
    return f"; the others that load: {others(run_dir, update)}" if name_others else ""


@contextmanager
def quiet_if_it_fails(grace: float = 0.5) -> Iterator[None]:
    """Hold back what the process writes to stderr while reading or writing a
    checkpoint, and drop it if that fails. When Orbax gives up on a damaged file or a
    full disk, tensorstore's pending operations call back into the closed event loop
    and print pages of 'Event loop is closed' tracebacks (for ``grace`` seconds); our
    CheckpointError or StorageError says it all."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        failed = False
        try:
            yield
        except BaseException:
            failed = True
            logging.getLogger("asyncio").addFilter(_drop_unretrieved_reader_tasks)
            time.sleep(grace)  # the late callbacks print into ``held``
            raise
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            if not failed:
                held.seek(0)
                sys.stderr.write(held.read().decode(errors="replace"))


def _drop_unretrieved_reader_tasks(record: logging.LogRecord) -> bool:
    """asyncio's 'Task exception was never retrieved' report for the reader's abandoned
    tasks comes whenever the garbage collector finds them, often after ``grace``, even
    at exit; once a read has failed (and said so) those reports are dropped."""
    return "exception was never retrieved" not in str(record.msg)


def config_differences(
    saved: dict,
    requested: dict,
    ignore: tuple[str, ...] = ("logging", "checkpoint", "compile_cache", "mesh", "distributed"),
) -> list[str]:
    """Dotted keys whose values differ between two config dicts (``ignore``d sections
    may differ), as 'key: saved -> requested'. A key the saved config lacks (one added
    to nnxrl since) counts as its default; the other algorithms' sections older runs
    saved do not count."""
    from nnxrl import config as config_lib

    out = []

    def walk(a: Any, b: Any, default: Any, prefix: str) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            default = default if isinstance(default, dict) else {}
            for key in sorted(set(a) | set(b)):
                if not prefix and key in ignore:
                    continue
                saved_value = a[key] if key in a else default.get(key)
                walk(saved_value, b.get(key), default.get(key), f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix.rstrip('.')}: {a!r} -> {b!r}")

    saved = config_lib.without_legacy_sections(dict(saved))
    defaults = config_lib.to_dict(config_lib.Config(algo=requested.get("algo", "ppo")))
    walk(saved, requested, defaults, "")
    for section, key in KEPT_IN_STATE:  # in an ignored section, but shapes the run state
        a, b = (d.get(section, {}).get(key) for d in (saved, requested))
        if a is not None and b is not None and a != b:
            out.append(f"{section}.{key}: {a!r} -> {b!r}")
    return out


# Settings of otherwise free sections that are part of the run state.
KEPT_IN_STATE = (("logging", "return_window"),)
