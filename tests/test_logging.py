"""Host-side logging: ordering, completeness, slow and failing backends, real stores."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from cli_runs import TWO_SEEDS_CARTPOLE as TINY

from nnxrl import config as C
from nnxrl.config import schedule
from nnxrl.logging.mlflow_tracker import local_store_uri
from nnxrl.logging.records import aggregate, chunk_to_records
from nnxrl.run.training import run_training


def tiny(*overrides):
    return C.load("configs/ppo-cartpole.yaml", [*TINY, *overrides])


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


class SlowBackend:
    """Sleeps on every batch and remembers what it got and when."""

    name = "slow"

    def __init__(self, seconds):
        self.seconds = seconds
        self.records, self.write_times, self.closed = [], [], None

    def open(self):
        pass

    def write(self, batch):
        time.sleep(self.seconds)
        self.records += batch.records
        self.write_times.append(time.perf_counter())

    def close(self, status):
        self.closed = status


class BrokenBackend:
    name = "broken"

    def __init__(self):
        self.calls = 0

    def open(self):
        pass

    def write(self, batch):
        self.calls += 1
        raise OSError("disk full")

    def close(self, status):
        raise OSError("still full")


def test_records_and_aggregates_from_a_chunk():
    metrics = {
        "episode_count": np.array([[1, 0], [2, 3]]),
        "episode_return": np.array([[5.0, 0.0], [7.0, 9.0]]),
        "loss/total": np.array([[0.5, np.nan], [0.25, 0.75]]),
    }
    records = chunk_to_records(metrics, first_update=3, batch_size=10)
    assert [(r["update"], r["seed"]) for r in records] == [(3, 0), (3, 1), (4, 0), (4, 1)]
    assert records[2]["episode_return"] is None  # seed 0 ended no episode in update 4
    assert records[2]["loss/total"] is None  # non-finite values become null
    assert records[0]["env_steps"] == 30
    agg = aggregate(records)
    assert agg[0]["episode_return/mean"] == 6.0 and agg[0]["episode_return/max"] == 7.0
    assert agg[1]["episode_return/mean"] == 9.0  # only seed 1 had an episode
    assert agg[1]["episode_return/std"] == 0.0


def test_a_chunks_aggregates_are_each_updates_own():
    """``aggregate`` computes a metric over all of a chunk's updates at once, grouping
    updates by how many seeds have a value; each aggregate must still be its own
    update's, key for key and bit for bit: a sweep of 2 settings x 3 seeds with
    episodes ending in some seeds only, a non-finite loss and a diverged member."""
    from nnxrl.logging.records import Members

    rng = np.random.default_rng(0)
    shape = (6, 40)  # members x updates
    metrics = {
        "episode_count": rng.integers(0, 2, shape),
        "episode_return": rng.normal(size=shape),
        "loss/total": np.where(rng.random(shape) < 0.2, np.nan, rng.normal(size=shape)),
        "nonfinite": (rng.random(shape) < 0.05).astype(np.float32),
    }
    members = Members(3, ((0, {"ppo.learning_rate": 1e-3}), (1, {"ppo.learning_rate": 1e-2})))
    records = chunk_to_records(metrics, first_update=1, batch_size=8, members=members)
    one_by_one = [
        a for u in range(1, 41) for a in aggregate([r for r in records if r["update"] == u])
    ]
    assert json.dumps(aggregate(records)) == json.dumps(one_by_one)


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    run_training(tiny("logging.backends=[]"), out, quiet=True)
    return out


def test_slow_backend_changes_nothing_loses_nothing_and_does_not_stall(
    reference_run, tmp_path, capsys
):
    slow = SlowBackend(0.4)  # 8 chunks x 0.4 s: far longer than this tiny run trains
    result = run_training(tiny("logging.backends=[]"), tmp_path, quiet=True, extra_backends=(slow,))
    # every update of every seed, once, in order
    assert [(r["update"], r["seed"]) for r in slow.records] == [
        (u, s) for u in range(1, 17) for s in range(2)
    ]
    assert slow.closed == "finished"
    # the device finished before the slow backend had drained: it did not wait for it
    assert slow.write_times[-1] > result.train_end
    assert sum(t > result.train_end for t in slow.write_times) >= 2
    # and the results are those of a run without it
    assert (tmp_path / "metrics.jsonl").read_text() == (reference_run / "metrics.jsonl").read_text()
    assert len(read_jsonl(tmp_path / "metrics_aggregate.jsonl")) == 16
    assert capsys.readouterr().err == ""  # quiet: not even the backlog is mentioned
    timing = read_jsonl(tmp_path / "timing.jsonl")  # the wall clock, beside the records
    assert [t["update"] for t in timing] == [2, 4, 6, 8, 10, 12, 14, 16]  # one per chunk
    assert [t["env_steps"] for t in timing] == [128 * t["update"] for t in timing]
    times = [t["time"] for t in timing]
    assert times == sorted(times) and time.time() - 600 < times[0] <= times[-1] <= time.time()
    assert all(t["elapsed"] >= 0 for t in timing)


def test_a_backend_that_raises_is_reported_once_and_the_rest_complete(tmp_path, capsys):
    broken, slow = BrokenBackend(), SlowBackend(0.0)
    run_training(tiny("logging.backends=[]"), tmp_path, quiet=True, extra_backends=(broken, slow))
    err = capsys.readouterr().err
    assert err.count("'broken' failed in write() and is disabled") == 1 and "disk full" in err
    assert broken.calls == 1
    assert len(slow.records) == 32 and len(read_jsonl(tmp_path / "metrics.jsonl")) == 32


def test_mlflow_local_store_matches_jsonl(tmp_path):
    from mlflow import MlflowClient

    out = tmp_path / "run"
    run_training(tiny("logging.backends=[mlflow]"), out, quiet=True)
    assert (tmp_path / "mlflow.db").is_file() and not (out / "mlflow.db").exists()
    client = MlflowClient(tracking_uri=local_store_uri(out))
    experiment = client.get_experiment_by_name("nnxrl-CartPole-v1")
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.params["ppo.gamma"] == "0.99" and run.data.params["num_seeds"] == "2"
    assert run.data.params["algo"] == "ppo"
    assert not any(k.startswith("pqn.") for k in run.data.params)  # the unused section
    tags = run.data.tags
    assert tags["nnxrl.algo"] == "ppo" and tags["nnxrl.env"] == "CartPole-v1"
    assert tags["nnxrl.run.run_dir"] == str(out.resolve()) and tags["nnxrl.version"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:  # the tests run inside the repository
        assert tags["git.commit"] == tags["mlflow.source.git.commit"] == head.stdout.strip()
    records = read_jsonl(out / "metrics.jsonl")
    aggregates = read_jsonl(out / "metrics_aggregate.jsonl")
    for seed in range(2):
        for key in ("loss/total", "episode_return"):
            expected = [
                (r["env_steps"], r[key])
                for r in records
                if r["seed"] == seed and r[key] is not None
            ]
            history = client.get_metric_history(run.info.run_id, f"seed_{seed}/{key}")
            got = sorted((m.step, m.value) for m in history)
            assert len(got) == len(expected) > 0
            np.testing.assert_allclose([v for _, v in got], [v for _, v in expected], rtol=1e-6)
            assert [s for s, _ in got] == [s for s, _ in expected]
    for name, column in (("loss/total", "loss/total/mean"), ("loss/total/std", "loss/total/std")):
        got = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, name))
        expected = [(a["env_steps"], a[column]) for a in aggregates]
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert "loss/total/mean" not in run.data.metrics  # the mean is the metric's own name
    artifacts = [a.path for a in client.list_artifacts(run.info.run_id)]
    assert "config.yaml" in artifacts
    artifact_dir = run.info.artifact_uri.removeprefix("file://")
    assert artifact_dir.startswith(str(tmp_path.resolve() / "mlartifacts"))


def test_runs_in_one_folder_share_a_store_and_one_seed_logs_no_spread(tmp_path):
    """Two runs side by side are two runs of one experiment in runs/mlflow.db, each with
    its artifacts apart; a one-seed run logs each metric once, thinned to
    logging.tracker_points; the full CartPole run adds under twice its JSONL's size."""
    from mlflow import MlflowClient

    first, second = tmp_path / "a", tmp_path / "b"
    one_seed = ["num_seeds=1", "logging.backends=[mlflow]", "logging.tracker_points=5"]
    run_training(tiny(*one_seed), first, quiet=True)
    size_after_first = (tmp_path / "mlflow.db").stat().st_size
    cartpole = C.load("configs/ppo-cartpole.yaml", ["logging.backends=[mlflow]"])
    run_training(cartpole, second, quiet=True)
    client = MlflowClient(tracking_uri=local_store_uri(first))
    runs = client.search_runs([client.get_experiment_by_name("nnxrl-CartPole-v1").experiment_id])
    assert sorted(r.info.run_name for r in runs) == ["a", "b"]
    assert len({r.info.artifact_uri for r in runs}) == 2
    for run in runs:
        assert not any(k.startswith("seed_") or k.endswith("/std") for k in run.data.metrics)
    steps = {
        r.info.run_name: sorted(
            m.step for m in client.get_metric_history(r.info.run_id, "loss/total")
        )
        for r in runs
    }
    # 16 updates, about 5 points: every 4th update
    assert steps["a"] == [u * 128 for u in (4, 8, 12, 16)]
    # 976 updates, about 200 points: every 5th and the last
    updates = schedule.num_updates(cartpole)
    expected = [u for u in range(1, updates + 1) if u % 5 == 0 or u == updates]
    assert steps["b"] == [u * schedule.batch_size(cartpole) for u in expected]
    growth = (tmp_path / "mlflow.db").stat().st_size - size_after_first
    assert growth < 2 * (second / "metrics.jsonl").stat().st_size, growth


