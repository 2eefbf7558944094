"""TensorBoard event files read back with TensorBoard's own reader; the end-of-run
episode GIF attached to MLflow, W&B (offline) and TensorBoard; MLflow read while a
run trains."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import tracemalloc
import urllib.request

import numpy as np
import pytest
from cli_runs import CARTPOLE, sets
from cli_runs import TWO_SEEDS_CARTPOLE as TINY

from nnxrl import config as C
from nnxrl.config import schedule
from nnxrl.logging.mlflow_tracker import local_store_uri
from nnxrl.run.training import run_training


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def tracked_run(tmp_path_factory):
    """One run with every tracker and the episode video."""
    pytest.importorskip("wandb")
    out = tmp_path_factory.mktemp("tracked") / "run"
    overrides = [
        *TINY,
        "logging.backends=[mlflow,tensorboard,wandb]",
        "logging.wandb_mode=offline",
        "logging.log_video=true",
    ]
    run_training(C.load("configs/ppo-cartpole.yaml", overrides), out, quiet=True)
    return out


def accumulator(folder):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder), size_guidance={"scalars": 0, "images": 0})
    events.Reload()
    return events


def test_tensorboard_scalars_per_seed_and_across_seeds(tracked_run):
    records = read_jsonl(tracked_run / "metrics.jsonl")
    aggregates = read_jsonl(tracked_run / "metrics_aggregate.jsonl")
    root = accumulator(tracked_run / "tensorboard")
    tags = root.Tags()
    assert {"loss/total", "loss/total/std", "loss/total/min", "episode_return_window"} <= set(
        tags["scalars"]
    )
    assert "loss/total/mean" not in tags["scalars"]
    got = [(e.step, e.value) for e in root.Scalars("loss/total")]
    np.testing.assert_allclose(got, [(a["env_steps"], a["loss/total/mean"]) for a in aggregates])
    for seed in range(2):
        events = accumulator(tracked_run / "tensorboard" / f"seed_{seed}")
        got = [(e.step, e.value) for e in events.Scalars("episode_return_window")]
        expected = [
            (r["env_steps"], r["episode_return_window"])
            for r in records
            if r["seed"] == seed and r["episode_return_window"] is not None
        ]
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert {"config", "tags"} <= set(tags["tensors"])
    config_text = root.Tensors("config")[0].tensor_proto.string_val[0].decode()
    assert "CartPole-v1" in config_text
    (image,) = root.Images("episode")
    assert image.encoded_image_string[:6] == b"GIF89a"
    assert image.encoded_image_string == (tracked_run / "episode.gif").read_bytes()


def test_the_episode_gif_is_attached_to_mlflow_and_wandb(tracked_run):
    from mlflow import MlflowClient
    from PIL import Image

    with Image.open(tracked_run / "episode.gif") as gif:
        assert gif.n_frames > 5  # a greedy CartPole episode of some length
    client = MlflowClient(tracking_uri=local_store_uri(tracked_run))
    run_id = (tracked_run / "mlflow_run_id").read_text().strip()
    assert [a.path for a in client.list_artifacts(run_id, "media")] == ["media/episode.gif"]
    videos = list((tracked_run / "wandb").glob("offline-run-*/files/media/videos/*.gif"))
    assert len(videos) == 1 and videos[0].read_bytes() == (tracked_run / "episode.gif").read_bytes()


def test_an_mlflow_runs_duration_spans_its_compile_and_training(tracked_run):
    """The run starts in MLflow when nnxrl's run starts, not when the store opened:
    before the first chunk's record and the last; it ends after the last."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=local_store_uri(tracked_run))
    info = client.get_run((tracked_run / "mlflow_run_id").read_text().strip()).info
    times = [r["time"] * 1000 for r in read_jsonl(tracked_run / "timing.jsonl")]
    assert info.start_time < times[0] - 1000  # the compile came before the first chunk
    assert info.end_time >= times[-1] and info.status == "FINISHED"


def test_tensorboard_switched_on_at_resume_gets_the_earlier_records(tmp_path):
    out = tmp_path / "run"
    config = C.load("configs/ppo-cartpole.yaml", [*TINY, "logging.backends=[]"])
    with pytest.raises(KeyboardInterrupt):
        run_training(config, out, quiet=True, stop_after=6)
    resumed = C.load("configs/ppo-cartpole.yaml", [*TINY, "logging.backends=[tensorboard]"])
    run_training(resumed, out, quiet=True, resume=True)
    steps = [e.step for e in accumulator(out / "tensorboard").Scalars("loss/total")]
    assert steps == [
        u * schedule.batch_size(config) for u in range(1, schedule.num_updates(config) + 1)
    ]


