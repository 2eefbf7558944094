"""Intrinsic-motivation add-ons: each bonus against its definition, each learner
learning, the algorithm's generic consumption of the bonus, and the interface."""

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cli_runs import TINY_CARTPOLE, TINY_CRAFTAX, train
from flax import struct

from nnxrl import config as config_lib
from nnxrl.algos.actor_critic import gae_per_stream
from nnxrl.algos.on_policy import Transition
from nnxrl.cli import main
from nnxrl.config import setting
from nnxrl.intrinsic import AddonContext, Experience, make_addon, register
from nnxrl.intrinsic.base import Addon
from nnxrl.intrinsic.e3b import elliptical_bonus
from nnxrl.run.algorithms import hyperparams_from


def context(obs_shape=(6,), num_actions=3, num_envs=8, **kw):
    args = dict(
        obs_shape=obs_shape,
        num_actions=num_actions,
        num_envs=num_envs,
        learning_rate=1e-3,
        adam_eps=1e-5,
        max_grad_norm=1.0,
        num_epochs=2,
        num_minibatches=2,
    )
    return AddonContext(**{**args, **kw})


def build(name, options, ctx):
    addon = make_addon(name, options, ctx)
    state = jax.jit(addon.init)(jax.random.key(1))
    return addon, state


# --------------------------------------------------------------------------------------
# E3B
# --------------------------------------------------------------------------------------


def direct_e3b(x, ends, ridge):
    """Bonus and final inverse covariance from scratch: for each step, invert
    ridge*I + sum of x x^T over the current episode's earlier steps."""
    t_len, b_len, d = x.shape
    bonus = np.zeros((t_len, b_len))
    finals = []
    for b in range(b_len):
        episode = []
        for t in range(t_len):
            if ends[t, b]:
                episode = []
            cov = ridge * np.eye(d) + sum((np.outer(v, v) for v in episode), np.zeros((d, d)))
            if not ends[t, b]:
                bonus[t, b] = x[t, b] @ np.linalg.inv(cov) @ x[t, b]
            episode.append(x[t, b])
        cov = ridge * np.eye(d) + sum((np.outer(v, v) for v in episode), np.zeros((d, d)))
        finals.append(np.linalg.inv(cov))
    return bonus, np.stack(finals)


def test_e3b_sherman_morrison_matches_direct_inverse_across_resets_and_batches():
    rng = np.random.default_rng(0)
    t_len, b_len, d, ridge = 12, 3, 4, 0.1
    x = rng.normal(size=(t_len, b_len, d)).astype(np.float32) * 0.5
    ends = np.zeros((t_len, b_len), bool)
    ends[4, 0] = ends[9, 0] = True  # two resets inside the batch for env 0
    ends[6, 1] = True  # env 1 resets in the second half; env 2 never
    expected_bonus, expected_final = direct_e3b(x.astype(np.float64), ends, ridge)

    start = jnp.broadcast_to(jnp.eye(d) / ridge, (b_len, d, d))
    with jax.default_matmul_precision("highest"):
        m1, bonus1 = elliptical_bonus(start, jnp.asarray(x[:6]), jnp.asarray(ends[:6]), ridge)
        m2, bonus2 = elliptical_bonus(m1, jnp.asarray(x[6:]), jnp.asarray(ends[6:]), ridge)
    bonus = np.concatenate([bonus1, bonus2])
    np.testing.assert_allclose(bonus, expected_bonus, rtol=2e-4, atol=1e-4)
    np.testing.assert_allclose(m2, expected_final, rtol=2e-4, atol=1e-4)
    assert np.all(bonus[ends] == 0.0) and np.all(bonus[~ends] > 0.0)


def test_e3b_addon_carries_its_inverse_covariance_between_rollouts():
    addon, state = build("e3b", {"latent_size": 4, "width": 16}, context(num_envs=2))
    rng = np.random.default_rng(1)
    obs = jnp.asarray(rng.normal(size=(5, 2, 6)), jnp.float32)
    experience = Experience(obs, jnp.zeros((4, 2), jnp.int32), jnp.zeros((4, 2), bool))
    state1, bonus1, metrics = addon.reward(state, experience)
    state2, bonus2, _ = addon.reward(state1, experience)
    # the same states again in the same episode are less novel
    assert float(bonus2.mean()) < 0.5 * float(bonus1.mean())
    assert not np.allclose(state1.inverse_covariance, state.inverse_covariance)
    assert {"intrinsic/e3b_bonus_mean", "intrinsic/e3b_bonus_std"} <= set(metrics)


