"""End-to-end runs through the CLI on tiny configs."""

import json

import numpy as np
import pytest
import yaml

from nnxrl import config as C
from nnxrl.cli import main
from nnxrl.config import schedule

TINY = [
    "total_env_steps=2048",
    "ppo.num_steps=32",
    "env.num_envs=4",
    "num_seeds=2",
    "fast_compile=true",
]


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    assert (
        main(
            [
                "train",
                "configs/ppo-cartpole.yaml",
                "--out",
                str(out),
                *sum((["--set", s] for s in TINY), []),
            ]
        )
        == 0
    )
    return out


def test_cli_writes_config_and_one_record_per_update_per_seed(tiny_run, capsys):
    cfg = yaml.safe_load((tiny_run / "config.yaml").read_text())
    assert cfg["num_seeds"] == 2 and cfg["ppo"]["num_steps"] == 32
    records = read_jsonl(tiny_run / "metrics.jsonl")
    assert len(records) == 16 * 2
    assert [(r["update"], r["seed"]) for r in records] == [
        (u, s) for u in range(1, 17) for s in range(2)
    ]
    for r in records:
        assert r["env_steps"] == r["update"] * 128
        for key in (
            "episode_return",
            "episode_length",
            "loss/policy",
            "loss/value",
            "loss/entropy",
            "loss/total",
        ):
            assert key in r
        assert np.isfinite(r["loss/total"])
    # the two seeds are different runs
    assert records[-1]["loss/total"] != records[-2]["loss/total"]


def test_learning_rate_anneals_to_exactly_zero(tiny_run):
    records = read_jsonl(tiny_run / "metrics.jsonl")
    cfg = C.load(tiny_run / "config.yaml")
    steps = cfg.ppo.num_epochs * cfg.ppo.num_minibatches
    total = schedule.num_updates(cfg) * steps
    # the metric is the mean over the update's optimiser steps k .. k + steps - 1
    for r in records:
        k0 = (r["update"] - 1) * steps
        expected = np.mean([2.5e-4 * (1 - k / (total - 1)) for k in range(k0, k0 + steps)])
        assert r["stats/learning_rate"] == pytest.approx(expected, rel=1e-5)
    from nnxrl.optim import linear_decay

    assert float(linear_decay(total)(total - 1)) == 0.0


def test_same_config_and_seed_give_identical_metrics(tiny_run, tmp_path):
    assert main(["train", str(tiny_run / "config.yaml"), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "metrics.jsonl").read_text() == (tiny_run / "metrics.jsonl").read_text()


def test_episode_means_are_null_when_no_episode_ended(tmp_path):
    # CartPole episodes last >= 8 steps: a 4-step first update ends none.
    assert (
        main(
            [
                "train",
                "configs/ppo-cartpole.yaml",
                "--out",
                str(tmp_path),
                "--set",
                "total_env_steps=16",
                "--set",
                "ppo.num_steps=4",
                "--set",
                "ppo.num_minibatches=1",
            ]
        )
        == 0
    )
    (record,) = read_jsonl(tmp_path / "metrics.jsonl")
    assert record["episode_count"] == 0
    assert record["episode_return"] is None and record["episode_length"] is None
    assert "NaN" not in (tmp_path / "metrics.jsonl").read_text()


def test_config_error_exits_with_message(capsys):
    assert main(["train", "configs/ppo-cartpole.yaml", "--set", "ppo.num_minibatches=7"]) == 2
    assert "ppo.num_minibatches: 7" in capsys.readouterr().err