# CartPole for as long as the test lets it run (minutes; it is stopped long before):
# 10,000 updates of 2,048 env steps in chunks of 10, a point of each series per chunk
ENDLESS_CARTPOLE = [
    "total_env_steps=20_480_000",
    "env.num_envs=16",
    "ppo.num_steps=128",
    "logging.backends=[mlflow]",
    "logging.updates_per_chunk=10",
    "logging.tracker_points=1000",
    "checkpoint.enabled=false",
    "fast_compile=true",
]


def test_mlflow_shows_a_run_s_points_while_it_trains(tmp_path):
    """Someone who opens MLflow during a run finds it RUNNING with its points so far,
    and more of them a moment later; stopped with Ctrl-C, it ends KILLED and keeps
    every point that was seen."""
    from mlflow import MlflowClient

    out = tmp_path / "runs" / "live"
    command = [sys.executable, "-m", "nnxrl", "train", CARTPOLE, "--out", str(out)]
    process = subprocess.Popen(
        [*command, *sets(ENDLESS_CARTPOLE)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        first, later = points_while_training(out, process, seconds=300)
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr.decode()[-2000:]
    assert first and set(first) < set(later)
    client = MlflowClient(tracking_uri=local_store_uri(out))
    run_id = (out / "mlflow_run_id").read_text().strip()
    assert client.get_run(run_id).info.status == "KILLED"
    kept = [(m.step, m.value) for m in client.get_metric_history(run_id, "loss/total")]
    assert set(later) <= set(kept)


def points_while_training(out, process, seconds: float) -> tuple[list, list]:
    """The run's ``loss/total`` points as MLflow's client reads them twice while the
    process trains and the run is RUNNING: the first time any exist, and the first
    time there are more."""
    from mlflow import MlflowClient

    deadline, first = time.monotonic() + seconds, []
    while time.monotonic() < deadline:
        assert process.poll() is None, "the run ended before MLflow showed it training"
        time.sleep(1.0)
        if not (out / "mlflow_run_id").exists():
            continue
        client = MlflowClient(tracking_uri=local_store_uri(out))
        run_id = (out / "mlflow_run_id").read_text().strip()
        points = [(m.step, m.value) for m in client.get_metric_history(run_id, "loss/total")]
        if client.get_run(run_id).info.status != "RUNNING" or process.poll() is not None:
            break
        if first and len(points) > len(first):
            return first, points
        first = first or points
    raise AssertionError(f"MLflow showed no growing series while the run trained: {first}")


def test_a_tracking_server_that_goes_away_gets_every_point_once_when_back(tmp_path):
    """MLflow as a real server, killed while a run trains and started again: training
    goes on, the points of the time between are kept and sent when it is back, in
    order, none lost and none twice; each change said once."""
    from mlflow import MlflowClient

    from nnxrl.logging.run_info import is_logged, logged_updates

    port, out = free_port(), tmp_path / "runs" / "live"
    server = mlflow_server(tmp_path / "server.db", port)
    uri = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "nnxrl", "train", CARTPOLE, "--out", str(out)]
    overrides = [*ENDLESS_CARTPOLE, f"logging.mlflow_tracking_uri={uri}"]
    run = subprocess.Popen([*command, *sets(overrides)], stderr=subprocess.PIPE, text=True)
    try:
        client = MlflowClient(tracking_uri=uri)
        wait_for(lambda: points(client, out), run, "a first point on the server")
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        gone = updates_recorded(out)
        # started again at once: its start (about 15 s, 7 of them imports) is the outage
        server = start_mlflow_server(tmp_path / "server.db", port)
        wait_for(lambda: updates_recorded(out) > gone + 200, run, "200 updates without it")
        wait_until_up(server, port)
        kept = updates_recorded(out)
        wait_for(lambda: max(points(client, out), default=0) >= 2048 * kept, run, "the kept")
        run.send_signal(signal.SIGINT)
        _, stderr = run.communicate(timeout=120)
        sent = points(client, out)  # with the run's last points, sent as it stopped
    finally:
        run.kill()
        os.killpg(server.pid, signal.SIGKILL)
    assert run.returncode == 130, stderr[-2000:]
    assert stderr.count("is unreachable") == 1 and stderr.count("is back after") == 1, stderr
    aggregates = [json.loads(x) for x in (out / "metrics_aggregate.jsonl").read_text().splitlines()]
    stride = logged_updates(10_000, 1000)
    assert sent == [a["env_steps"] for a in aggregates if is_logged(a["update"], 10_000, stride)]


def points(client, out) -> list[int]:
    """The steps of the run's ``loss/total`` points on the server, in order."""
    if not (out / "mlflow_run_id").exists():
        return []
    run_id = (out / "mlflow_run_id").read_text().strip()
    return sorted(m.step for m in client.get_metric_history(run_id, "loss/total"))


def updates_recorded(out) -> int:
    return len((out / "metrics_aggregate.jsonl").read_text().splitlines())


def wait_for(ready, process, what: str, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        assert process.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"no {what} within {seconds} s"
        time.sleep(0.5)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mlflow_server(store, port: int) -> subprocess.Popen:
    """``mlflow server`` on ``store`` at ``port``, once it answers."""
    return wait_until_up(start_mlflow_server(store, port), port)


def start_mlflow_server(store, port: int) -> subprocess.Popen:
    """``mlflow server`` on ``store`` at ``port`` (its job runners off), starting; its
    artifacts beside the store (by default they go to ./mlartifacts, the checkout)."""
    command = [sys.executable, "-m", "mlflow", "server", "--workers", "1", "--port", str(port)]
    command += ["--host", "127.0.0.1", "--backend-store-uri", f"sqlite:///{store}"]
    command += ["--artifacts-destination", str(store.parent / "mlartifacts")]
    return subprocess.Popen(
        command,
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def wait_until_up(server: subprocess.Popen, port: int) -> subprocess.Popen:
    """``server`` once it answers at ``port``."""
    deadline = time.monotonic() + 180
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
            return server
        except OSError:
            assert server.poll() is None and time.monotonic() < deadline, "no MLflow server"
            time.sleep(0.5)


def test_a_tracking_server_that_never_returns_is_said_once_and_blocks_nothing(capsys, monkeypatch):
    """The real MLflow client against a port where nothing answers: each write keeps
    its points and returns, the loss is said once when it begins and once at the end."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    from nnxrl.logging.mlflow_tracker import HTTP_DEFAULTS, MlflowBackend
    from nnxrl.logging.records import LogBatch

    for name, value in HTTP_DEFAULTS.items():  # what the backend's open() sets
        monkeypatch.setenv(name, value)
    uri = f"http://127.0.0.1:{free_port()}"
    backend = MlflowBackend("runs/never", {}, uri, "e", "never", num_updates=3)
    backend.client, backend.run_id, backend._metric_cls = MlflowClient(uri), "r", Metric
    for update in (1, 2, 3):
        record = {"update": update, "env_steps": 128 * update, "seed": 0, "loss/total": 1.0}
        aggregate = {"update": update, "env_steps": 128 * update, "loss/total/mean": 1.0}
        backend.write(LogBatch(records=[record], aggregates=[aggregate], sps=1.0, elapsed=1.0))
    backend.close("finished")
    err = capsys.readouterr().err
    assert err.count(f"the MLflow server {uri} is unreachable") == 1, err
    assert err.count("did not come back: 3 updates' points were not sent") == 1, err
    assert "train --resume" in err and "runs/never" in err


def test_a_long_runs_earlier_records_reach_mlflow_a_few_at_a_time(tmp_path):
    """A tracker that meets a resumed run's earlier updates (a new MLflow run, a store
    made again) reads them from the record files a batch at a time: what Python
    allocates while they are sent stays far below the files' size, and every logged
    update arrives, once, in order."""
    from mlflow import MlflowClient

    from nnxrl.logging.mlflow_tracker import MlflowBackend
    from nnxrl.logging.run_info import is_logged, logged_updates

    out, updates = tmp_path / "runs" / "long", 30_000
    out.mkdir(parents=True)
    record = {"seed": 0} | {f"metric_{i}": 0.5 for i in range(30)}
    aggregate = {f"metric_{i}/mean": 0.5 for i in range(30)}
    for name, row in (("metrics.jsonl", record), ("metrics_aggregate.jsonl", aggregate)):
        lines = (
            json.dumps({"update": u, "env_steps": 64 * u, **row}) + "\n"
            for u in range(1, updates + 1)
        )
        (out / name).write_text("".join(lines))
    backend = MlflowBackend(out, {}, None, "e", "long", num_updates=updates)
    backend.open()
    backend.start_update = updates
    tracemalloc.start()
    backend._resend_records()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    backend.close("finished")
    assert peak < (out / "metrics.jsonl").stat().st_size, peak  # reading it whole: 12x
    client = MlflowClient(tracking_uri=local_store_uri(out))
    steps = [m.step for m in client.get_metric_history(backend.run_id, "metric_0")]
    stride = logged_updates(updates, 200)
    assert steps == [64 * u for u in range(1, updates + 1) if is_logged(u, updates, stride)]
