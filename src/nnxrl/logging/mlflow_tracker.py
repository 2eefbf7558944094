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
import time
from pathlib import Path
from typing import Any

from nnxrl.logging.records import LogBatch

_STATUS = {"finished": "FINISHED", "killed": "KILLED", "failed": "FAILED"}


def local_store_uri(out_dir: str | Path) -> str:
    """MLflow's local SQLite store inside the run directory."""
    return f"sqlite:///{(Path(out_dir).resolve() / 'mlflow.db').as_posix()}"


def flatten(data: dict, prefix: str = "") -> dict[str, Any]:
    """{"ppo": {"gamma": 0.99}} -> {"ppo.gamma": 0.99}"""
    out = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


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
    ):
        self.out_dir = Path(out_dir).resolve()
        self.tracking_uri = tracking_uri or local_store_uri(out_dir)
        self.config_dict = config_dict
        self.experiment = experiment
        self.run_name = run_name
        self.run_id = run_id

    def open(self) -> None:
        import mlflow
        from mlflow.entities import Metric, Param

        logging.getLogger("mlflow").setLevel(logging.WARNING)
        logging.getLogger("alembic").setLevel(logging.WARNING)
        self._metric_cls = Metric
        self.client = mlflow.MlflowClient(tracking_uri=self.tracking_uri)
        self.skip_through = -1  # env_steps already in the run
        if self.run_id is not None:  # continue an existing run
            self.client.update_run(self.run_id, status="RUNNING")
            history = self.client.get_metric_history(self.run_id, "seed_0/episode_count")
            self.skip_through = max((m.step for m in history), default=-1)
            return
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
