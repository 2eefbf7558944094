"""Building blocks shared by every network: activations, orthogonal dense layers,
an MLP, a conv torso for images, and an encoder that picks between them.

Flat observations are flattened; image observations (rank 3, ``[H, W, C]``) go
through 3x3 stride-2 convolutions (on CPU computed as patches + one matmul,
``ops/patch_conv.py``: the same function, ~6x faster inside a scan). Every layer
is initialised orthogonally (see ``initializers``), so modules can be built inside
a compiled, vmapped init.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nnxrl.networks.initializers import orthogonal
from nnxrl.ops.patch_conv import conv_as_matmul

ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "tanh": jnp.tanh,
    "relu": jax.nn.relu,
    "gelu": jax.nn.gelu,
    "silu": jax.nn.silu,
}


def orthogonal_linear(
    in_features: int, out_features: int, scale: float, rngs: nnx.Rngs, bias: bool = True
):
    return nnx.Linear(
        in_features,
        out_features,
        use_bias=bias,
        kernel_init=orthogonal(scale),
        bias_init=nnx.initializers.zeros,
        rngs=rngs,
    )


class ConvTorso(nnx.Module):
    """3x3 stride-2 convolutions, then flatten: [..., H, W, C] -> [..., F]."""

    def __init__(
        self, obs_shape: Sequence[int], features: Sequence[int], activation: str, rngs: nnx.Rngs
    ):
        channels = [obs_shape[-1], *features]
        self.convs = nnx.List(
            nnx.Conv(
                c_in,
                c_out,
                kernel_size=(3, 3),
                strides=(2, 2),
                kernel_init=orthogonal(np.sqrt(2)),
                rngs=rngs,
            )
            for c_in, c_out in zip(channels[:-1], channels[1:], strict=True)
        )
        self.activation = ACTIVATIONS[activation]
        probe = jax.eval_shape(lambda x: self._conv(x), jnp.zeros((1, *obs_shape)))
        self.out_features = int(np.prod(probe.shape[1:]))

    def _conv(self, x: jax.Array) -> jax.Array:
        as_matmul = jax.default_backend() == "cpu"  # cuDNN's convolutions are fast
        for conv in self.convs:
            if as_matmul:
                x = conv_as_matmul(x, conv.kernel[...], conv.bias[...], conv.strides)
            else:
                x = conv(x)
            x = self.activation(x)
        return x

    def __call__(self, obs: jax.Array) -> jax.Array:
        batch = obs.shape[:-3]
        x = self._conv(obs.reshape((-1, *obs.shape[-3:])))
        return x.reshape((*batch, -1))


class MLP(nnx.Module):
    """``num_layers`` hidden layers of ``width`` with orthogonal(sqrt 2) init (each
    followed by LayerNorm when ``layer_norm``, before the activation), then a linear
    head with orthogonal(``head_scale``) init: [..., D] -> [..., out]."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        num_layers: int,
        width: int,
        activation: str,
        head_scale: float,
        rngs: nnx.Rngs,
        layer_norm: bool = False,
    ):
        sizes = [in_features] + [width] * num_layers
        self.hidden = nnx.List(
            orthogonal_linear(a, b, np.sqrt(2), rngs)
            for a, b in zip(sizes[:-1], sizes[1:], strict=True)
        )
        self.norms = nnx.List(
            nnx.LayerNorm(width, rngs=rngs) for _ in range(num_layers if layer_norm else 0)
        )
        self.head = orthogonal_linear(sizes[-1], out_features, head_scale, rngs)
        self.activation = ACTIVATIONS[activation]

    def __call__(self, x: jax.Array) -> jax.Array:
        for i, layer in enumerate(self.hidden):
            x = layer(x)
            if self.norms:
                x = self.norms[i](x)
            x = self.activation(x)
        return self.head(x)


class Encoder(nnx.Module):
    """Observation -> flat features: conv torso for images, flatten otherwise."""

    def __init__(
        self,
        obs_shape: Sequence[int],
        conv_features: Sequence[int],
        activation: str,
        rngs: nnx.Rngs,
    ):
        self.obs_rank = len(obs_shape)
        self.torso = (
            ConvTorso(obs_shape, conv_features, activation, rngs) if self.obs_rank == 3 else None
        )
        self.out_features = (
            self.torso.out_features if self.torso is not None else int(np.prod(obs_shape))
        )

    def __call__(self, obs: jax.Array) -> jax.Array:
        if self.torso is not None:
            return self.torso(obs)
        batch = obs.shape[: obs.ndim - self.obs_rank]
        return obs.reshape((*batch, self.out_features))


class ObservationMLP(nnx.Module):
    """Observation -> [..., out_features]: an Encoder (conv torso for images, flatten
    otherwise), then an MLP. The building block of the intrinsic add-ons' networks."""

    def __init__(
        self,
        obs_shape: Sequence[int],
        out_features: int,
        num_layers: int,
        width: int,
        activation: str,
        conv_features: Sequence[int],
        rngs: nnx.Rngs,
    ):
        self.encoder = Encoder(obs_shape, conv_features, activation, rngs)
        self.mlp = MLP(
            self.encoder.out_features, out_features, num_layers, width, activation, 1.0, rngs
        )

    def __call__(self, obs: jax.Array) -> jax.Array:
        return self.mlp(self.encoder(obs))
