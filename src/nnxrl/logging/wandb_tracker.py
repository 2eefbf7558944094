"""Weights & Biases backend (optional: ``uv sync --extra wandb``).

Offline mode (the default) needs no account and writes the run under
``<out>/wandb``; ``wandb sync`` uploads it later. One ``log`` call per update,
at step ``update``, holding every seed's metrics (``seed_<i>/<name>``) and the
across-seed aggregates; tagged with the algorithm and env (the config holds the
rest of the run's tags under ``run_info``).
"""

from __future__ import annotations

import os
from pathlib import Path

from nnxrl.logging.records import LogBatch, metric_items, series_prefix


class WandbBackend:
    name = "wandb"

    def __init__(
        self,
        out_dir: str | Path,
        config_dict: dict,
        project: str,
        mode: str,
        run_name: str,
        tags: dict[str, str] | None = None,
    ):
        tags = tags or {}
        self.settings = dict(
            project=project,
            dir=str(out_dir),
            mode=mode,
            name=run_name,
            config={**config_dict, "run_info": tags},
            tags=[tags[k] for k in ("nnxrl.algo", "nnxrl.env") if k in tags],
        )

    def open(self) -> None:
        try:
            import wandb
        except ImportError as e:
            raise RuntimeError(
                "wandb is not installed; install the optional extra: uv sync --extra wandb"
            ) from e
        os.environ.setdefault("WANDB_SILENT", "true")
        self.run = wandb.init(**self.settings, reinit="create_new")

    def write(self, batch: LogBatch) -> None:
        by_update: dict[int, dict] = {}
        for r in batch.records:
            row = by_update.setdefault(r["update"], {"env_steps": r["env_steps"]})
            prefix = series_prefix(r, per_seed=True)
            row.update({f"{prefix}/{key}": value for key, value in metric_items(r)})
        for a in batch.aggregates:
            prefix = series_prefix(a, per_seed=False)
            by_update[a["update"]].update(
                {f"{prefix}/{key}" if prefix else key: v for key, v in metric_items(a)}
            )
        if batch.sps is not None:
            by_update[batch.aggregates[-1]["update"]]["perf/sps"] = batch.sps
        for update, row in by_update.items():
            self.run.log(row, step=update)

    def attach(self, path: Path) -> None:
        """The end-of-run episode GIF as a W&B video."""
        import wandb

        self.run.log({"episode": wandb.Video(str(path), format="gif")})

    def close(self, status: str) -> None:
        self.run.finish(exit_code=0 if status == "finished" else 1)
