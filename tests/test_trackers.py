"""TensorBoard event files read back with TensorBoard's own reader; the end-of-run
episode GIF attached to MLflow, W&B (offline) and TensorBoard; MLflow read while a
run trains."""

import json
import signal
import subprocess
import sys
import time

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
    command = [sys.executable, "-m", "nnxrl.cli", "train", CARTPOLE, "--out", str(out)]
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