def test_mlflow_store_that_cannot_be_created_warns_once_and_training_completes(tmp_path, capsys):
    bad = "sqlite:////proc/nnxrl-cannot-write-here/mlflow.db"
    run_training(
        tiny("logging.backends=[mlflow]", f"logging.mlflow_tracking_uri={bad}"),
        tmp_path,
        quiet=True,
    )
    err = capsys.readouterr().err
    assert err.count("logging backend 'mlflow'") == 1
    assert len(read_jsonl(tmp_path / "metrics.jsonl")) == 32


def test_wandb_offline_writes_its_run_files(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    run_training(tiny("logging.backends=[wandb]"), tmp_path, quiet=True)
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    (data,) = list(runs[0].glob("run-*.wandb"))
    assert data.stat().st_size > 1000


def test_console_progress_and_summary_lines(tmp_path, capsys):
    run_training(tiny("logging.backends=[console]", "logging.print_every=2"), tmp_path)
    out = capsys.readouterr().out
    lines = [x for x in out.splitlines() if x.startswith("[")]
    assert len(lines) == 4  # 8 chunks, every 2nd, the last among them
    assert "update 16/16" in lines[-1] and "steps/s" in lines[-1] and "return" in lines[-1]


def test_ctrl_c_keeps_every_completed_update_and_marks_the_mlflow_run_killed(tmp_path, alone):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [
        sys.executable,
        "-m",
        "nnxrl",
        "train",
        "configs/ppo-cartpole.yaml",
        "--out",
        str(tmp_path / "run"),
        "--set",
        "num_seeds=2",
        "--set",
        "total_env_steps=4000000",
        "--set",
        "logging.backends=[mlflow]",
        "--set",
        "logging.updates_per_chunk=4",
        "--set",
        "logging.tracker_points=10000",  # every update goes to MLflow too
    ]
    jsonl = tmp_path / "run" / "metrics.jsonl"
    with alone() as pause_others:
        proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.time() + 120
        while time.time() < deadline and not jsonl.exists():  # compiled, now training
            time.sleep(0.2)
        pause_others()
        while time.time() < deadline and len(jsonl.read_text()) < 5000:
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "stopped at update" in err and "--resume" in err
    records = read_jsonl(jsonl)  # every line is whole JSON
    updates = sorted({r["update"] for r in records})
    assert updates == list(range(1, len(updates) + 1)) and len(updates) < 7812
    assert len(records) == 2 * len(updates)
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=local_store_uri(tmp_path / "run"))
    (run,) = client.search_runs([client.get_experiment_by_name("nnxrl-CartPole-v1").experiment_id])
    assert run.info.status == "KILLED"
    history = client.get_metric_history(run.info.run_id, "seed_0/loss/total")
    assert len(history) == len(updates)


