"""MLflow backend, the default tracker.

Uses MLflow's local SQLite store inside the run directory (``<out>/mlflow.db``,
artifacts in ``<out>/mlartifacts``) unless ``logging.mlflow_tracking_uri`` names
another. Logs the resolved config as
flattened params and as an artifact, per-seed metrics as ``seed_<i>/<name>`` and
the across-seed aggregates as ``<name>/mean`` and ``<name>/std``, all at step
``env_steps``, plus ``perf/sps``. The run ends FINISHED, KILLED or FAILED.

The run id is written to ``<out>/mlflow_run_id``; a resumed run continues that
run and skips the steps it already holds (a resumed run recomputes them exactly).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from nnxrl.logging.jsonl import RECORD_FILES, read_records
from nnxrl.logging.logger import brief
from nnxrl.logging.records import LogBatch

_STATUS = {"finished": "FINISHED", "killed": "KILLED", "failed": "FAILED"}


def local_store_uri(out_dir: str | Path) -> str:
    """MLflow's local SQLite store inside the run directory."""
    return local_store_uri_of(Path(out_dir) / "mlflow.db")


def local_store_uri_of(path: Path) -> str:
    return f"sqlite:///{path.resolve().as_posix()}"


def check_sqlite_store(uri: str) -> None:
    """Fail at once when a SQLite store cannot be written (MLflow itself retries the
    connection 10 times with doubling waits, about 100 s, before it gives up)."""
    if not uri.startswith("sqlite:///"):
        return
    path = Path(uri[len("sqlite:///") :])
    try:
        if path.exists():
            with path.open("r+b"):
                pass
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            probe = path.parent / f".nnxrl-write-check-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
    except OSError as e:
        raise RuntimeError(
            f"the MLflow store {path} cannot be written ({e.strerror}); point "
            "logging.mlflow_tracking_uri at a writable place, or leave it unset"
        ) from None