# --------------------------------------------------------------------------------------
# ICM
# --------------------------------------------------------------------------------------


def controllable_rollout(key, t_len=16, b_len=8, obs_dim=6, num_actions=3):
    """s_{t+1} = s_t + E[a_t] except at episode ends, where s_{t+1} is a fresh draw:
    the action is recoverable from two consecutive observations."""
    k_obs, k_act, k_effect, k_reset = jax.random.split(key, 4)
    effects = jax.random.normal(k_effect, (num_actions, obs_dim))
    actions = jax.random.randint(k_act, (t_len, b_len), 0, num_actions)
    ends = jnp.zeros((t_len, b_len), bool).at[5, :].set(True).at[11, ::2].set(True)
    resets = jax.random.normal(k_reset, (t_len, b_len, obs_dim))
    s0 = jax.random.normal(k_obs, (b_len, obs_dim))

    def step(s, inputs):
        a, end, fresh = inputs
        nxt = jnp.where(end[:, None], fresh, 0.9 * s + effects[a])
        return nxt, nxt

    _, following = jax.lax.scan(step, s0, (actions, ends, resets))
    return Experience(jnp.concatenate([s0[None], following]), actions, ends)


def test_icm_losses_fall_on_a_fixed_batch_and_no_bonus_across_episode_ends():
    addon, state = build("icm", {"latent_size": 8, "width": 64}, context())
    experience = controllable_rollout(jax.random.key(3))
    update = jax.jit(addon.update)
    _, bonus, _ = jax.jit(addon.reward)(state, experience)
    assert np.all(np.asarray(bonus)[np.asarray(experience.episode_end)] == 0.0)
    assert np.all(np.asarray(bonus)[~np.asarray(experience.episode_end)] > 0.0)
    history = []
    for i in range(60):
        state, metrics = update(state, experience, jax.random.key(i))
        history.append(metrics)
    first, last = history[0], history[-1]
    assert last["intrinsic/icm_inverse_loss"] < 0.5 * first["intrinsic/icm_inverse_loss"]
    assert last["intrinsic/icm_forward_loss"] < 0.5 * first["intrinsic/icm_forward_loss"]
    assert last["intrinsic/icm_inverse_accuracy"] > 0.9


# --------------------------------------------------------------------------------------
# RND
# --------------------------------------------------------------------------------------


def test_rnd_bonus_falls_on_states_it_trained_on_and_stays_high_on_new_ones():
    options = {"width": 64, "output_size": 32, "normalize_reward": False}
    addon, state = build("rnd", options, context(obs_shape=(32,), num_envs=16))
    rng = np.random.default_rng(0)
    seen = rng.normal(size=(9, 16, 32)).astype(np.float32)  # 9 x 16 states, always the same
    unseen = rng.normal(size=(9, 16, 32)).astype(np.float32)  # from the same distribution
    no_ends = jnp.zeros((8, 16), bool)
    actions = jnp.zeros((8, 16), jnp.int32)
    train = Experience(jnp.asarray(seen), actions, no_ends)
    reward, update = jax.jit(addon.reward), jax.jit(addon.update)
    for i in range(200):
        state, _, _ = reward(state, train)
        state, metrics = update(state, train, jax.random.key(i))
    # score seen (envs 0-7) and unseen (envs 8-15) states in one call, same statistics
    mixed = Experience(
        jnp.asarray(np.concatenate([seen[:, :8], unseen[:, :8]], axis=1)), actions, no_ends
    )
    _, bonus, metrics = addon.reward(state, mixed)
    seen_bonus, unseen_bonus = float(bonus[:, :8].mean()), float(bonus[:, 8:].mean())
    assert seen_bonus < 0.2 * unseen_bonus, (seen_bonus, unseen_bonus)
    assert metrics["intrinsic/rnd_obs_std"] > 0


