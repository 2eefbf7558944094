"""Learning checks (marked ``learning``; CI runs them too)."""

import json

import numpy as np
import pytest

from nnxrl.cli import main


@pytest.mark.learning
@pytest.mark.parametrize("algo", ["ppo", "pqn"])
def test_cartpole_four_seeds_in_one_program_solve_it(tmp_path, algo):
    args = ["train", f"configs/{algo}-cartpole.yaml", "--out", str(tmp_path)]
    assert main(args + ["--set", "num_seeds=4", "--set", "logging.backends=[]"]) == 0
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


def deepsea_returns(tmp_path, name, overrides, config="configs/rnd-deepsea.yaml"):
    out = tmp_path / name
    args = ["train", config, "--out", str(out), "--set", "logging.backends=[]"]
    assert main(args + sum((["--set", s] for s in overrides), [])) == 0
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    by_seed = {}
    for r in records:
        by_seed.setdefault(r["seed"], []).append(r["episode_return"] or 0.0)
    return by_seed


@pytest.mark.learning
def test_rnd_finds_deepsea_treasure_that_plain_ppo_never_reaches(tmp_path):
    ppo = deepsea_returns(tmp_path, "ppo", ["intrinsic.addon=none", "intrinsic.options={}"])
    rnd = deepsea_returns(tmp_path, "rnd", [])
    assert len(ppo) == len(rnd) == 2
    for seed in ppo:
        # the treasure pays 1 (minus move costs); plain PPO learns to stop paying them
        assert max(ppo[seed]) < 0.5, (seed, max(ppo[seed]))
        assert np.mean(ppo[seed][-10:]) <= 0.0
        # RND reaches it and then goes there every episode
        assert max(rnd[seed]) > 0.9, seed
        assert np.mean(rnd[seed][-10:]) > 0.9, (seed, rnd[seed][-10:])


@pytest.mark.learning
def test_pqn_with_rnd_finds_deepsea_treasure_that_plain_pqn_never_reaches(tmp_path):
    config = "configs/pqn-rnd-deepsea.yaml"
    plain = ["intrinsic.addon=none", "intrinsic.options={}", "intrinsic.mode=reward"]
    pqn = deepsea_returns(tmp_path, "pqn", plain, config)
    rnd = deepsea_returns(tmp_path, "rnd", [], config)
    assert len(pqn) == len(rnd) == 2
    for seed in pqn:
        # every step right costs; only the treasure makes an update's mean return positive
        assert max(pqn[seed]) <= 0.0, (seed, max(pqn[seed]))
        assert max(rnd[seed]) > 0.0, (seed, max(rnd[seed]))


def mean_final_returns(tmp_path, name, overrides, config="configs/ppo-rnn-memorychain.yaml"):
    out = tmp_path / name
    args = ["train", config, "--out", str(out)]
    overrides = ["logging.backends=[]", *overrides]
    assert main(args + sum((["--set", s] for s in overrides), [])) == 0
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    last = max(r["update"] for r in records)
    by_seed = {}
    for r in records:
        if r["update"] > last - 10 and r["episode_return"] is not None:
            by_seed.setdefault(r["seed"], []).append(r["episode_return"])
    return {seed: float(np.mean(v)) for seed, v in by_seed.items()}


@pytest.mark.learning
def test_recurrent_ppo_remembers_what_feed_forward_ppo_cannot(tmp_path):
    gru = mean_final_returns(tmp_path, "gru", [])
    mlp = mean_final_returns(tmp_path, "mlp", ["network.kind=feedforward"])
    assert len(gru) == len(mlp) == 2
    for seed in gru:
        assert gru[seed] > 0.9, (seed, gru[seed])  # +1 is a perfect answer
        assert abs(mlp[seed]) < 0.3, (seed, mlp[seed])  # chance: 0


@pytest.mark.learning
def test_recurrent_pqn_remembers_what_feed_forward_pqn_cannot(tmp_path):
    config = "configs/pqn-rnn-memorychain.yaml"
    gru = mean_final_returns(tmp_path, "gru", [], config)
    mlp = mean_final_returns(tmp_path, "mlp", ["network.kind=feedforward"], config)
    assert len(gru) == len(mlp) == 2
    for seed in gru:
        assert gru[seed] > 0.9, (seed, gru[seed])
        assert abs(mlp[seed]) < 0.3, (seed, mlp[seed])
