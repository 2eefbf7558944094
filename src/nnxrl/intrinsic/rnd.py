"""Random Network Distillation (Burda et al. 2018, arXiv:1810.12894).

A fixed, randomly initialised target network f and a predictor f_hat trained to
match it on the observations the agent reaches. States seen often are predicted
well; the error is the bonus:

    x_t   = clip((s_{t+1} - mu_s) / sigma_s, -c, c)      running observation moments
    e_t   = (1 - end_t) * mean_k (f_hat(x_t) - f(x_t))_k^2
    R_t   = gamma_i R_{t-1} + e_t                         per env, never reset
    b_t   = e_t / sigma_R                                 running std of R

Both normalisations are the paper's and can be switched off. The paper consumes
b through a separate, non-episodic intrinsic value head (``intrinsic.mode:
value_head``, ``intrinsic.episodic: false``), which is this add-on's shipped
setting. The predictor's loss is mean_t e_t, scaled by ``loss_coef``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import jax
import jax.numpy as jnp
from flax import nnx, struct

from nnxrl.intrinsic.base import Addon, AddonContext, Experience, register
from nnxrl.intrinsic.fit import fit, make_optimizer, masked_mean, update_networks
from nnxrl.networks.torso import ObservationMLP
from nnxrl.ops.running_moments import Moments, init_moments, standardize, update_moments
from nnxrl.schema import setting


@dataclass(frozen=True)
class RNDOptions:
    output_size: int = setting(512, "Output size of the target and predictor.", low=1)
    width: int = setting(256, "Units per hidden layer of both networks.", low=1)
    num_layers: int = setting(2, "Hidden layers of both networks.", low=1)
    activation: Literal["tanh", "relu", "gelu", "silu"] = setting(
        "relu", "Hidden activation of both networks."
    )
    conv_features: tuple = setting(
        (32, 64, 64), "Conv torso channels, for image observations (rank 3)."
    )
    loss_coef: float = setting(0.01, "Scale of the predictor's loss.", low=0, low_open=True)
    normalize_obs: bool = setting(True, "Standardise observations by running moments.")
    obs_clip: float = setting(5.0, "Clip standardised observations to [-c, c].", low=0)
    normalize_reward: bool = setting(
        True, "Divide the bonus by the running std of its discounted return."
    )


class RNDNetworks(nnx.Module):
    def __init__(self, options: RNDOptions, obs_shape, key: jax.Array):
        o = options
        target_key, predictor_key = jax.random.split(key)

        def network(k):
            return ObservationMLP(
                obs_shape,
                o.output_size,
                o.num_layers,
                o.width,
                o.activation,
                o.conv_features,
                nnx.Rngs(params=k),
            )

        self.target = network(target_key)
        self.predictor = network(predictor_key)


@struct.dataclass
class RNDState:
    params: Any  # the predictor's parameters (trained)
    opt_state: Any
    target: Any  # the target's parameters (fixed)
    obs_moments: Moments  # [*obs_shape]
    return_moments: Moments  # scalar: of the discounted intrinsic return R
    returns: jax.Array  # [B]: R per env


def init(
    key: jax.Array, *, make_networks: Any, tx: Any, num_envs: int, obs_shape: tuple[int, ...]
) -> RNDState:
    networks = make_networks(key)
    predictor, target = nnx.state(networks.predictor), nnx.state(networks.target)
    return RNDState(
        params=predictor,
        opt_state=tx.init(predictor),
        target=target,
        obs_moments=init_moments(obs_shape),
        return_moments=init_moments(),
        returns=jnp.zeros(num_envs, jnp.float32),
    )


def prediction_error(
    predictor: Any, state: RNDState, obs: jax.Array, *, graphdef: Any, options: RNDOptions
) -> jax.Array:
    """mean_k (f_hat(x) - f(x))_k^2 over the leading axes of obs [..., *obs_shape]."""
    x = obs.astype(jnp.float32)
    if options.normalize_obs:
        x = jnp.clip(standardize(x, state.obs_moments), -options.obs_clip, options.obs_clip)
    target = jax.lax.stop_gradient(nnx.merge(graphdef, state.target)(x))
    return jnp.mean(jnp.square(nnx.merge(graphdef, predictor)(x) - target), axis=-1)


def reward(
    state: RNDState, experience: Experience, *, error_fn, options: RNDOptions
) -> tuple[RNDState, jax.Array, dict]:
    next_obs = experience.next_obs
    if options.normalize_obs:
        obs_moments = update_moments(state.obs_moments, next_obs.astype(jnp.float32), 2)
        state = state.replace(obs_moments=obs_moments)
    error = error_fn(state.params, state, next_obs)
    error = jnp.where(experience.episode_end, 0.0, error)

    def discount(r, e_t):
        r = experience.gamma * r + e_t
        return r, r

    returns, history = jax.lax.scan(discount, state.returns, error)
    state = state.replace(returns=returns)
    bonus = error
    if options.normalize_reward:
        state = state.replace(return_moments=update_moments(state.return_moments, history, 2))
        bonus = error / jnp.sqrt(state.return_moments.var + 1e-8)
    metrics = {
        "intrinsic/rnd_error": error.mean(),
        "intrinsic/rnd_obs_mean": state.obs_moments.mean.mean(),
        "intrinsic/rnd_obs_std": jnp.sqrt(state.obs_moments.var).mean(),
        "intrinsic/rnd_return_std": jnp.sqrt(state.return_moments.var),
    }
    return state, bonus, metrics


def rnd_loss(
    params: Any, minibatch: Experience, *, state: RNDState, error_fn, loss_coef: float
) -> tuple[jax.Array, dict]:
    error = error_fn(params, state, minibatch.next_obs)
    loss = masked_mean(error, jnp.logical_not(minibatch.episode_end))
    return loss_coef * loss, {"intrinsic/rnd_loss": loss}


def update(
    state: RNDState, experience: Experience, key: jax.Array, *, error_fn, fit_fn, loss_coef
) -> tuple[RNDState, dict]:
    loss_fn = partial(rnd_loss, state=state, error_fn=error_fn, loss_coef=loss_coef)
    return update_networks(state, experience, key, fit_fn=partial(fit_fn, loss_fn=loss_fn))


def make_rnd(options: RNDOptions, context: AddonContext) -> Addon:
    def make_networks(key):
        return RNDNetworks(options, context.obs_shape, key)

    graphdef, _ = nnx.split(nnx.eval_shape(lambda: make_networks(jax.random.key(0))).predictor)
    tx = make_optimizer(context)
    error_fn = partial(prediction_error, graphdef=graphdef, options=options)
    fit_fn = partial(
        fit, tx=tx, num_epochs=context.num_epochs, num_minibatches=context.num_minibatches
    )
    return Addon(
        init=partial(
            init,
            make_networks=make_networks,
            tx=tx,
            num_envs=context.num_envs,
            obs_shape=context.obs_shape,
        ),
        reward=partial(reward, error_fn=error_fn, options=options),
        update=partial(update, error_fn=error_fn, fit_fn=fit_fn, loss_coef=options.loss_coef),
    )


register("rnd", RNDOptions, make_rnd)