def test_logger_threads_are_joined(reference_run):
    assert not [t for t in threading.enumerate() if t.name.startswith("nnxrl-")]


class HeldBackend:
    """A tracker whose first write waits until released, so that chunks queue up."""

    name = "held"

    def __init__(self, merges: bool):
        self.merges, self.release, self.writes = merges, threading.Event(), []
        self.entered = threading.Event()

    def open(self):
        pass

    def write(self, batch):
        self.entered.set()
        self.release.wait(10)
        self.writes.append([r["update"] for r in batch.records])

    def close(self, status):
        pass


@pytest.mark.parametrize("merges", [True, False])
def test_a_backlog_reaches_a_merging_tracker_as_one_write_in_order(merges):
    from nnxrl.logging.logger import _Worker
    from nnxrl.logging.records import LogBatch

    backend = HeldBackend(merges)
    worker = _Worker(backend, rest=False, quiet=True)
    for update in range(1, 7):
        row = {"update": update, "env_steps": 8 * update, "seed": 0, "episode_count": 1}
        worker.queue.put(LogBatch([row], aggregate([row]), sps=1.0, elapsed=float(update)))
        assert backend.entered.wait(10)  # the first chunk is being written, the rest queue
    backend.release.set()
    worker.close("finished")
    assert [u for w in backend.writes for u in w] == [1, 2, 3, 4, 5, 6]
    assert backend.writes == ([[1], [2, 3, 4, 5, 6]] if merges else [[u] for u in range(1, 7)])
