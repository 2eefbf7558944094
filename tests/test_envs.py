import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nnxrl.config import EnvConfig
from nnxrl.envs import make_env
from nnxrl.envs.craftax_env import assign_resets


def run_random(env, steps, key=0):
    obs, state = env.reset(jax.random.key(key))

    def body(carry, key):
        state = carry
        a_key, s_key = jax.random.split(key)
        action = jax.random.randint(a_key, (env.num_envs,), 0, env.spec.num_actions)
        state, out = env.step(s_key, state, action)
        return state, out

    return jax.jit(lambda k: jax.lax.scan(body, state, jax.random.split(k, steps)))(
        jax.random.key(key + 1)
    )


def test_episode_statistics_count_returns_and_lengths():
    env = make_env(EnvConfig(id="CartPole-v1", num_envs=3))
    _, out = run_random(env, 200)
    ended = np.asarray(out.terminated | out.truncated)
    assert ended.any()
    rewards = np.asarray(out.reward)
    # CartPole pays 1 per step: the return of an ended episode equals its length,
    # and equals the number of steps since the previous end in that env.
    for b in range(3):
        last = -1
        for t in np.flatnonzero(ended[:, b]):
            assert out.episode["length"][t, b] == t - last
            np.testing.assert_allclose(
                out.episode["return"][t, b], rewards[last + 1 : t + 1, b].sum()
            )
            last = t


def test_truncation_is_reported_apart_from_termination():
    # DeepSea ends by time limit only after `size` steps; use CartPole with a short limit.
    env = make_env(EnvConfig(id="CartPole-v1", num_envs=2, kwargs={}))
    _, out = run_random(env, 50)
    assert not np.any(np.asarray(out.terminated & out.truncated))


def test_an_unknown_env_id_names_the_close_ones_and_where_to_list_every_suite():
    from nnxrl.config import ConfigError

    with pytest.raises(ConfigError) as e:
        make_env(EnvConfig(id="Cartpole-v1"))
    said = str(e.value)
    assert said.startswith("env.id: unknown environment 'Cartpole-v1'; did you mean CartPole-v1")
    assert said.endswith("nnxrl envs` lists the ids of every suite)") and len(said) < 300


def test_a_continuous_env_has_bounds_and_clips_actions_when_it_steps():
    env = make_env(EnvConfig(id="Pendulum-v1", num_envs=3))
    assert env.spec.continuous and env.spec.action_dim == 1 and env.spec.num_actions == 0
    assert env.spec.action_low == (-2.0,) and env.spec.action_high == (2.0,)
    obs, state = env.reset(jax.random.key(0))
    actions = jnp.asarray([[5.0], [-7.0], [0.5]])
    state, out = env.step(jax.random.key(1), state, actions)
    np.testing.assert_allclose(np.asarray(state.env_state.last_u).reshape(-1), [2.0, -2.0, 0.5])
    assert out.reward.shape == (3,) and obs.shape == (3, 3)


def test_assign_resets_gives_distinct_fresh_worlds():
    done = jnp.array([False, True, True, False, True, True, True])
    pick = np.asarray(assign_resets(done, 3))
    assert list(pick[np.asarray(done)]) == [0, 1, 2, 0, 1]


@pytest.mark.parametrize("env_id", ["Breakout-MinAtar", "DeepSea-bsuite", "Acrobot-v1"])
def test_gymnax_families_build(env_id):
    env = make_env(EnvConfig(id=env_id, num_envs=2))
    obs, _ = env.reset(jax.random.key(0))
    assert obs.shape == (2, *env.spec.obs_shape) and obs.dtype == jnp.float32