def test_rnd_reward_normalisation_divides_by_the_running_return_std():
    addon, state = build("rnd", {"width": 16, "output_size": 8}, context(num_envs=4))
    obs = jnp.asarray(np.random.default_rng(0).normal(size=(5, 4, 6)), jnp.float32)
    experience = Experience(obs, jnp.zeros((4, 4), jnp.int32), jnp.zeros((4, 4), bool))
    new_state, bonus, metrics = addon.reward(state, experience)
    raw = metrics["intrinsic/rnd_error"]
    np.testing.assert_allclose(
        float(bonus.mean()), float(raw) / float(metrics["intrinsic/rnd_return_std"]), rtol=1e-4
    )
    assert new_state.return_moments.count > state.return_moments.count


# --------------------------------------------------------------------------------------
# The algorithm's side: intrinsic GAE, no add-on names, a toy add-on
# --------------------------------------------------------------------------------------


def python_gae(rewards, values, next_values, cut, gamma, lam):
    adv, out = 0.0, []
    for t in reversed(range(len(rewards))):
        delta = rewards[t] + gamma * (0.0 if cut[t] else next_values[t]) - values[t]
        adv = delta + gamma * lam * (0.0 if cut[t] else adv)
        out.append(adv)
    return np.array(out[::-1])


def test_non_episodic_intrinsic_gae_bootstraps_with_the_intrinsic_value_through_ends():
    rng = np.random.default_rng(0)
    t_len = 7
    values = rng.normal(size=(t_len, 1, 2)).astype(np.float32)
    rewards = rng.normal(size=(t_len, 1, 2)).astype(np.float32)
    terminated = np.zeros((t_len, 1), bool)
    truncated = np.zeros((t_len, 1), bool)
    terminated[2, 0] = truncated[5, 0] = True
    final_value = rng.normal(size=(t_len, 1, 2)).astype(np.float32)
    last_value = np.array([[10.0, -20.0]], np.float32)
    trajectory = Transition(
        obs=None,
        hidden=None,
        start=None,
        action=None,
        value=jnp.asarray(values),
        reward=None,
        terminated=jnp.asarray(terminated),
        truncated=jnp.asarray(truncated),
        final_value=jnp.asarray(final_value),
        episode=None,
        record={},
    )
    config = config_lib.from_dict(
        {"intrinsic": {"gamma": 0.9, "mode": "value_head"}, "ppo": {"gae_lambda": 0.8}}
    )
    hp = hyperparams_from(config)
    adv, targets = gae_per_stream(
        trajectory, jnp.asarray(rewards), jnp.asarray(last_value), hp, (True, False)
    )
    v_int = values[:, 0, 1]
    following = np.append(v_int[1:], last_value[0, 1])  # never the extrinsic value
    expected = python_gae(rewards[:, 0, 1], v_int, following, [False] * t_len, 0.9, 0.8)
    np.testing.assert_allclose(adv[:, 0, 1], expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(targets[:, 0, 1], expected + v_int, rtol=1e-5, atol=1e-5)
    # the extrinsic stream still cuts at the termination and bootstraps the truncation
    v_ext = values[:, 0, 0]
    nxt = np.append(v_ext[1:], last_value[0, 0])
    nxt[5] = final_value[5, 0, 0]
    ends = terminated[:, 0] | truncated[:, 0]
    expected_ext = []
    a = 0.0
    for t in reversed(range(t_len)):
        delta = rewards[t, 0, 0] + 0.99 * (0.0 if terminated[t, 0] else nxt[t]) - v_ext[t]
        a = delta + 0.99 * 0.8 * (0.0 if ends[t] else a)
        expected_ext.append(a)
    np.testing.assert_allclose(adv[:, 0, 0], expected_ext[::-1], rtol=1e-5, atol=1e-5)
    # an episodic intrinsic stream does cut at the ends
    episodic, _ = gae_per_stream(
        trajectory, jnp.asarray(rewards), jnp.asarray(last_value), hp, (True, True)
    )
    assert not np.allclose(episodic[:, 0, 1], adv[:, 0, 1])


def test_algorithms_never_name_an_addon():
    algos = Path(__file__).parents[1] / "src" / "nnxrl" / "algos"
    sources = list(algos.glob("*.py"))
    assert sources
    for path in sources:
        hits = re.findall(r"\b(icm|e3b|rnd)\b", path.read_text(), flags=re.IGNORECASE)
        assert not hits, (path.name, hits)
    addons = list((algos.parent / "intrinsic").glob("*.py"))
    assert len(addons) >= 5
    for path in addons:  # and no add-on imports an algorithm
        assert "nnxrl.algos" not in path.read_text(), path.name


@dataclass(frozen=True)
class CountOptions:
    bonus: float = setting(0.5, "The constant bonus per step.")


@struct.dataclass
class CountState:
    rollouts: jax.Array


def make_count_addon(options: CountOptions, ctx: AddonContext) -> Addon:
    """A toy add-on: a constant bonus, and a counter of the rollouts it learned from."""

    def reward(state, experience):
        bonus = jnp.full(experience.action.shape, options.bonus)
        return state, bonus, {"intrinsic/count_rollouts": state.rollouts.astype(jnp.float32)}

    def update(state, experience, key):
        return state.replace(rollouts=state.rollouts + 1), {}

    return Addon(
        init=lambda key: CountState(rollouts=jnp.int32(0)),
        reward=reward,
        update=update,
    )


@pytest.mark.parametrize("algo,steps", [("ppo", 2048), ("pqn", 8192)])
def test_an_addon_defined_outside_the_package_plugs_into_either_algorithm(tmp_path, algo, steps):
    register("count", CountOptions, make_count_addon)
    args = ["train", f"configs/{algo}-cartpole.yaml", "--out", str(tmp_path)]
    overrides = [
        f"total_env_steps={steps}",
        "logging.backends=[]",
        "intrinsic.addon=count",
        "intrinsic.options={bonus: 0.25}",
        "intrinsic.reward_coef=2.0",
    ]
    assert main(args + sum((["--set", s] for s in overrides), [])) == 0
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["intrinsic/count_rollouts"] for r in records] == [0, 1, 2, 3]
    assert all(r["reward/intrinsic"] == 0.25 for r in records)
    # a bad option of the add-on names the key
    with pytest.raises(config_lib.ConfigError, match="intrinsic.options.bonsu"):
        config_lib.check_parts(
            config_lib.from_dict({"intrinsic": {"addon": "count", "options": {"bonsu": 1}}})
        )


