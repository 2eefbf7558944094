"""A sweep over keys that change the compiled program (``sweep.allow_recompile``).

Settings that share their untraced values (``network.width``, ``env.num_envs``, ...)
are one group, trained as one program over its settings x seeds like any sweep; the
groups run one after another, each a run of its own in ``<out>/group-<g>`` (its
config the sweep's, with ``sweep.only`` naming the group). ``<out>/config.yaml``
holds the whole sweep, so ``nnxrl sweep-report <out>`` ranks every setting and
``--resume <out>`` continues: finished groups are skipped, a stopped one resumes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from nnxrl import config as config_lib
from nnxrl.analysis.sweep_report import GROUP_PREFIX
from nnxrl.config import population, schedule
from nnxrl.errors import Stopped
from nnxrl.parallel.devices import is_main_process
from nnxrl.progress import attended
from nnxrl.run import run_dir
from nnxrl.run.training import RunResult, run_training
from nnxrl.schema import describe_values
from nnxrl.store import checkpoint
from nnxrl.store import lock as run_lock
from nnxrl.sweeps.space import untraced_keys


def train_groups(
    config: config_lib.Config,
    out_dir: str | Path | None = None,
    *,
    progress: bool | None = None,
    resume: bool = False,
    stop_after: int | None = None,
    extra_backends: tuple = (),
) -> list[RunResult]:
    """Train a sweep of several programs (``population.needs_groups``), the groups one after
    another (see the module docstring); returns the RunResult of each group trained
    now (a resumed sweep skips finished groups). Ends early by raising as
    ``nnxrl.train`` does (Ctrl-C: the stopped group resumes with the rest).
    ``progress`` as ``nnxrl.train``'s."""
    run_one, quiet = run_training, not (attended() if progress is None else progress)
    if out_dir is None:
        return train_parts(config, None, run_one, quiet, resume, stop_after, extra_backends)
    out_dir = run_dir.ensure_writable_dir(out_dir, "--out")
    with run_lock.hold(out_dir) if is_main_process() else nullcontext():
        prepare(config, out_dir, resume)
        return train_parts(config, out_dir, run_one, quiet, resume, stop_after, extra_backends)


def train_parts(
    config: config_lib.Config,
    out_dir: Path | None,
    run_one: Callable[..., Any],
    quiet: bool,
    resume: bool,
    stop_after: int | None,
    extra_backends: tuple,
) -> list[Any]:
    """``train_groups`` once the sweep's directory is prepared (and locked)."""
    parts = sharing_a_store(population.group_configs(config), config, out_dir)
    say = not quiet and is_main_process()
    if say:
        keys = ", ".join(untraced_keys(config.sweep, config_lib.traced_keys(config)))
        print(
            f"sweep: {keys} change the compiled program, so its {len(population.settings(config))} "
            f"settings train as {len(parts)} programs, one after another "
            "(sweep.allow_recompile)",
            flush=True,
        )
    results = []
    for g, (values, part) in enumerate(parts):
        where = None if out_dir is None else out_dir / f"{GROUP_PREFIX}{g}"
        if where is not None and resume and finished(where, part):
            if say:
                print(f"sweep: group {g} ({describe_values(values)}) is already trained")
            continue
        if say:
            indices = ", ".join(str(index) for index, _ in population.settings(part))
            print(
                f"sweep: group {g} of {len(parts)} ({describe_values(values)}): settings "
                f"{indices} -> {where or 'memory'}",
                flush=True,
            )
        again = resume and where is not None and run_dir.holds_run(where)
        try:
            result = run_one(
                part,
                where,
                quiet=quiet,
                resume=again,
                stop_after=stop_after,
                extra_backends=extra_backends,
            )
        except Stopped as e:  # resuming the sweep continues this group, then the rest
            raise Stopped(e.update, out_dir, e.checkpointed) from None
        results.append(result)
    return results


def sharing_a_store(parts: list, config: config_lib.Config, out_dir: Path | None) -> list:
    """The groups' configs, sending MLflow records to one store, the sweep's (unless
    the config names one)."""
    from nnxrl.logging.mlflow_tracker import local_store_uri

    if out_dir is None or config.logging.mlflow_tracking_uri is not None:
        return parts
    logging = dataclasses.replace(config.logging, mlflow_tracking_uri=local_store_uri(out_dir))
    return [(v, dataclasses.replace(c, logging=logging)) for v, c in parts]


def prepare(config: config_lib.Config, out_dir: Path, resume: bool) -> None:
    """A fresh sweep needs an empty directory; a resumed one the same config."""
    saved = out_dir / "config.yaml"
    if resume:
        if not saved.is_file():
            raise config_lib.ConfigError(
                f"--resume: {out_dir} is not a run directory (no config.yaml)"
            )
        run_dir.check_same_config(out_dir, run_dir.started_config(out_dir), config)
        return
    if saved.exists() or any(out_dir.glob(f"{GROUP_PREFIX}*")):
        raise config_lib.ConfigError(
            f"--out: {out_dir} already holds a run; continue it with "
            f"`nnxrl train --resume {out_dir}` or choose another directory"
        )
    if is_main_process():
        run_dir.write_config(config, out_dir, fresh=True)


def finished(where: Path, config: config_lib.Config) -> bool:
    """Whether the group in ``where`` reached its last update (its final checkpoint)."""
    saved = checkpoint.available(where) if where.is_dir() else []
    return bool(saved) and saved[-1] >= schedule.num_updates(config)
