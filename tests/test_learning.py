"""Learning checks (marked ``learning``; CI runs them too)."""

import json

import numpy as np
import pytest

from nnxrl.cli import main


@pytest.mark.learning
def test_cartpole_four_seeds_in_one_program_solve_it(tmp_path):
    assert (
        main(["train", "configs/ppo-cartpole.yaml", "--out", str(tmp_path), "--set", "num_seeds=4"])
        == 0
    )
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    num_updates = max(r["update"] for r in records)
    tail = num_updates - int(0.05 * num_updates)
    for seed in range(4):
        returns = [
            r["episode_return"]
            for r in records
            if r["seed"] == seed and r["update"] > tail and r["episode_return"] is not None
        ]
        assert returns and np.mean(returns) >= 475, (seed, np.mean(returns))
