"""Craftax smoke runs through the CLI with tiny overrides."""

import numpy as np
import pytest
from cli_runs import TINY_CRAFTAX, train


@pytest.mark.parametrize(
    "config,env_id",
    [
        ("configs/ppo-craftax-classic-symbolic.yaml", "Craftax-Classic-Symbolic-v1"),
        ("configs/ppo-craftax-classic-symbolic.yaml", "Craftax-Classic-Pixels-v1"),
    ],
)
def test_craftax_smoke(tmp_path, config, env_id):
    records = train(tmp_path, config, [*TINY_CRAFTAX, f"env.id={env_id}"])
    assert [r["update"] for r in records] == [1, 2]
    for r in records:
        assert np.isfinite(r["loss/total"]) and np.isfinite(r["loss/value"])
        assert "achievements/collect_wood" in r
