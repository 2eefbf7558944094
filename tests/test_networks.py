import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nnxrl.networks import ActorCritic
from nnxrl.networks.initializers import gram_schmidt, orthogonal


@pytest.mark.parametrize(
    "shape", [(64, 64), (1345, 512), (512, 512), (512, 17), (4, 64), (3, 3, 3, 32)]
)
def test_orthogonal_init_is_orthogonal_and_scaled(shape):
    w = np.asarray(orthogonal(2.0)(jax.random.key(0), shape)).reshape(-1, shape[-1])
    small = min(w.shape)
    gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
    np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-4)


@pytest.mark.parametrize("shape", [(1345, 512), (512, 512), (100, 40)])
def test_panel_by_panel_gram_schmidt_is_the_q_of_qr(shape):
    """QR's Q with R's diagonal made positive (unique), as LAPACK computes it in float64."""
    g = jax.random.normal(jax.random.key(3), shape)
    q, r = np.linalg.qr(np.asarray(g, np.float64))
    np.testing.assert_allclose(gram_schmidt(g), q * np.sign(np.diag(r)), atol=2e-4)


def test_orthogonal_init_depends_on_key():
    a = orthogonal()(jax.random.key(0), (8, 8))
    b = orthogonal()(jax.random.key(1), (8, 8))
    assert not np.allclose(a, b)


def test_orthogonal_init_runs_inside_jit_and_vmap_like_outside():
    keys = jax.random.split(jax.random.key(0), 3)
    batched = jax.jit(jax.vmap(lambda k: orthogonal()(k, (64, 16))))(keys)
    for i, key in enumerate(keys):
        np.testing.assert_allclose(batched[i], orthogonal()(key, (64, 16)), atol=1e-6)
        gram = np.asarray(batched[i]).T @ np.asarray(batched[i])
        np.testing.assert_allclose(gram, np.eye(16), atol=1e-5)


def test_actor_critic_shapes_flat_and_pixels():
    net = ActorCritic((4,), 2, 2, 64, "tanh", (8, 8), rngs=nnx.Rngs(0))
    dist, value = net(jnp.zeros((5, 3, 4)))
    assert dist.logits.shape == (5, 3, 2) and value.shape == (5, 3, 1)
    pix = ActorCritic((16, 16, 3), 5, 1, 32, "relu", (8, 8), rngs=nnx.Rngs(0), num_values=2)
    dist, value = pix(jnp.zeros((7, 16, 16, 3)))
    assert dist.logits.shape == (7, 5) and value.shape == (7, 2)
    assert pix.actor_encoder.torso is not None and net.actor_encoder.torso is None
