"""The patch + matmul convolution is the same function as XLA's convolution."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax import lax

from nnxrl.networks.torso import ConvTorso
from nnxrl.ops.patch_conv import conv_as_matmul


def reference_conv(x, kernel, bias, strides):
    dims = ("NHWC", "HWIO", "NHWC")
    return lax.conv_general_dilated(x, kernel, strides, "SAME", dimension_numbers=dims) + bias


@pytest.mark.parametrize(
    "shape, kernel_size, strides",
    [
        ((3, 10, 10, 4), (3, 3), (2, 2)),  # MinAtar
        ((2, 9, 7, 3), (3, 3), (2, 2)),  # odd sizes: padding only after
        ((2, 8, 8, 2), (3, 3), (1, 1)),
        ((2, 11, 6, 2), (5, 3), (3, 2)),
        ((2, 1, 1, 4), (3, 3), (2, 2)),  # smaller than the kernel
    ],
)
def test_values_and_gradients_match_xla_convolution(shape, kernel_size, strides):
    k1, k2, k3, k4 = jax.random.split(jax.random.key(0), 4)
    x = jax.random.normal(k1, shape)
    kernel = jax.random.normal(k2, (*kernel_size, shape[-1], 5))
    bias = jax.random.normal(k3, (5,))
    ours = conv_as_matmul(x, kernel, bias, strides)
    theirs = reference_conv(x, kernel, bias, strides)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=1e-5)
    cotangent = jax.random.normal(k4, ours.shape)

    def loss(conv):
        return lambda x, k, b: jnp.sum(conv(x, k, b, strides) * cotangent)

    grads = jax.grad(loss(conv_as_matmul), argnums=(0, 1, 2))(x, kernel, bias)
    expected = jax.grad(loss(reference_conv), argnums=(0, 1, 2))(x, kernel, bias)
    for g, e in zip(grads, expected, strict=True):
        np.testing.assert_allclose(g, e, atol=1e-4, rtol=1e-4)


def test_the_torso_computes_what_its_flax_convolutions_compute():
    torso = ConvTorso((10, 10, 4), (8, 16), "relu", nnx.Rngs(0))
    obs = jax.random.uniform(jax.random.key(1), (2, 3, 10, 10, 4))  # extra batch axes
    x = obs.reshape(-1, 10, 10, 4)
    for conv in torso.convs:  # nnx.Conv's own (lax) forward pass
        x = jax.nn.relu(conv(x))
    np.testing.assert_allclose(torso(obs), x.reshape(2, 3, -1), atol=1e-5, rtol=1e-5)
