"""The memory tasks: RepeatPrevious's optimal and chance returns, StatelessCartPole
is CartPole without its velocities, and their kwargs are checked by name and value."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nnxrl.envs import EnvConfig, check_env_config, known_env_ids, make_env
from nnxrl.schema import ConfigError


def episode_returns(env, policy, steps: int) -> np.ndarray:
    """Every finished episode's return over ``steps`` steps of ``policy(history)``,
    history [k+1, B, obs] the observations of the last k+1 steps (newest last)."""
    obs, state = env.reset(jax.random.key(0))
    step = jax.jit(env.step)
    history, returns = [obs], []
    for t in range(steps):
        action = policy(history)
        state, out = step(jax.random.key(t + 1), state, action)
        done = np.asarray(out.terminated | out.truncated)
        returns += list(np.asarray(out.episode["return"])[done])
        history.append(out.obs)
    return np.asarray(returns)


@pytest.mark.parametrize("delay", [1, 3])
def test_repeat_previous_rewards_remembering_k_steps(delay):
    length, symbols, envs = 12, 4, 32
    env = make_env(
        EnvConfig(
            id="RepeatPrevious-v0",
            num_envs=envs,
            kwargs={"delay": delay, "symbols": symbols, "length": length},
        )
    )
    assert env.spec.obs_shape == (symbols,) and env.spec.num_actions == symbols

    def remembers(history):  # episodes are aligned: all envs start together
        t = (len(history) - 1) % length
        return jnp.argmax(history[-1 - delay], -1) if t >= delay else jnp.zeros(envs, jnp.int32)

    best = episode_returns(env, remembers, 3 * length)
    np.testing.assert_allclose(best, 1.0, rtol=1e-5)
    assert len(best) == 3 * envs
    chance = episode_returns(env, lambda h: jnp.zeros(envs, jnp.int32), 20 * length)
    assert abs(chance.mean() - 1 / symbols) < 0.05  # a memoryless policy's best in expectation
    now = episode_returns(env, lambda h: jnp.argmax(h[-1], -1), 20 * length)
    assert abs(now.mean() - 1 / symbols) < 0.05  # naming what it sees now is no better


def test_stateless_cartpole_is_cartpole_without_its_velocities():
    hidden = make_env(EnvConfig(id="StatelessCartPole-v1", num_envs=3))
    full = make_env(EnvConfig(id="CartPole-v1", num_envs=3))
    assert hidden.spec.obs_shape == (2,) and hidden.spec.num_actions == 2
    (obs_h, state_h), (obs_f, state_f) = (
        hidden.reset(jax.random.key(5)),
        full.reset(jax.random.key(5)),
    )
    np.testing.assert_array_equal(obs_h, obs_f[:, [0, 2]])
    action = jnp.array([0, 1, 1])
    (_, out_h), (_, out_f) = (
        hidden.step(jax.random.key(6), state_h, action),
        full.step(jax.random.key(6), state_f, action),
    )
    np.testing.assert_array_equal(out_h.obs, out_f.obs[:, [0, 2]])
    np.testing.assert_array_equal(out_h.reward, out_f.reward)


def test_the_memory_tasks_are_a_family_and_their_kwargs_are_checked():
    assert set(known_env_ids(with_brax=False)["memory"]) == {
        "RepeatPrevious-v0",
        "StatelessCartPole-v1",
    }
    with pytest.raises(
        ConfigError,
        match=r"env.kwargs: RepeatPrevious-v0 takes no delai; it takes delay, symbols, length",
    ):
        check_env_config(EnvConfig(id="RepeatPrevious-v0", kwargs={"delai": 2}))
    with pytest.raises(
        ConfigError, match=r"env.kwargs: RepeatPrevious-v0: needs 1 <= delay < length"
    ):
        check_env_config(EnvConfig(id="RepeatPrevious-v0", kwargs={"delay": 16, "length": 16}))
    with pytest.raises(ConfigError, match="takes no kwargs"):
        check_env_config(EnvConfig(id="StatelessCartPole-v1", kwargs={"delay": 2}))
