"""Continuous actions: the Gaussian and tanh-squashed distributions against closed
forms, observation and reward normalisation (statistics, resume, export), config
refusals, the add-ons and rendering on Pendulum, and (marked) learning Pendulum."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import nnxrl
from nnxrl import config as config_lib
from nnxrl.agent.policy import policy_of
from nnxrl.algos.normalization import init_normalizer, scale_rewards, update_obs
from nnxrl.cli import main
from nnxrl.logging.jsonl import read_records
from nnxrl.networks import DiagGaussian, TanhGaussian
from nnxrl.store import checkpoint

ROOT = Path(__file__).parents[1]
PENDULUM = str(ROOT / "configs/ppo-pendulum.yaml")
SHORT = [  # 4 updates of 16 envs x 32 steps, checkpoints every 2, compiled fast
    "fast_compile=true",
    "total_env_steps=2048",
    "ppo.num_steps=32",
    "ppo.num_minibatches=4",
    "ppo.num_epochs=2",
    "num_seeds=2",
    "logging.updates_per_chunk=2",
    "checkpoint.every_updates=2",
    "logging.backends=[]",
]


def test_gaussian_log_prob_and_entropy_match_the_closed_forms():
    mean = jnp.asarray([[0.3, -1.0], [2.0, 0.5]])
    log_std = jnp.asarray([[-0.5, 0.2], [0.0, -1.0]])
    action = jnp.asarray([[0.1, -0.4], [2.5, 0.3]])
    dist = DiagGaussian(mean, log_std)
    want = stats.norm.logpdf(action, mean, np.exp(log_std)).sum(-1)
    np.testing.assert_allclose(dist.log_prob(action), want, rtol=1e-5)
    np.testing.assert_allclose(
        dist.entropy(), stats.norm.entropy(mean, np.exp(log_std)).sum(-1), rtol=1e-5
    )
    draws = jax.vmap(lambda k: dist.sample(k))(jax.random.split(jax.random.key(0), 20000))
    np.testing.assert_allclose(draws.mean(0), mean, atol=0.05)
    np.testing.assert_allclose(draws.std(0), np.exp(log_std), rtol=0.03)
    assert np.array_equal(dist.mode(), mean)


def test_tanh_log_prob_is_the_change_of_variables_by_finite_differences():
    low, high = jnp.asarray([-2.0, 0.0]), jnp.asarray([2.0, 1.0])
    dist = TanhGaussian(jnp.asarray([0.4, -0.3]), jnp.asarray([-0.2, 0.3]), low, high)
    for u in ([0.1, -0.7], [1.5, 0.2], [-2.5, 1.9]):
        u = np.asarray(u)
        action = dist.squash(jnp.asarray(u))
        eps = 1e-3  # d a_d / d u_d, the Jacobian's diagonal, by central differences
        jac = [
            (dist.squash(jnp.asarray(u + eps * e)) - dist.squash(jnp.asarray(u - eps * e)))[d]
            / (2 * eps)
            for d, e in enumerate(np.eye(2))
        ]
        want = stats.norm.logpdf(u, [0.4, -0.3], np.exp([-0.2, 0.3])).sum() - np.log(jac).sum()
        np.testing.assert_allclose(dist.log_prob(action), want, rtol=1e-3)
    draws = jax.vmap(dist.sample)(jax.random.split(jax.random.key(1), 20000))
    assert np.all((draws >= low) & (draws <= high))
    # the frequency of a < 0.5 in the first dimension equals the density's integral
    below = float((draws[:, 0] < 0.5).mean())
    u_edge = np.arctanh(0.5 / 2.0)
    assert below == pytest.approx(stats.norm.cdf(u_edge, 0.4, np.exp(-0.2)), abs=0.01)


def test_observation_moments_equal_the_statistics_of_everything_seen():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, (8, 4, 3)).astype(np.float32) for _ in range(5)]
    normalizer = init_normalizer((3,), 4, obs=True, reward=False)
    for batch in batches:
        normalizer = update_obs(normalizer, jnp.asarray(batch))
    everything = np.concatenate([b.reshape(-1, 3) for b in batches])
    np.testing.assert_allclose(normalizer.obs.mean, everything.mean(0), rtol=1e-4)
    np.testing.assert_allclose(normalizer.obs.var, everything.var(0), rtol=1e-3)


def test_rewards_are_scaled_by_the_spread_of_the_discounted_return():
    rewards = jnp.ones((6, 2))
    ends = jnp.zeros((6, 2), bool).at[2, 0].set(True)
    normalizer = init_normalizer((1,), 2, obs=False, reward=True)
    normalizer, scaled = scale_rewards(normalizer, rewards, ends, jnp.float32(0.5), 10.0)
    # returns per env: 1, 1.5, 1.75 (end) then 1, 1.5, 1.75; env 1: 1, 1.5, ..., 1.96875
    env0 = [1, 1.5, 1.75, 1, 1.5, 1.75]
    env1 = [1, 1.5, 1.75, 1.875, 1.9375, 1.96875]
    std = np.std(env0 + env1)
    np.testing.assert_allclose(scaled, np.ones((6, 2)) / std, rtol=1e-3)
    np.testing.assert_allclose(normalizer.discounted, [1.75, 1.96875])


@pytest.fixture(scope="module")
def pendulum_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pendulum") / "run"
    assert (
        main(["train", PENDULUM, "--out", str(out)] + sum((["--set", o] for o in SHORT), [])) == 0
    )
    return out


def test_a_normalised_run_resumes_bit_exactly(pendulum_run, tmp_path):
    out = tmp_path / "resumed"
    args = ["train", PENDULUM, "--out", str(out), *sum((["--set", o] for o in SHORT), [])]
    assert main([*args, "--stop-after", "2"]) == 130
    assert main(["train", "--resume", str(out)]) == 0
    assert read_records(out / "metrics.jsonl") == read_records(pendulum_run / "metrics.jsonl")
    got, meta = checkpoint.read_items(out, 4, with_state=True)
    want, _ = checkpoint.read_items(pendulum_run, 4, with_state=True)
    assert any(p.startswith(".normalizer.obs.mean") for p in meta["paths"])
    for name in want:
        np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(want[name]))


def test_the_exported_policy_normalises_as_the_checkpoint_does(pendulum_run, tmp_path):
    exported = nnxrl.load_policy(pendulum_run / "policy")
    from_checkpoint = nnxrl.policy_from_checkpoint(pendulum_run)
    assert exported.obs_moments is not None
    np.testing.assert_array_equal(exported.obs_moments.mean, from_checkpoint.obs_moments.mean)
    assert float(np.abs(exported.obs_moments.mean).max()) > 0.01  # moments were learned
    obs = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32) * 3
    for seed in (0, 1):
        a, _ = exported.act(obs, jax.random.key(0), seed=seed, greedy=True)
        b, _ = from_checkpoint.act(obs, jax.random.key(0), seed=seed, greedy=True)
        assert a.shape == (8, 1) and np.array_equal(a, b)
    reports = []
    for source in (pendulum_run, pendulum_run / "policy"):
        path = tmp_path / f"eval-{len(reports)}.json"
        assert main(["eval", str(source), "--episodes", "2", "--json", str(path)]) == 0
        reports.append(json.loads(path.read_text())["seeds"])
    assert reports[0] == reports[1]
    assert all(-2000 < s["return_mean"] < 0 and s["length_mean"] == 200 for s in reports[0])


def test_render_draws_pendulum(pendulum_run, tmp_path):
    from PIL import Image

    gif = tmp_path / "pendulum.gif"
    assert main(["render", str(pendulum_run), "--out", str(gif), "--greedy"]) == 0
    with Image.open(gif) as image:
        assert image.n_frames == 200
        image.seek(10)
        frame = np.asarray(image.convert("RGB"))
    assert (frame[..., 0] > 150).sum() > 100 and (frame[..., 1] < 100).sum() > 100  # the rod


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["algo=pqn", "env.id=Pendulum-v1"], "algo: pqn picks actions by argmax"),
        (
            ["env.id=CartPole-v1", "network.squash=tanh"],
            "network.squash: set, but env.id 'CartPole-v1'",
        ),
        (["env.id=Acrobot-v1", "network.log_std=state_dependent"], "network.log_std: set"),
    ],
)
def test_action_space_mismatches_are_refused_by_name(overrides, message):
    with pytest.raises(config_lib.ConfigError, match=message):
        config_lib.check_parts(config_lib.from_dict({}, overrides))


@pytest.mark.parametrize("addon", ["icm", "e3b", "rnd"])
def test_each_addon_runs_on_pendulum_through_the_cli(addon, tmp_path):
    out = tmp_path / addon
    overrides = [
        *SHORT,
        f"intrinsic.addon={addon}",
        "intrinsic.num_minibatches=4",
        "checkpoint.enabled=false",
    ]
    assert (
        main(["train", PENDULUM, "--out", str(out)] + sum((["--set", o] for o in overrides), []))
        == 0
    )
    records = read_records(out / "metrics.jsonl")
    assert len(records) == 8 and all(np.isfinite(r["loss/total"]) for r in records)
    assert all(r["reward/intrinsic"] is not None for r in records)
    if addon in ("icm", "e3b"):  # the inverse model predicts continuous actions (R^2)
        assert all(r[f"intrinsic/{addon}_inverse_accuracy"] <= 1.0 for r in records)


def test_tanh_squashed_state_dependent_policies_train_and_stay_in_bounds():
    overrides = [
        *SHORT,
        "network.squash=tanh",
        "network.log_std=state_dependent",
        "checkpoint.enabled=false",
    ]
    result = nnxrl.train(config_lib.load(PENDULUM, overrides))
    assert np.isfinite(result.metrics["loss/total"]).all()
    policy = policy_of(config_lib.load(PENDULUM, overrides), result.params)
    obs = np.random.default_rng(1).normal(size=(256, 3)).astype(np.float32) * 5
    actions, _ = policy.act(obs, jax.random.key(2), seed=0)
    assert np.all(np.abs(np.asarray(actions)) <= 2.0)


@pytest.mark.learning
def test_pendulum_four_seeds_reach_minus_250(seed_offset):
    """The shipped config, 4 seeds in one program: the mean return of the last 5 % of
    updates (over seeds) must be at least -250 (measured about -160)."""
    overrides = ["num_seeds=4", "logging.backends=[]", "checkpoint.enabled=false"]
    config = config_lib.load(PENDULUM, [*overrides, f"seed={seed_offset}"])
    result = nnxrl.train(config)
    returns = result.metrics["episode_return"]  # [seeds, updates]
    tail = returns[:, -max(1, returns.shape[1] // 20) :]
    assert np.nanmean(tail) >= -250, np.nanmean(tail, axis=1)


def test_a_brax_ant_smoke_run_writes_finite_metrics(tmp_path, capsys):
    """A few updates of the shipped Ant config, scaled down (skipped without the brax
    extra; CI installs it)."""
    pytest.importorskip("brax")
    out = tmp_path / "ant"
    overrides = [
        "env.num_envs=8",
        "ppo.num_steps=16",
        "ppo.num_minibatches=4",
        "ppo.num_epochs=2",
        "total_env_steps=512",
        "env.kwargs={backend: spring, episode_length: 24}",
        "logging.backends=[]",
        "fast_compile=true",
    ]
    args = ["train", str(ROOT / "configs/ppo-brax-ant.yaml"), "--out", str(out)]
    assert main(args + sum((["--set", o] for o in overrides), [])) == 0
    records = read_records(out / "metrics.jsonl")
    assert [r["update"] for r in records] == [1, 2, 3, 4]
    assert all(np.isfinite(r["loss/total"]) for r in records)
    assert max(r["episode_count"] for r in records) > 0  # episodes end (a fall, or 24 steps)
    policy = nnxrl.load_policy(out / "policy")
    assert policy.env.id == "brax:ant" and policy.obs_moments is not None
    actions, _ = policy.act(np.zeros((2, 27), np.float32), jax.random.key(0), greedy=True)
    assert actions.shape == (2, 8)
    gif = tmp_path / "ant.gif"  # drawn where OpenGL works, else a clear message
    code = main(["render", str(out), "--out", str(gif)])
    assert code == 0 or (code == 2 and "MuJoCo's OpenGL renderer" in capsys.readouterr().err)


def test_brax_ids_are_checked_by_name():
    pytest.importorskip("brax")
    with pytest.raises(config_lib.ConfigError, match="did you mean brax:ant"):
        config_lib.check_parts(config_lib.from_dict({"env": {"id": "brax:antt"}}))
    with pytest.raises(config_lib.ConfigError, match="env.kwargs.backend: 'bullet'"):
        config = config_lib.from_dict({"env": {"id": "brax:ant", "kwargs": {"backend": "bullet"}}})
        config_lib.check_parts(config)