def test_an_addon_registered_again_under_its_name_is_compiled_again(tmp_path, monkeypatch):
    """A saved program (store/saved_programs.py) is never loaded for another function
    registered under a name its config uses: the stale add-on ran before."""
    # saved programs on, as for a script (a test worker's main module is a -c string)
    monkeypatch.setattr(sys.modules["__main__"], "__file__", "train.py", raising=False)

    def make_doubled(options: CountOptions, ctx: AddonContext) -> Addon:
        return make_count_addon(CountOptions(bonus=2 * options.bonus), ctx)

    overrides = ["intrinsic.addon=count", "intrinsic.options={bonus: 0.25}"]
    overrides += ["total_env_steps=512", "ppo.num_steps=16", "logging.backends=[]"]
    overrides += [f"compile_cache.dir={tmp_path / 'cache'}", "fast_compile=true"]
    bonuses = []
    try:
        for factory, out in ((make_count_addon, "once"), (make_doubled, "again")):
            register("count", CountOptions, factory)
            records = train(tmp_path / out, "configs/ppo-cartpole.yaml", overrides)
            bonuses.append({r["reward/intrinsic"] for r in records})
    finally:
        register("count", CountOptions, make_count_addon)
    assert bonuses == [{0.25}, {0.5}]


# --------------------------------------------------------------------------------------
# Shipped configs end to end
# --------------------------------------------------------------------------------------

METRICS = {
    "icm": "intrinsic/icm_forward_loss",
    "e3b": "intrinsic/e3b_bonus_mean",
    "rnd": "intrinsic/rnd_loss",
}


@pytest.mark.parametrize("addon", ["icm", "e3b", "rnd"])
@pytest.mark.parametrize("env", ["craftax", "gymnax"])
def test_shipped_addon_configs_run_through_the_cli(tmp_path, addon, env):
    overrides = TINY_CRAFTAX + ["intrinsic.num_epochs=1"] if env == "craftax" else TINY_CARTPOLE
    records = train(tmp_path, f"configs/{addon}-craftax-classic-symbolic.yaml", overrides)
    assert [r["update"] for r in records] == [1, 2]
    for r in records:
        assert np.isfinite(r[METRICS[addon]]) and np.isfinite(r["loss/total"])
        assert r["reward/intrinsic"] > 0
    if addon == "rnd":
        assert np.isfinite(records[-1]["loss/value_intrinsic"])
