import jax
import jax.numpy as jnp
import numpy as np

from nnxrl.networks.distributions import Categorical, EpsilonGreedy
from nnxrl.networks.q_network import greedy_values


def test_log_prob_and_entropy_closed_forms():
    logits = jnp.array([[1.0, 2.0, 0.5], [0.0, 0.0, 0.0]])
    dist = Categorical(logits)
    p = np.exp(np.asarray(logits)) / np.exp(np.asarray(logits)).sum(-1, keepdims=True)
    actions = jnp.array([1, 2])
    np.testing.assert_allclose(dist.log_prob(actions), np.log(p[[0, 1], [1, 2]]), rtol=1e-6)
    np.testing.assert_allclose(dist.entropy(), -(p * np.log(p)).sum(-1), rtol=1e-6)
    np.testing.assert_allclose(dist.entropy()[1], np.log(3), rtol=1e-6)
    np.testing.assert_array_equal(dist.mode(), [1, 0])


def test_entropy_with_impossible_actions_is_finite():
    dist = Categorical(jnp.array([0.0, -jnp.inf, 0.0]))
    np.testing.assert_allclose(dist.entropy(), np.log(2), rtol=1e-6)


def test_sampling_frequencies_match_probabilities():
    logits = jnp.log(jnp.array([0.1, 0.6, 0.3]))
    samples = Categorical(jnp.broadcast_to(logits, (100_000, 3))).sample(jax.random.key(0))
    freq = np.bincount(np.asarray(samples), minlength=3) / samples.shape[0]
    np.testing.assert_allclose(freq, [0.1, 0.6, 0.3], atol=0.01)


LOGITS = jnp.array([[1.0, 2.0, 0.5, -1.0], [0.3, -0.2, 0.0, 4.0]])
LEGAL = jnp.array([[True, False, True, False], [False, False, False, True]])


def test_a_masked_categorical_is_the_distribution_over_the_legal_actions():
    dist = Categorical(LOGITS).masked(LEGAL)
    # row 0: softmax over actions 0 and 2 alone; row 1: action 3 with probability 1
    p0 = np.exp([1.0, 0.5]) / np.exp([1.0, 0.5]).sum()
    np.testing.assert_allclose(np.exp(dist.log_prob(jnp.array([0, 3]))), [p0[0], 1.0], rtol=1e-6)
    np.testing.assert_allclose(dist.entropy(), [-(p0 * np.log(p0)).sum(), 0.0], atol=1e-6)
    np.testing.assert_array_equal(dist.mode(), [0, 3])
    samples = Categorical(jnp.broadcast_to(dist.logits, (5000, 2, 4))).sample(jax.random.key(1))
    assert np.asarray(LEGAL)[[0, 1], np.asarray(samples)].all()  # never an illegal one


def test_gradients_through_a_masked_categorical_are_finite_and_zero_on_illegal_logits():
    def loss(logits):
        dist = Categorical(logits).masked(LEGAL)
        return -(dist.log_prob(jnp.array([2, 3])) + 0.01 * dist.entropy()).sum()

    grad = np.asarray(jax.grad(loss)(LOGITS))
    assert np.isfinite(grad).all()
    np.testing.assert_array_equal(grad[~np.asarray(LEGAL)], 0.0)
    assert (grad[0, [0, 2]] != 0).all()


def test_epsilon_greedy_explores_and_exploits_among_the_legal_actions_only():
    values = jnp.broadcast_to(LOGITS, (4000, 2, 4))
    legal = jnp.broadcast_to(LEGAL, (4000, 2, 4))
    explore = np.asarray(EpsilonGreedy(values, 1.0, legal).sample(jax.random.key(2)))
    np.testing.assert_array_equal(np.unique(explore[:, 0]), [0, 2])  # both, uniformly
    assert abs((explore[:, 0] == 0).mean() - 0.5) < 0.05
    assert (explore[:, 1] == 3).all()
    np.testing.assert_array_equal(EpsilonGreedy(LOGITS, 0.0, LEGAL).mode(), [0, 3])
    np.testing.assert_array_equal(EpsilonGreedy(LOGITS, 0.0).mode(), [1, 3])  # unmasked


def test_the_q_target_maximises_over_the_legal_actions_only():
    q = LOGITS[:, None, :]  # [B, K=1, A]
    weights = jnp.ones(1)
    np.testing.assert_allclose(greedy_values(q, weights, LEGAL)[:, 0], [1.0, 4.0])
    np.testing.assert_allclose(greedy_values(q, weights)[:, 0], [2.0, 4.0])
