"""Host-side metric logging: a queue, writer threads, one backend per file.

``make_logger`` builds the backends a config asks for (metrics.jsonl always); a
backend that cannot start is reported once and left out.
"""

from __future__ import annotations

import sys
from pathlib import Path

from nnxrl.config import population, schedule
from nnxrl.hints import command
from nnxrl.logging.logger import Backend, MetricLogger, brief
from nnxrl.logging.records import LogBatch, Members
from nnxrl.logging.run_info import run_tags

__all__ = ["Backend", "LogBatch", "Members", "MetricLogger", "make_logger", "members_of"]


def members_of(config) -> Members:
    """Who the rows of ``config``'s metrics are: its seeds, or a sweep's settings x seeds."""
    return Members(config.num_seeds, population.settings(config) if config.is_sweep else None)


def make_backend(
    name: str, config, out_dir: Path, mlflow_run_id: str | None = None, start_update: int = 0
) -> Backend:
    """The backend ``name`` (``logging.backends``) for a run of ``config``."""
    if name not in _BACKENDS:
        raise ValueError(f"unknown logging backend {name!r}")
    return _BACKENDS[name](config, out_dir, mlflow_run_id, start_update)


def _console(config, out_dir: Path, mlflow_run_id: str | None, start_update: int) -> Backend:
    from nnxrl.logging.console import ConsoleBackend

    resume = None
    if out_dir is not None and config.checkpoint.enabled:
        resume = command(f"train --resume {out_dir}")
    return ConsoleBackend(
        schedule.num_updates(config),
        config.logging.print_every,
        return_window=config.logging.return_window,
        resume_command=resume,
        num_settings=len(population.settings(config)),
    )


def _mlflow(config, out_dir: Path, mlflow_run_id: str | None, start_update: int) -> Backend:
    from nnxrl import config as config_lib
    from nnxrl.logging.mlflow_tracker import MlflowBackend

    return MlflowBackend(
        out_dir,
        config_lib.to_dict(config),
        config.logging.mlflow_tracking_uri,
        config.logging.mlflow_experiment or f"nnxrl-{config.env.id}",
        out_dir.name,
        run_id=mlflow_run_id,
        start_update=start_update,
        tags=run_tags(config, out_dir),
        num_seeds=config.num_seeds,
        num_updates=schedule.num_updates(config),
        points=config.logging.tracker_points,
        sweep=config.is_sweep,
        pbt=bool(config.is_sweep and config.sweep.pbt.interval),
    )


def _wandb(config, out_dir: Path, mlflow_run_id: str | None, start_update: int) -> Backend:
    from nnxrl import config as config_lib
    from nnxrl.logging.wandb_tracker import WandbBackend

    return WandbBackend(
        out_dir,
        config_lib.to_dict(config),
        config.logging.wandb_project,
        config.logging.wandb_mode,
        out_dir.name,
        tags=run_tags(config, out_dir),
    )


def _tensorboard(config, out_dir: Path, mlflow_run_id: str | None, start_update: int) -> Backend:
    from nnxrl import config as config_lib
    from nnxrl.logging.tensorboard_writer import TensorboardBackend

    return TensorboardBackend(
        out_dir,
        config_lib.to_dict(config),
        tags=run_tags(config, out_dir),
        num_seeds=config.num_seeds,
        num_updates=schedule.num_updates(config),
        points=config.logging.tracker_points,
        start_update=start_update,
    )


_BACKENDS = {
    "console": _console,
    "mlflow": _mlflow,
    "wandb": _wandb,
    "tensorboard": _tensorboard,
}


def make_logger(
    config,
    out_dir: str | Path | None,
    extra: tuple[Backend, ...] = (),
    console: bool = True,
    mlflow_run_id: str | None = None,
    start_update: int = 0,
) -> MetricLogger:
    """metrics.jsonl (``RunResult.metrics`` reads it back), then each configured
    backend that starts, then ``extra``; with no ``out_dir``, the records in memory
    instead of the file.
    On resume, ``mlflow_run_id`` is the MLflow run to continue and ``start_update``
    the update the run starts from."""
    from nnxrl.logging.jsonl import JsonlBackend
    from nnxrl.logging.memory import MemoryBackend

    if out_dir is None:  # nothing is written
        memory = MemoryBackend()
        shown = [make_backend("console", config, None)] if console else []
        return MetricLogger(
            [memory, *shown, *extra],
            schedule.batch_size(config),
            members_of(config),
            quiet=not console,
        )
    out_dir = Path(out_dir)
    backends: list[Backend] = [JsonlBackend(out_dir, start_update)]
    for name in config.logging.backends:
        if name == "console" and not console:
            continue
        try:
            backends.append(make_backend(name, config, out_dir, mlflow_run_id, start_update))
        except Exception as e:
            print(
                f"nnxrl: logging backend {name!r} could not start and is disabled "
                f"(training and the other backends go on): {brief(e)}",
                file=sys.stderr,
                flush=True,
            )
    return MetricLogger(
        [*backends, *extra], schedule.batch_size(config), members_of(config), quiet=not console
    )
