"""env.previous_action_reward: each observation ends with the action that led to it
and the reward it earned, zeros at an episode's first step, the final observation
keeping its step's; refused by name for observations that are not flat."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nnxrl import config as config_lib
from nnxrl.cli import main
from nnxrl.envs import EnvConfig, make_env
from nnxrl.schema import ConfigError


def test_each_observation_carries_the_step_that_led_to_it():
    plain = make_env(EnvConfig(id="CartPole-v1", num_envs=8))
    env = make_env(EnvConfig(id="CartPole-v1", num_envs=8, previous_action_reward=True))
    assert env.spec.obs_shape == (4 + 2 + 1,)
    key = jax.random.key(0)
    obs, state = env.reset(key)
    plain_obs, plain_state = plain.reset(key)
    np.testing.assert_array_equal(obs[:, :4], plain_obs)
    np.testing.assert_array_equal(obs[:, 4:], 0.0)  # no step before the first
    step, plain_step = jax.jit(env.step), jax.jit(plain.step)
    ended = 0
    for t in range(60):
        action = jnp.asarray((np.arange(8) + t) % 2, jnp.int32)
        state, out = step(jax.random.key(t), state, action)
        plain_state, plain_out = plain_step(jax.random.key(t), plain_state, action)
        np.testing.assert_array_equal(out.obs[:, :4], plain_out.obs)  # the env is the same
        np.testing.assert_array_equal(out.reward, plain_out.reward)
        done = np.asarray(out.terminated | out.truncated)
        taken = np.stack([1 - action, action, out.reward], -1)
        np.testing.assert_array_equal(out.obs[~done, 4:], taken[~done])
        np.testing.assert_array_equal(out.obs[done, 4:], 0.0)  # a new episode's first
        np.testing.assert_array_equal(out.final_obs[:, 4:], taken)  # the old one's last
        np.testing.assert_array_equal(out.final_obs[:, :4], plain_out.final_obs)
        ended += done.sum()
    assert ended > 0  # episodes did end in the steps checked


def test_a_continuous_action_is_appended_within_its_bounds():
    env = make_env(EnvConfig(id="Pendulum-v1", num_envs=2, previous_action_reward=True))
    assert env.spec.obs_shape == (3 + 1 + 1,)
    obs, state = env.reset(jax.random.key(0))
    _, out = env.step(jax.random.key(1), state, jnp.array([[5.0], [-0.5]]))
    np.testing.assert_allclose(out.obs[:, 3], [2.0, -0.5])  # Pendulum's torque bound: 2
    np.testing.assert_allclose(out.obs[:, 4], out.reward)


def test_observations_that_are_not_flat_are_refused_by_name(tmp_path, capsys):
    overrides = ["env.id=Breakout-MinAtar", "env.previous_action_reward=true"]
    config = config_lib.load("configs/ppo-cartpole.yaml", overrides)
    with pytest.raises(ConfigError, match=r"env.previous_action_reward: .*\(10, 10, 4\)"):
        config_lib.check_parts(config)
    args = ["train", "configs/ppo-cartpole.yaml", "--out", str(tmp_path / "run")]
    assert main([*args, *(f"--set={o}" for o in overrides)]) == 2
    assert not (tmp_path / "run").exists()
    assert "env.previous_action_reward" in capsys.readouterr().err
