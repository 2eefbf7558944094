"""Exploration via Elliptical Episodic Bonuses (Henaff et al. 2022, arXiv:2210.05805).

Each env keeps the inverse of the covariance of the embeddings seen so far in its
current episode; a step's bonus is how far the state it reached lies outside that
ellipse. With x_t = phi(s_{t+1}) (phi trained by inverse dynamics) and M the
inverse covariance:

    M_start = I / lambda                      (so M = (lambda I + sum_k x_k x_k^T)^-1)
    R_t     = M_start if end_t else M_{t-1}    (end_t: step t ended an episode, so
                                               x_t is the next episode's first state)
    b_t     = (1 - end_t) * x_t^T R_t x_t
    M_t     = R_t - (R_t x_t)(R_t x_t)^T / (1 + x_t^T R_t x_t)     (Sherman-Morrison)

M [B, D, D] lives in the add-on state, so episodes continue across rollouts. The
first observation of the very first episode is not added (it is never a step's
outcome); every later episode starts with its first observation.
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
from nnxrl.schema import setting


@dataclass(frozen=True)
class E3BOptions(EmbeddingOptions):
    ridge: float = setting(
        0.1, "lambda: the inverse covariance starts at I / lambda.", low=0, low_open=True
    )


@struct.dataclass
class E3BState:
    params: Any  # InverseDynamics parameters
    opt_state: Any
    inverse_covariance: jax.Array  # [B, D, D]: M per env


def elliptical_bonus(
    inverse_covariance: jax.Array, x: jax.Array, episode_end: jax.Array, ridge: float
) -> tuple[jax.Array, jax.Array]:
    """Scan the recurrence above over time.

    inverse_covariance [B, D, D], x [T, B, D], episode_end [T, B]
    -> (inverse covariance after the last step [B, D, D], bonus [T, B]).
    """
    fresh = jnp.eye(x.shape[-1], dtype=x.dtype) / ridge

    def step(m, inputs):
        x_t, end_t = inputs
        m = jnp.where(end_t[:, None, None], fresh, m)
        u = jnp.einsum("bij,bj->bi", m, x_t)
        quadratic = jnp.einsum("bi,bi->b", x_t, u)
        m = m - u[:, :, None] * u[:, None, :] / (1.0 + quadratic)[:, None, None]
        return m, jnp.where(end_t, 0.0, quadratic)

    return jax.lax.scan(step, inverse_covariance, (x, episode_end))


def init(
    key: jax.Array, *, make_network: Any, tx: Any, num_envs: int, options: E3BOptions
) -> E3BState:
    params = nnx.state(make_network(key))
    d = options.latent_size
    fresh = jnp.eye(d, dtype=jnp.float32) / options.ridge
    return E3BState(
        params=params,
        opt_state=tx.init(params),
        inverse_covariance=jnp.broadcast_to(fresh, (num_envs, d, d)),
    )


def reward(
    state: E3BState, experience: Experience, *, graphdef: Any, ridge: float
) -> tuple[E3BState, jax.Array, dict]:
    model = nnx.merge(graphdef, state.params)
    x = model.embed(experience.next_obs)
    inverse_covariance, bonus = elliptical_bonus(
        state.inverse_covariance, x, experience.episode_end, ridge
    )
    keep = jnp.logical_not(experience.episode_end)
    mean = masked_mean(bonus, keep)
    metrics = {
        "intrinsic/e3b_bonus_mean": mean,
        "intrinsic/e3b_bonus_std": jnp.sqrt(masked_mean(jnp.square(bonus - mean), keep)),
        "intrinsic/e3b_bonus_max": bonus.max(),
    }
    return state.replace(inverse_covariance=inverse_covariance), bonus, metrics


def e3b_loss(params: Any, minibatch: Experience, *, graphdef: Any) -> tuple[jax.Array, dict]:
    model = nnx.merge(graphdef, params)
    z, z_next = model.latents(minibatch.obs)
    loss, accuracy = model.loss(z, z_next, minibatch.action, ~minibatch.episode_end)
    return loss, {"intrinsic/e3b_inverse_loss": loss, "intrinsic/e3b_inverse_accuracy": accuracy}


def make_e3b(options: E3BOptions, context: AddonContext) -> Addon:
    def make_network(key):
        return InverseDynamics.from_options(
            options, context.obs_shape, context.num_actions, key, context.action_dim
        )

    graphdef, _ = nnx.split(nnx.eval_shape(lambda: make_network(jax.random.key(0))))
    tx = make_optimizer(context)
    fit_fn = partial(
        fit,
        loss_fn=partial(e3b_loss, graphdef=graphdef),
        tx=tx,
        num_epochs=context.num_epochs,
        num_minibatches=context.num_minibatches,
    )
    return Addon(
        init=partial(
            init, make_network=make_network, tx=tx, num_envs=context.num_envs, options=options
        ),
        reward=partial(reward, graphdef=graphdef, ridge=options.ridge),
        update=partial(update_networks, fit_fn=fit_fn),
    )


register("e3b", E3BOptions, make_e3b)
