"""Training an add-on's networks on a rollout, shared by every add-on.

Each of ``num_epochs`` epochs shuffles the envs into ``num_minibatches`` sets of
whole sequences (so a minibatch still holds each obs next to the one after it)
and takes one optimiser step per set (nnxrl's optimiser: global-norm clipping, Adam).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from nnxrl import optim
from nnxrl.intrinsic.base import AddonContext, Experience
from nnxrl.ops.minibatch import shuffle_env_sequences


def make_optimizer(context: AddonContext) -> optax.GradientTransformation:
    """nnxrl's optimiser (``nnxrl.optim``) at the add-on's fixed settings: clip, Adam."""
    return optim.make_optimizer(
        context.adam_eps, learning_rate=context.learning_rate, max_grad_norm=context.max_grad_norm
    )


def fit(
    params: Any,
    opt_state: Any,
    experience: Experience,
    key: jax.Array,
    *,
    loss_fn: Callable[[Any, Experience], tuple[jax.Array, dict]],
    tx: optax.GradientTransformation,
    num_epochs: int,
    num_minibatches: int,
) -> tuple[Any, Any, dict]:
    """Minimise ``loss_fn(params, minibatch) -> (loss, metrics)``. Returns the new
    params and optimiser state and each metric averaged over all steps."""

    def step(carry, minibatch):
        params, opt_state = carry
        grads, metrics = jax.grad(loss_fn, has_aux=True)(params, minibatch)
        updates, opt_state = tx.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), metrics

    arrays = experience._replace(gamma=None)  # the scalar discount is not split

    def epoch(carry, epoch_key):
        minibatches = shuffle_env_sequences(epoch_key, arrays, num_minibatches)
        return jax.lax.scan(step, carry, minibatches)

    (params, opt_state), metrics = jax.lax.scan(
        epoch, (params, opt_state), jax.random.split(key, num_epochs)
    )
    return params, opt_state, jax.tree.map(lambda m: m.mean(), metrics)


def update_networks(state: Any, experience: Experience, key: jax.Array, *, fit_fn: Callable):
    """An add-on's ``update`` for any state with ``params`` and ``opt_state`` fields:
    ``fit_fn`` is ``fit`` with the add-on's loss and optimiser bound."""
    params, opt_state, metrics = fit_fn(state.params, state.opt_state, experience, key)
    return state.replace(params=params, opt_state=opt_state), metrics


def masked_mean(x: jax.Array, mask: jax.Array) -> jax.Array:
    """mean of x over the entries where mask is 1 (0 when there are none); x [T, B]."""
    mask = mask.astype(x.dtype)
    return (x * mask).sum() / jnp.maximum(mask.sum(), 1.0)
