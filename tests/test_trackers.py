"""TensorBoard event files read back with TensorBoard's own reader; the end-of-run
episode GIF attached to MLflow, W&B (offline) and TensorBoard."""

import json

import numpy as np
import pytest
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
