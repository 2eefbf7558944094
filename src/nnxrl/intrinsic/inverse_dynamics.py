"""Features learned by predicting the action from two consecutive observations
(Pathak et al. 2017, arXiv:1705.05363), shared by ICM and E3B.

    z_t = phi(s_t),   logits = g(z_t, z_{t+1}),   L_inv = mean_t CE(logits_t, a_t)

over the steps that did not end an episode (there s_{t+1} belongs to another
episode). phi only learns what the agent's actions control, so a bonus built on
it ignores noise the agent cannot affect.

Continuous actions (``action_dim`` D > 0): g predicts the action itself and
L_inv = mean_t 1/2 mean_d (g(z_t, z_{t+1})_d - a_{t,d})^2, the Gaussian negative
log-likelihood with unit variance up to a constant; the action is the policy's
sample (before the env clips it). Its "accuracy" metric is then the R^2 of the
prediction, 1 - MSE / Var(a).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import jax
import jax.numpy as jnp
from flax import nnx

from nnxrl.intrinsic.fit import masked_mean
from nnxrl.networks.torso import MLP, ObservationMLP
from nnxrl.schema import setting

Activation = Literal["tanh", "relu", "gelu", "silu"]


@dataclass(frozen=True)
class EmbeddingOptions:
    """Options of an inverse-dynamics embedding; add-ons that use one extend this."""

    latent_size: int = setting(32, "Size of the learned embedding phi(s).", low=1)
    width: int = setting(256, "Units per hidden layer of every add-on network.", low=1)
    num_layers: int = setting(2, "Hidden layers of every add-on network.", low=1)
    activation: Activation = setting("relu", "Hidden activation of the add-on networks.")
    conv_features: tuple = setting(
        (32, 64, 64), "Conv torso channels, for image observations (rank 3)."
    )


class InverseDynamics(nnx.Module):
    """phi: obs -> [..., latent]; g: (z, z') -> action logits [..., A] (or, for
    continuous actions, the predicted action [..., D])."""

    def __init__(
        self,
        obs_shape: Sequence[int],
        num_actions: int,
        latent_size: int,
        width: int,
        num_layers: int,
        activation: str,
        conv_features: Sequence[int],
        rngs: nnx.Rngs,
        action_dim: int = 0,
    ):
        self.embed = ObservationMLP(
            obs_shape, latent_size, num_layers, width, activation, conv_features, rngs
        )
        self.continuous = action_dim > 0
        outputs = action_dim or num_actions
        self.inverse = MLP(2 * latent_size, outputs, num_layers, width, activation, 0.01, rngs)

    @classmethod
    def from_options(
        cls,
        options: EmbeddingOptions,
        obs_shape: Sequence[int],
        num_actions: int,
        key: jax.Array,
        action_dim: int = 0,
    ) -> InverseDynamics:
        o = options
        return cls(
            obs_shape,
            num_actions,
            o.latent_size,
            o.width,
            o.num_layers,
            o.activation,
            o.conv_features,
            rngs=nnx.Rngs(params=key),
            action_dim=action_dim,
        )

    def latents(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        """obs [T + 1, B, ...] -> (z [T, B, D], z' [T, B, D]); each obs embedded once."""
        z = self.embed(obs)
        return z[:-1], z[1:]

    def loss(
        self, z: jax.Array, z_next: jax.Array, action: jax.Array, keep: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """(L_inv, accuracy) over steps where ``keep`` [T, B] is true (continuous
        actions: (L_inv, R^2), see the module docstring)."""
        logits = self.inverse(jnp.concatenate([z, z_next], axis=-1))
        if self.continuous:  # action [T, B, D]: the predicted action is ``logits``
            squared = jnp.mean(jnp.square(logits - action), axis=-1)
            mse = masked_mean(squared, keep)
            spread = jnp.mean(jnp.var(action.reshape(-1, action.shape[-1]), axis=0))
            return 0.5 * mse, 1.0 - mse / jnp.maximum(spread, 1e-8)
        log_probs = jax.nn.log_softmax(logits)
        nll = -jnp.take_along_axis(log_probs, action[..., None], axis=-1)[..., 0]
        correct = (jnp.argmax(logits, axis=-1) == action).astype(jnp.float32)
        return masked_mean(nll, keep), masked_mean(correct, keep)
