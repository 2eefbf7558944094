"""Recurrent PPO: hidden-state resets, rollout/update consistency, sequence minibatches,
and end-to-end runs (Craftax config, an add-on with the recurrent policy)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cli_runs import TINY_CARTPOLE, TINY_CRAFTAX, train

from nnxrl import config as config_lib
from nnxrl.ops.minibatch import shuffle_env_sequences

# unroll against step, and resets, for every memory kind and head: test_memory.py


def test_sequence_minibatches_keep_each_envs_time_order():
    t_len, num_envs, m = 6, 8, 4
    steps = jnp.arange(t_len)[:, None] + 1000 * jnp.arange(num_envs)[None, :]  # [T, B]
    batch = {
        "x": steps,
        "longer": jnp.concatenate([steps, steps[-1:] + 1]),
        "first": steps[:1],  # as the rollout's starting hidden state is stored: [1, B]
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
            assert out["first"][mb, 0, j] == seq[0]  # the sequence's own starting state
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
