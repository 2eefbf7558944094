"""Shuffling a [T, B] batch into minibatches, whole and in blocks of envs."""

import jax
import numpy as np
import pytest

from nnxrl.ops.minibatch import shuffle_env_sequences, shuffle_steps

T, B = 6, 8


def step_ids():
    """[T, B] ids: 100 * env + step, so each item says where it came from."""
    return 100 * np.arange(B)[None, :] + np.arange(T)[:, None]


def test_epoch_visits_every_step_once_in_a_fresh_order():
    batch = {"x": step_ids(), "y": step_ids() * 10, "feat": step_ids()[..., None] * np.ones(3)}
    a = shuffle_steps(jax.random.key(0), batch, 4)
    b = shuffle_steps(jax.random.key(1), batch, 4)
    assert a["x"].shape == (4, T * B // 4) and a["feat"].shape == (4, T * B // 4, 3)
    assert sorted(np.asarray(a["x"]).ravel()) == sorted(step_ids().ravel())
    np.testing.assert_array_equal(a["y"], a["x"] * 10)  # leaves stay aligned
    np.testing.assert_array_equal(a["feat"][..., 2], a["x"])
    assert not np.array_equal(a["x"], b["x"])


@pytest.mark.parametrize("groups", [2, 4])
def test_grouped_shuffle_takes_the_same_share_of_every_block_of_envs(groups):
    minibatches = shuffle_steps(jax.random.key(3), {"x": step_ids()}, 3, groups)["x"]
    per_block = T * (B // groups) // 3
    assert sorted(np.asarray(minibatches).ravel()) == sorted(step_ids().ravel())
    for m, minibatch in enumerate(np.asarray(minibatches)):
        blocks = (minibatch // 100) // (B // groups)  # which block of envs each item is from
        # laid out block by block, so that each device's part of a minibatch is its own
        expected = np.repeat(np.arange(groups), per_block)
        np.testing.assert_array_equal(blocks, expected, err_msg=f"minibatch {m}")


def test_grouped_sequence_minibatches_take_whole_envs_from_every_block():
    groups, m = 2, 2
    out = shuffle_env_sequences(jax.random.key(0), {"x": step_ids()}, m, groups)["x"]
    assert out.shape == (m, T, B // m)
    envs = np.asarray(out[:, 0, :]) // 100  # [M, B / M] env of each sequence
    for mb in range(m):
        for j in range(B // m):
            np.testing.assert_array_equal(out[mb, :, j], 100 * envs[mb, j] + np.arange(T))
        blocks = envs[mb] // (B // groups)
        np.testing.assert_array_equal(blocks, np.repeat(np.arange(groups), B // (m * groups)))
    assert sorted(envs.ravel()) == list(range(B))


def test_impossible_splits_are_refused():
    with pytest.raises(AssertionError, match="do not split into"):
        shuffle_steps(jax.random.key(0), {"x": step_ids()}, 5, 2)
    with pytest.raises(AssertionError, match="do not split into"):
        shuffle_env_sequences(jax.random.key(0), {"x": step_ids()}, 3, 2)
