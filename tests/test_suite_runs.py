"""Each suite's shipped config, shrunk, trained through the CLI with an add-on, a sweep
and its envs split over two devices (what every env takes, a suite's too): finite
losses, episodes that end, a policy that evaluates and renders, and a run stopped
part-way that resumes to the uninterrupted run's metrics and parameters exactly. Each
skips without its extra."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest
from cli_runs import ROOT, sets
from PIL import Image

from nnxrl.agent.policy import load_policy
from nnxrl.cli import main
from nnxrl.logging.jsonl import read_records

# config, its package, overrides: episodes that end within the run, and an add-on
RUNS = {
    "jumanji": (
        "ppo-jumanji-snake",
        "jumanji",
        ["env.kwargs={time_limit: 20}", "intrinsic.addon=rnd"],
    ),
    "xland": (
        "pqn-xland-empty",
        "xminigrid",
        ["env.kwargs={max_steps: 12}", "intrinsic.addon=rnd"],
    ),
    "navix": ("ppo-navix-empty", "navix", ["env.kwargs={max_steps: 12}", "intrinsic.addon=icm"]),
    # random 2048 games end in about 100 moves
    "pgx": ("ppo-pgx-2048", "pgx", ["intrinsic.addon=e3b"]),
}


def tiny(algo: str) -> list[str]:
    """4 updates of 8 envs x 32 steps, a checkpoint every 2; a sweep of two learning
    rates in the program, each setting's envs split over the two devices; compiled
    fast (fast_compile), as nothing here is timed."""
    return [
        f"sweep.grid={{{algo}.learning_rate: [1.0e-4, 3.0e-4]}}",
        "mesh.envs=2",
        "env.num_envs=8",
        f"{algo}.num_steps=32",
        f"{algo}.num_minibatches=2",
        f"{algo}.num_epochs=1",
        "network.width=32",
        "total_env_steps=1024",
        "logging.backends=[]",
        "logging.updates_per_chunk=1",
        "checkpoint.every_updates=2",
        "fast_compile=true",
    ]


@pytest.mark.parametrize("suite", list(RUNS))
def test_a_suites_shipped_config_trains_evaluates_and_resumes_exactly(suite, tmp_path, capsys):
    name, package, overrides = RUNS[suite]
    pytest.importorskip(package)
    config = str(ROOT / "configs" / f"{name}.yaml")
    overrides = sets(tiny(name.split("-")[0]) + overrides)
    whole, split = tmp_path / "whole", tmp_path / "split"
    assert main(["train", config, "--out", str(whole), *overrides]) == 0
    records = read_records(whole / "metrics.jsonl")
    assert sorted({r["update"] for r in records}) == [1, 2, 3, 4]
    assert all(np.isfinite(r["loss/total"]) for r in records)
    assert sum(r["episode_count"] for r in records) > 0, "episodes must end"
    assert all(r["reward/intrinsic"] > 0 for r in records)  # the add-on's bonus
    assert {r["setting"] for r in records} == {0, 1}  # both settings of the sweep
    args = ["train", config, "--out", str(split), "--stop-after", "2", *overrides]
    assert main(args) == 130
    assert main(["train", "--resume", str(split), "--set", "logging.backends=[]"]) == 0
    assert (whole / "metrics.jsonl").read_bytes() == (split / "metrics.jsonl").read_bytes()
    a, b = load_policy(whole / "policy"), load_policy(split / "policy")
    for x, y in zip(jax.tree.leaves(a.params), jax.tree.leaves(b.params), strict=True):
        np.testing.assert_array_equal(x, y)
    report = tmp_path / "eval.json"
    policy_args = ["--setting", "1", "--fast-compile"]  # a sweep's policy is one setting's
    assert main(["eval", str(whole), "--episodes", "2", "--json", str(report), *policy_args]) == 0
    assert json.loads(report.read_text())["seeds"][0]["episodes"] == 2
    gif = tmp_path / "episode.gif"  # drawn by the suite's own renderer where it has one
    assert main(["render", str(whole), "--out", str(gif), *policy_args]) == 0
    with Image.open(gif) as image:
        assert image.n_frames > 1


def random_play_return(env_id: str, episodes_from: int = 64, steps: int = 1500) -> float:
    """The mean return of uniformly random legal play: ``episodes_from`` envs for
    ``steps`` steps (pgx:2048: about 780 games, mean 1080)."""
    import jax.numpy as jnp

    from nnxrl.config import EnvConfig
    from nnxrl.envs import make_env

    env = make_env(EnvConfig(id=env_id, num_envs=episodes_from))
    _, state = env.reset(jax.random.key(0))

    def step(state, key):
        action_key, step_key = jax.random.split(key)
        logits = jnp.where(env.action_mask(state), 0.0, -jnp.inf)
        action = jax.random.categorical(action_key, logits).astype(jnp.int32)
        state, out = env.step(step_key, state, action)
        return state, (out.terminated | out.truncated, out.episode["return"])

    keys = jax.random.split(jax.random.key(1), steps)
    _, (ended, returns) = jax.jit(lambda k: jax.lax.scan(step, state, k))(keys)
    return float(np.asarray(returns)[np.asarray(ended)].mean())


@pytest.mark.learning
def test_ppo_on_2048_beats_random_legal_play(tmp_path, seed_offset):
    """PPO on the masked 2048 (its shipped config at 64 envs, 262,144 env steps, 2 seeds
    in one program, one per device): the return of the last 100 training episodes
    averages over 1.5x that of random legal play (about 1080), and every seed's is over
    1.2x. Measured at seed offsets 0, 1000 and 2000: 3.6x and 4.6x, 3.2x and 4.1x, 3.4x
    and 1.6x (3 seeds at offset 0: 4.4x, 3.9x, 2.2x; 3 seeds share one of the two
    devices and cost 1.5x the CPU time of 2). A sweep of these settings over 3 seeds
    ended at 4056 [3806, 4297] (3.8x), and at the earlier learning rate of 3e-4 one
    offset had two seeds at 1.1x and 1.3x: the claim is about this config, not PPO on
    2048 at any setting."""
    pytest.importorskip("pgx")
    overrides = [
        "env.num_envs=64",
        "ppo.num_steps=32",
        "ppo.num_minibatches=4",
        "network.width=128",
        "total_env_steps=262144",
        "num_seeds=2",
        f"seed={seed_offset}",
        "logging.backends=[]",
    ]
    config = str(ROOT / "configs/ppo-pgx-2048.yaml")
    assert main(["train", config, "--out", str(tmp_path), *sets(overrides)]) == 0
    records = read_records(tmp_path / "metrics.jsonl")
    last = max(r["update"] for r in records)
    finals = np.array([r["episode_return_window"] for r in records if r["update"] == last])
    random_return = random_play_return("pgx:2048")
    assert 900 < random_return < 1300, random_return  # the baseline is what was measured
    ratios = finals / random_return
    assert len(ratios) == 2 and ratios.mean() > 1.5 and (ratios > 1.2).all(), ratios