def forget_engine(uri: str) -> None:
    """Drop what MLflow caches for ``uri`` for the life of the process (a database
    engine per URI, a store object per URI), so that a store replaced on disk is
    opened afresh. Both caches are private to MLflow: if they move, this does nothing."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
    from mlflow.tracking._tracking_service import utils

    engine = getattr(SqlAlchemyStore, "_engine_map", {}).pop(uri, None)
    if engine is not None:
        engine.dispose()
    cached = getattr(
        getattr(utils, "_tracking_store_registry", None), "_get_store_with_resolved_uri", None
    )
    if hasattr(cached, "cache_clear"):
        cached.cache_clear()


def flatten(data: dict, prefix: str = "") -> dict[str, Any]:
    """{"ppo": {"gamma": 0.99}} -> {"ppo.gamma": 0.99}"""
    out = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


# An unreachable tracking server is reported within seconds instead of minutes
# (MLflow's defaults retry 7 times with doubling waits); explicit settings win.
HTTP_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
}


class MlflowBackend:
    name = "mlflow"

    def __init__(
        self,
        out_dir: str | Path,
        config_dict: dict,
        tracking_uri: str | None,
        experiment: str,
        run_name: str,
        run_id: str | None = None,
        start_update: int = 0,
    ):
        self.out_dir = Path(out_dir).resolve()
        self.local = tracking_uri is None  # the store in the run directory
        self.tracking_uri = tracking_uri or local_store_uri(out_dir)
        self.config_dict = config_dict
        self.experiment = experiment
        self.run_name = run_name
        self.run_id = run_id
        self.start_update = start_update  # a resumed run's records up to here exist
        self.skip_through = -1  # env_steps already in the run

    def open(self) -> None:
        import mlflow
        from mlflow.entities import Metric

        logging.getLogger("mlflow").setLevel(logging.WARNING)
        logging.getLogger("alembic").setLevel(logging.WARNING)
        logging.getLogger("urllib3").setLevel(logging.ERROR)
        for name, value in HTTP_DEFAULTS.items():
            os.environ.setdefault(name, value)
        self._metric_cls = Metric
        self._mlflow = mlflow
        check_sqlite_store(self.tracking_uri)
        if self.run_id is not None and self._continue_run():
            return
        if self.local:
            self._open_local_store()
        else:
            self.client = mlflow.MlflowClient(tracking_uri=self.tracking_uri)
        self._create_run()
        if self.start_update > 0:
            self._resend_records()

    def _continue_run(self) -> bool:
        """Continue the run ``run_id`` (on resume); False when the local store cannot
        be used (it is then moved aside and a new one made)."""
        try:
            self.client = self._mlflow.MlflowClient(tracking_uri=self.tracking_uri)
            self.client.update_run(self.run_id, status="RUNNING")
            history = self.client.get_metric_history(self.run_id, "seed_0/episode_count")
        except Exception as e:
            if not self.local:
                raise
            self._move_aside(e)
            return False
        self.skip_through = max((m.step for m in history), default=-1)
        return True

    def _open_local_store(self) -> None:
        """Use the run directory's store; make a new one in a side file and rename it
        into place once initialised, so a kill at any moment leaves no half-made store."""
        store = self.out_dir / "mlflow.db"
        if store.exists():
            try:
                self.client = self._mlflow.MlflowClient(tracking_uri=self.tracking_uri)
                self.client.search_experiments(max_results=1)
                return
            except Exception as e:
                self._move_aside(e)
        partial = self.out_dir / "mlflow.db.partial"
        partial.unlink(missing_ok=True)
        partial_uri = local_store_uri_of(partial)
        self._mlflow.MlflowClient(tracking_uri=partial_uri).search_experiments(max_results=1)
        forget_engine(partial_uri)  # its connections would follow the file's new name
        partial.rename(store)
        self.client = self._mlflow.MlflowClient(tracking_uri=self.tracking_uri)

    def _move_aside(self, error: Exception) -> None:
        store = self.out_dir / "mlflow.db"
        forget_engine(self.tracking_uri)
        if store.exists():
            broken = store.with_name(f"mlflow.db.broken-{int(time.time())}")
            store.rename(broken)
            print(
                f"nnxrl: the MLflow store {store} could not be used ({brief(error)}); moved "
                f"it to {broken.name} and made a new one, re-sending the records of "
                "metrics.jsonl",
                file=sys.stderr,
                flush=True,
            )

    def _create_run(self) -> None:
        from mlflow.entities import Param

        found = self.client.get_experiment_by_name(self.experiment)
        experiment_id = (
            found.experiment_id
            if found
            else self.client.create_experiment(
                self.experiment, artifact_location=(self.out_dir / "mlartifacts").as_uri()
            )
        )
        run = self.client.create_run(experiment_id, run_name=self.run_name)
        self.run_id = run.info.run_id
        params = [Param(k, str(v)) for k, v in flatten(self.config_dict).items()]
        for i in range(0, len(params), 100):
            self.client.log_batch(self.run_id, params=params[i : i + 100])
        config_file = self.out_dir / "config.yaml"
        if config_file.exists():
            self.client.log_artifact(self.run_id, str(config_file))
        (self.out_dir / "mlflow_run_id").write_text(self.run_id + "\n")

    def _resend_records(self) -> None:
        """A new run for a resumed one: send what metrics.jsonl holds up to the start."""
        records, aggregates = (
            [r for r in read_records(self.out_dir / name) if r["update"] <= self.start_update]
            for name in RECORD_FILES
        )
        if records:
            self.write(LogBatch(records=records, aggregates=aggregates, sps=None, elapsed=0.0))
            self.skip_through = aggregates[-1]["env_steps"]

    def write(self, batch: LogBatch) -> None:
        now = int(time.time() * 1000)
        metrics = []
        for r in batch.records:
            if r["env_steps"] <= self.skip_through:
                continue
            for key, value in r.items():
                if key not in ("update", "env_steps", "seed") and value is not None:
                    metrics.append(
                        self._metric_cls(f"seed_{r['seed']}/{key}", value, now, r["env_steps"])
                    )
        for a in batch.aggregates:  # mean and std (min and max stay in the JSONL)
            if a["env_steps"] <= self.skip_through:
                continue
            for key, value in a.items():
                if key.endswith(("/mean", "/std")):
                    metrics.append(self._metric_cls(key, value, now, a["env_steps"]))
        step = batch.aggregates[-1]["env_steps"]
        if batch.sps is not None and step > self.skip_through:
            metrics.append(self._metric_cls("perf/sps", batch.sps, now, step))
        for i in range(0, len(metrics), 1000):
            self.client.log_batch(self.run_id, metrics=metrics[i : i + 1000])

    def close(self, status: str) -> None:
        self.client.set_terminated(self.run_id, status=_STATUS[status])
