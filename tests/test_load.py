"""Many runs at once (run by hand: ``uv run pytest -m load``; a few minutes on 2
cores): eight ``nnxrl train`` processes started together in one parent folder share
its MLflow store and one saved-programs folder. Every run completes with each record
once, none loses a write to "database is locked", and the programs they saved at the
same moment load whole in the run after them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from cli_runs import CARTPOLE, SHORT_CARTPOLE, sets

pytestmark = pytest.mark.load

RUNS = 8
UPDATES = 40  # SHORT_CARTPOLE: 4 envs x 32 steps an update


def train(out, seed: int, cache) -> subprocess.Popen:
    overrides = [*SHORT_CARTPOLE, f"seed={seed}", "logging.backends=[mlflow]"]
    overrides += [f"compile_cache.dir={cache}", "compile_cache.min_compile_seconds=0"]
    command = [sys.executable, "-m", "nnxrl", "train", CARTPOLE, "--out", str(out)]
    return subprocess.Popen(
        command + sets(overrides),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_eight_runs_at_once_share_the_store_and_the_saved_programs(tmp_path):
    from mlflow import MlflowClient

    from nnxrl.logging.mlflow_tracker import local_store_uri

    cache, runs = tmp_path / "cache", [tmp_path / "runs" / f"run{i}" for i in range(RUNS)]
    procs = [train(run, seed, cache) for seed, run in enumerate(runs)]
    said = [p.communicate(timeout=1800) for p in procs]
    for proc, (_, err) in zip(procs, said, strict=True):
        assert proc.returncode == 0, err[-3000:]
        assert "database is locked" not in err and "failed" not in err, err[-3000:]
    client = MlflowClient(tracking_uri=local_store_uri(runs[0]))
    ids = [(run / "mlflow_run_id").read_text().strip() for run in runs]
    assert len(set(ids)) == RUNS
    for run, run_id in zip(runs, ids, strict=True):
        records = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
        assert [r["update"] for r in records] == list(range(1, UPDATES + 1)), run
        assert client.get_run(run_id).info.status == "FINISHED"
        steps = [m.step for m in client.get_metric_history(run_id, "loss/total")]
        assert sorted(steps) == [128 * u for u in range(1, UPDATES + 1)], run
    again = train(tmp_path / "runs" / "again", 0, cache)
    out, err = again.communicate(timeout=600)
    assert again.returncode == 0, err[-3000:]
    assert "loaded the compiled programs" in out + err and "compiling it again" not in err
    first = (runs[0] / "metrics.jsonl").read_text()
    assert (tmp_path / "runs" / "again" / "metrics.jsonl").read_text() == first
