"""The public Python API: train from code (writing nothing, or a run directory), the
result's arrays, acting with a saved policy, evaluating, rendering and plotting, the
version."""

from __future__ import annotations

import tomllib
from pathlib import Path

import jax
import numpy as np
import pytest

import nnxrl
from nnxrl.config import schedule
from nnxrl.errors import Stopped

ROOT = Path(__file__).parents[1]
TINY = ["total_env_steps=4096", "num_seeds=2", "logging.backends=[]", "fast_compile=true"]


def test_train_in_memory_writes_nothing_and_matches_a_written_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = nnxrl.load_config(ROOT / "configs/ppo-cartpole.yaml", TINY)
    result = nnxrl.train(config)
    assert list(tmp_path.iterdir()) == [] and result.out_dir is None
    assert result.metrics["loss/total"].shape == (2, schedule.num_updates(config))
    assert list(result.metrics["update"]) == list(range(1, schedule.num_updates(config) + 1))
    assert all(x.shape[0] == 2 for x in jax.tree.leaves(result.params))
    written = nnxrl.train(config, tmp_path / "run")
    assert written.out_dir == tmp_path / "run" and (tmp_path / "run" / "metrics.jsonl").exists()
    for name, values in result.metrics.items():
        np.testing.assert_array_equal(values, written.metrics[name], err_msg=name)


def test_a_resumed_runs_metrics_hold_the_updates_before_its_start(tmp_path):
    """RunResult.metrics of a run with files is its metrics.jsonl, read back on first
    use (an endless run keeps no record in memory: benchmarks/soak.py): a resumed
    run's holds the whole history, equal to an uninterrupted run's kept in memory."""
    config = nnxrl.load_config(ROOT / "configs/ppo-cartpole.yaml", TINY)
    alone = nnxrl.train(config)
    with pytest.raises(Stopped):
        nnxrl.train(config, tmp_path / "run", stop_after=schedule.num_updates(config) // 2)
    resumed = nnxrl.train(config, tmp_path / "run", resume=True)
    assert resumed.records is None and alone.records is not None
    assert list(resumed.metrics["update"]) == list(range(1, schedule.num_updates(config) + 1))
    for name, values in alone.metrics.items():
        np.testing.assert_array_equal(values, resumed.metrics[name], err_msg=name)


def test_a_saved_policy_acts_like_its_checkpoint(tmp_path):
    overrides = [*TINY, "network.kind=gru", "network.width=16"]
    config = nnxrl.load_config(ROOT / "configs/ppo-cartpole.yaml", overrides)
    nnxrl.train(config, tmp_path / "run")
    saved = nnxrl.load_policy(tmp_path / "run" / "policy")
    checkpointed = nnxrl.policy_from_checkpoint(tmp_path / "run")
    env = nnxrl.make_env(config.env)
    obs, _ = env.reset(jax.random.key(0))
    key = jax.random.key(1)
    for seed in (0, 1):
        a, hidden = saved.act(obs, key, seed=seed, greedy=True)
        b, _ = checkpointed.act(obs, key, seed=seed, greedy=True)
        np.testing.assert_array_equal(a, b)
        assert a.shape == (config.env.num_envs,) and hidden.shape == (config.env.num_envs, 16)
        again, _ = saved.act(obs, key, seed=seed, greedy=True, hidden=hidden)  # carried on
        assert again.shape == a.shape


def test_evaluate_render_plot_and_export_are_functions(tmp_path):
    """What eval, render, plot and export print or write, from code, with typed
    results; ``policy_at`` opens a run's policy or an exported one alike."""
    config = nnxrl.load_config(ROOT / "configs/ppo-cartpole.yaml", TINY)
    nnxrl.train(config, tmp_path / "run")
    policy = nnxrl.load_policy(tmp_path / "run" / "policy")
    report = nnxrl.evaluate(policy, episodes=3, greedy=True)
    assert isinstance(report, nnxrl.Evaluation) and report.actions == "greedy"
    assert [row["episodes"] for row in report.seeds] == [3, 3]
    assert all(row["return_mean"] >= 8 for row in report.seeds)  # CartPole lasts >= 8 steps
    episode = nnxrl.render(policy, 1, tmp_path / "episode.gif", jax.random.key(0), greedy=True)
    assert episode["frames"] == episode["length"] > 0 and (tmp_path / "episode.gif").is_file()
    drawn = nnxrl.plot([tmp_path / "run"], out=tmp_path / "curves.png")
    assert (tmp_path / "curves.png").stat().st_size > 0 and drawn["labels"]
    out, exported = nnxrl.export_policy(tmp_path / "run", tmp_path / "exported")
    assert out == tmp_path / "exported" and (out / "policy.yaml").is_file()
    expected = jax.tree.leaves(exported.params)
    for opened in (nnxrl.policy_at(out), nnxrl.policy_at(tmp_path / "run")):
        for a, b in zip(jax.tree.leaves(opened.params), expected, strict=True):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(nnxrl.ConfigError, match="--epsilon"):  # PPO's head takes none
        nnxrl.policy_at(out, epsilon=0.1)


def test_the_version_is_the_package_version():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert nnxrl.__version__ == meta["project"]["version"]
