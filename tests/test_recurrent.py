"""Recurrent PPO: hidden-state resets, rollout/update consistency, sequence minibatches,
and end-to-end runs (Craftax config, an add-on with the recurrent policy)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cli_runs import TINY_CARTPOLE, TINY_CRAFTAX, train
from flax import nnx

from nnxrl import config as config_lib
from nnxrl.networks import RecurrentActorCritic
from nnxrl.ops.minibatch import shuffle_env_sequences


def small_network():
    return RecurrentActorCritic((5,), 3, 1, 16, "relu", (), rngs=nnx.Rngs(0), num_values=2)


def test_outputs_after_an_episode_start_equal_a_fresh_sequence_started_there():
    net = small_network()
    rng = np.random.default_rng(0)
    t_len, k = 9, 4
    obs = jnp.asarray(rng.normal(size=(t_len, 2, 5)), jnp.float32)
    start = jnp.zeros((t_len, 2), bool).at[k].set(True)
    hidden = jnp.asarray(rng.normal(size=(t_len, 2, 16)), jnp.float32)  # arbitrary history
    dist, value = net.unroll(hidden, obs, start)
    fresh_dist, fresh_value = net.unroll(
        jnp.zeros((t_len - k, 2, 16)), obs[k:], jnp.zeros((t_len - k, 2), bool)
    )
    np.testing.assert_allclose(dist.logits[k:], fresh_dist.logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(value[k:], fresh_value, rtol=1e-5, atol=1e-6)
    # ...and before the start, the history did matter
    _, other = net.unroll(jnp.zeros_like(hidden), obs, start)
    assert not np.allclose(value[:k], other[:k])


def test_stepping_one_step_at_a_time_equals_unrolling_the_sequence():
    """The rollout acts with step(); the update re-runs unroll() from the stored
    hidden state: both must give the same log-probabilities and values."""
    net = small_network()
    rng = np.random.default_rng(1)
    obs = jnp.asarray(rng.normal(size=(7, 3, 5)), jnp.float32)
    start = jnp.asarray(rng.random((7, 3)) < 0.3)
    h0 = jnp.asarray(rng.normal(size=(3, 16)), jnp.float32)

    def step(h, inputs):
        o, s = inputs
        h_next, dist, value = net.step(h, o, s)
        return h_next, (h, dist.logits, value)

    _, (hiddens, logits, values) = jax.lax.scan(step, h0, (obs, start))
    np.testing.assert_allclose(hiddens[0], h0)
    dist, value = net.unroll(hiddens, obs, start)
    np.testing.assert_allclose(dist.logits, logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(value, values, rtol=1e-5, atol=1e-6)


def test_sequence_minibatches_keep_each_envs_time_order():
    t_len, num_envs, m = 6, 8, 4
    steps = jnp.arange(t_len)[:, None] + 1000 * jnp.arange(num_envs)[None, :]  # [T, B]
    batch = {
        "x": steps,
        "longer": jnp.concatenate([steps, steps[-1:] + 1]),
        "feat": steps[..., None] * jnp.ones(3),
    }
    out = shuffle_env_sequences(jax.random.key(0), batch, m)
    assert out["x"].shape == (m, t_len, num_envs // m)
    assert out["longer"].shape == (m, t_len + 1, num_envs // m)
    assert out["feat"].shape == (m, t_len, num_envs // m, 3)
    envs = []
    for mb in range(m):
        for j in range(num_envs // m):
            seq = np.asarray(out["x"][mb, :, j])
            env = seq[0] // 1000
            np.testing.assert_array_equal(seq, 1000 * env + np.arange(t_len))  # in order
            np.testing.assert_array_equal(out["longer"][mb, :t_len, j], seq)  # same env
            envs.append(int(env))
    assert sorted(envs) == list(range(num_envs))  # every env exactly once
    assert envs != list(range(num_envs))  # and shuffled


def test_recurrent_minibatches_must_divide_the_envs():
    with pytest.raises(config_lib.ConfigError, match="ppo.num_minibatches"):
        config_lib.from_dict(
            {
                "network": {"kind": "gru"},
                "env": {"num_envs": 6},
                "ppo": {"num_minibatches": 4, "num_steps": 8},
            }
        )


def test_recurrent_craftax_config_runs_through_the_cli(tmp_path):
    records = train(tmp_path, "configs/ppo-rnn-craftax-classic-symbolic.yaml", TINY_CRAFTAX)
    assert [r["update"] for r in records] == [1, 2]
    for r in records:
        assert np.isfinite(r["loss/total"]) and "achievements/collect_wood" in r


def test_an_addon_config_works_unchanged_with_the_recurrent_policy(tmp_path):
    overrides = [*TINY_CARTPOLE, "network.kind=gru"]
    records = train(tmp_path, "configs/rnd-craftax-classic-symbolic.yaml", overrides)
    assert [r["update"] for r in records] == [1, 2]
    for r in records:
        assert np.isfinite(r["intrinsic/rnd_loss"]) and np.isfinite(r["loss/value_intrinsic"])
