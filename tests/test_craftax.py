"""Craftax smoke runs through the CLI with tiny overrides."""

import json

import numpy as np
import pytest

from nnxrl.cli import main

TINY = [
    "env.num_envs=8",
    "env.reset_ratio=4",
    "ppo.num_steps=8",
    "total_env_steps=128",
    "ppo.num_minibatches=2",
    "ppo.num_epochs=1",
    "network.width=64",
]


@pytest.mark.parametrize(
    "config,env_id",
    [
        ("configs/ppo-craftax-classic-symbolic.yaml", "Craftax-Classic-Symbolic-v1"),
        ("configs/ppo-craftax-classic-symbolic.yaml", "Craftax-Classic-Pixels-v1"),
    ],
)
def test_craftax_smoke(tmp_path, config, env_id):
    args = ["train", config, "--out", str(tmp_path), "--set", f"env.id={env_id}"]
    assert main(args + sum((["--set", s] for s in TINY), [])) == 0
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in records] == [1, 2]
    for r in records:
        assert np.isfinite(r["loss/total"]) and np.isfinite(r["loss/value"])
        assert "achievements/collect_wood" in r
