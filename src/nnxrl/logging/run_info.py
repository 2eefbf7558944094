"""What trackers record about a run besides its metrics: tags naming the algorithm,
env, nnxrl version and the git commit of the code it ran from, and where the MLflow
and TensorBoard series are thinned out."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from nnxrl.version import git_commit, version


def run_tags(config, out_dir: Path | None) -> dict[str, str]:
    """nnxrl.algo, nnxrl.env, nnxrl.version, nnxrl.run.run_dir and, when the working
    directory is in a git repository, git.commit (with MLflow's own source tags)."""

    tags = {
        "nnxrl.algo": config.algo,
        "nnxrl.env": config.env.id,
        "nnxrl.version": version(),
        "nnxrl.num_seeds": str(config.num_seeds),
        "mlflow.source.name": command_line(),
        "mlflow.source.type": "LOCAL",
    }
    if out_dir is not None:
        tags["nnxrl.run.run_dir"] = str(Path(out_dir).resolve())
    commit = git_commit()
    if commit is not None:
        tags["git.commit"] = tags["mlflow.source.git.commit"] = commit
    return tags


def command_line() -> str:
    """How this process was started, e.g. 'nnxrl train ppo-cartpole'."""
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    return " ".join([program, *sys.argv[1:]])[:500]


def logged_updates(num_updates: int, points: int) -> int:
    """The stride k of updates a tracker receives: updates k, 2k, ... and the last, so
    that a series has about ``points`` values (metrics.jsonl keeps every update)."""
    return max(1, math.ceil(num_updates / points))


def is_logged(update: int, num_updates: int, stride: int) -> bool:
    return update % stride == 0 or update == num_updates
