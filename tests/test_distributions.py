import jax
import jax.numpy as jnp
import numpy as np

from nnxrl.networks.distributions import Categorical


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
