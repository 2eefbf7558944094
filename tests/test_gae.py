import numpy as np
import pytest

from nnxrl.ops.gae import bootstrap_values, compute_gae


def gae_reference(rewards, values, next_values, terminated, ends, gamma, lam):
    """Plain Python loop over time, per env."""
    T, B = rewards.shape
    adv = np.zeros((T, B))
    for b in range(B):
        running = 0.0
        for t in reversed(range(T)):
            delta = (
                rewards[t, b] + gamma * (1 - terminated[t, b]) * next_values[t, b] - values[t, b]
            )
            running = delta + gamma * lam * (1 - ends[t, b]) * running
            adv[t, b] = running
    return adv, adv + values


@pytest.mark.parametrize("gamma,lam", [(0.99, 0.95), (0.9, 0.0), (1.0, 1.0)])
def test_gae_matches_python_loop(gamma, lam):
    rng = np.random.default_rng(0)
    T, B = 17, 5
    rewards = rng.normal(size=(T, B)).astype(np.float32)
    values = rng.normal(size=(T, B)).astype(np.float32)
    next_values = rng.normal(size=(T, B)).astype(np.float32)
    terminated = rng.random((T, B)) < 0.15
    truncated = (rng.random((T, B)) < 0.1) & ~terminated
    terminated[-1, 0] = True  # an episode end on the last step
    truncated[5, 1] = True  # and a truncation mid-trajectory
    terminated[5, 1] = False
    ends = terminated | truncated
    adv, targets = compute_gae(rewards, values, next_values, terminated, ends, gamma, lam)
    ref_adv, ref_targets = gae_reference(rewards, values, next_values, terminated, ends, gamma, lam)
    np.testing.assert_allclose(adv, ref_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(targets, ref_targets, rtol=1e-5, atol=1e-5)


def test_truncation_bootstraps_from_final_value_and_termination_does_not():
    values = np.zeros((2, 1), np.float32)
    last_value = np.array([7.0], np.float32)
    final_values = np.array([[5.0], [3.0]], np.float32)
    truncated = np.array([[True], [False]])
    terminated = np.array([[False], [True]])
    next_values = bootstrap_values(values, last_value, final_values, truncated)
    np.testing.assert_allclose(next_values, [[5.0], [7.0]])
    rewards = np.ones((2, 1), np.float32)
    adv, _ = compute_gae(rewards, values, next_values, terminated, truncated | terminated, 0.5, 1.0)
    # step 0 hit a time limit: 1 + 0.5 * V(final obs) = 3.5; step 1 terminated: just 1.
    np.testing.assert_allclose(adv, [[3.5], [1.0]])


def test_gae_rejects_mismatched_shapes():
    with pytest.raises(AssertionError, match="shapes differ"):
        z = np.zeros((3, 2), np.float32)
        compute_gae(z, np.zeros((3, 3), np.float32), z, z, z, 0.9, 0.9)
