"""Intrinsic Curiosity Module (Pathak et al. 2017, arXiv:1705.05363).

An embedding phi trained by inverse dynamics (``inverse_dynamics.py``) and a
forward model f that predicts the next embedding from the current one and the
action. The bonus is f's error, large where the agent cannot yet predict the
consequence of its action:

    b_t   = (1 - end_t) * mean_d ( f(z_t, a_t) - z_{t+1} )_d^2       z = phi(s)
    L     = c_inv * L_inv(phi, g) + c_fwd * mean_t b_t(f; sg(phi))

The forward loss does not train phi (stop-gradient on both embeddings), as in the
Craftax baselines; otherwise phi can shrink towards a constant that f predicts
trivially. At an episode end s_{t+1} is the next episode's first observation, so
no bonus is given and no loss is taken there.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx, struct

from nnxrl.intrinsic.base import Addon, AddonContext, Experience, register
from nnxrl.intrinsic.fit import fit, make_optimizer, masked_mean, update_networks
from nnxrl.intrinsic.inverse_dynamics import EmbeddingOptions, InverseDynamics
from nnxrl.networks.torso import MLP
from nnxrl.schema import setting


@dataclass(frozen=True)
class ICMOptions(EmbeddingOptions):
    forward_loss_coef: float = setting(1.0, "Weight of the forward-model loss.", low=0)
    inverse_loss_coef: float = setting(1.0, "Weight of the inverse-dynamics loss.", low=0)


class ICMNetworks(nnx.Module):
    def __init__(
        self, options: ICMOptions, obs_shape, num_actions: int, key: jax.Array, action_dim: int = 0
    ):
        embed_key, forward_key = jax.random.split(key)
        o = options
        self.dynamics = InverseDynamics.from_options(
            o, obs_shape, num_actions, embed_key, action_dim
        )
        self.forward = MLP(
            o.latent_size + (action_dim or num_actions),
            o.latent_size,
            o.num_layers,
            o.width,
            o.activation,
            1.0,
            nnx.Rngs(params=forward_key),
        )
        self.num_actions = num_actions
        self.continuous = action_dim > 0

    def forward_error(self, z: jax.Array, z_next: jax.Array, action: jax.Array) -> jax.Array:
        """mean_d (f(z, a) - z')^2: [T, B]; a one-hot, or the continuous action itself"""
        if self.continuous:
            a = action.astype(z.dtype)
        else:
            a = jax.nn.one_hot(action, self.num_actions, dtype=z.dtype)
        predicted = self.forward(jnp.concatenate([z, a], axis=-1))
        return jnp.mean(jnp.square(predicted - z_next), axis=-1)


@struct.dataclass
class ICMState:
    params: Any  # ICMNetworks parameters
    opt_state: Any


def init(key: jax.Array, *, make_networks: Any, tx: Any) -> ICMState:
    params = nnx.state(make_networks(key))
    return ICMState(params=params, opt_state=tx.init(params))


def reward(
    state: ICMState, experience: Experience, *, graphdef: Any
) -> tuple[ICMState, jax.Array, dict]:
    """b [T, B]: the forward model's error, 0 where the step ended an episode."""
    model = nnx.merge(graphdef, state.params)
    z, z_next = model.dynamics.latents(experience.obs)
    error = model.forward_error(z, z_next, experience.action)
    return state, jnp.where(experience.episode_end, 0.0, error), {}


def icm_loss(
    params: Any, minibatch: Experience, *, graphdef: Any, options: ICMOptions
) -> tuple[jax.Array, dict]:
    model = nnx.merge(graphdef, params)
    keep = jnp.logical_not(minibatch.episode_end)
    z, z_next = model.dynamics.latents(minibatch.obs)
    inverse, accuracy = model.dynamics.loss(z, z_next, minibatch.action, keep)
    error = model.forward_error(
        jax.lax.stop_gradient(z), jax.lax.stop_gradient(z_next), minibatch.action
    )
    forward = masked_mean(error, keep)
    total = options.inverse_loss_coef * inverse + options.forward_loss_coef * forward
    return total, {
        "intrinsic/icm_forward_loss": forward,
        "intrinsic/icm_inverse_loss": inverse,
        "intrinsic/icm_inverse_accuracy": accuracy,
    }


def make_icm(options: ICMOptions, context: AddonContext) -> Addon:
    def make_networks(key):
        return ICMNetworks(options, context.obs_shape, context.num_actions, key, context.action_dim)

    graphdef, _ = nnx.split(nnx.eval_shape(lambda: make_networks(jax.random.key(0))))
    tx = make_optimizer(context)
    fit_fn = partial(
        fit,
        loss_fn=partial(icm_loss, graphdef=graphdef, options=options),
        tx=tx,
        num_epochs=context.num_epochs,
        num_minibatches=context.num_minibatches,
    )
    return Addon(
        init=partial(init, make_networks=make_networks, tx=tx),
        reward=partial(reward, graphdef=graphdef),
        update=partial(update_networks, fit_fn=fit_fn),
    )


register("icm", ICMOptions, make_icm)
