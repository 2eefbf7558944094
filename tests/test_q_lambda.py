import numpy as np
import pytest

from nnxrl.ops.q_lambda import compute_q_lambda, continuing_q_lambda, episodic_q_lambda


def q_lambda_reference(rewards, values, last_value, final_values, terminated, truncated, g, lam):
    """Plain Python loop, per env, from the raw rollout: V' is the next step's value,
    the final observation's where the step was truncated, last_value after the end."""
    T, B = rewards.shape
    out = np.zeros((T, B))
    for b in range(B):
        following = None
        for t in reversed(range(T)):
            if truncated[t, b]:
                v_next = final_values[t, b]
            elif t == T - 1:
                v_next = last_value[b]
            else:
                v_next = values[t + 1, b]
            if terminated[t, b]:
                g_t = rewards[t, b]
            elif truncated[t, b] or t == T - 1:
                g_t = rewards[t, b] + g * v_next
            else:
                g_t = rewards[t, b] + g * ((1 - lam) * v_next + lam * following)
            out[t, b] = g_t
            following = g_t
    return out


def monte_carlo_reference(rewards, last_value, final_values, terminated, truncated, g):
    """lambda = 1 from its definition: discounted rewards to the episode's end, plus
    the discounted bootstrap where it was truncated or the rollout ran out."""
    T, B = rewards.shape
    out = np.zeros((T, B))
    for b in range(B):
        for t in range(T):
            total, k = 0.0, t
            while True:
                total += g ** (k - t) * rewards[k, b]
                if terminated[k, b]:
                    break
                if truncated[k, b]:
                    total += g ** (k - t + 1) * final_values[k, b]
                    break
                if k == T - 1:
                    total += g ** (k - t + 1) * last_value[b]
                    break
                k += 1
            out[t, b] = total
    return out


def rollout(seed=0, T=19, B=6):
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(T, B)).astype(np.float32)
    values = rng.normal(size=(T, B)).astype(np.float32)
    last_value = rng.normal(size=B).astype(np.float32)
    final_values = rng.normal(size=(T, B)).astype(np.float32)
    terminated = rng.random((T, B)) < 0.15
    truncated = (rng.random((T, B)) < 0.1) & ~terminated
    terminated[6, 0], truncated[6, 0] = False, True  # truncated mid-rollout
    terminated[-1, 1], truncated[-1, 1] = True, False  # terminated at its end
    terminated[-1, 2], truncated[-1, 2] = False, True  # truncated at its end
    terminated[4, 3], truncated[4, 3] = True, False  # terminated mid-rollout
    return rewards, values, last_value, final_values, terminated, truncated


@pytest.mark.parametrize("gamma,lam", [(0.99, 0.65), (0.9, 0.0), (1.0, 1.0), (0.97, 0.95)])
def test_q_lambda_matches_python_loop(gamma, lam):
    data = rollout()
    got = episodic_q_lambda(*data, gamma, lam)
    np.testing.assert_allclose(got, q_lambda_reference(*data, gamma, lam), rtol=1e-5, atol=1e-5)


def test_lambda_zero_is_one_step_td():
    rewards, values, last_value, final_values, terminated, truncated = rollout(1)
    got = episodic_q_lambda(
        rewards, values, last_value, final_values, terminated, truncated, 0.9, 0
    )
    next_values = np.concatenate([values[1:], last_value[None]])
    next_values = np.where(truncated, final_values, next_values)
    expected = rewards + 0.9 * (1 - terminated) * next_values
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_lambda_one_is_monte_carlo_bootstrapped_only_at_truncation_and_rollout_end():
    rewards, values, last_value, final_values, terminated, truncated = rollout(2)
    got = episodic_q_lambda(
        rewards, values, last_value, final_values, terminated, truncated, 0.9, 1
    )
    expected = monte_carlo_reference(rewards, last_value, final_values, terminated, truncated, 0.9)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    # the values seen along the way play no part at lambda = 1
    shuffled = episodic_q_lambda(
        rewards, values[::-1], last_value, final_values, terminated, truncated, 0.9, 1
    )
    np.testing.assert_allclose(shuffled, got, rtol=1e-5, atol=1e-5)


def test_continuing_returns_run_through_episode_ends():
    rewards, values, last_value, *_ = rollout(3)
    none = np.zeros(rewards.shape, bool)
    got = continuing_q_lambda(rewards, values, last_value, 0.95, 0.5)
    expected = q_lambda_reference(rewards, values, last_value, values, none, none, 0.95, 0.5)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_q_lambda_rejects_mismatched_shapes():
    z = np.zeros((3, 2), np.float32)
    with pytest.raises(AssertionError, match="shapes differ"):
        compute_q_lambda(z, np.zeros((3, 3), np.float32), z, z, 0.9, 0.9)
