"""Epochs of minibatch gradient steps on one rollout's batch, for every algorithm.

``update_epochs`` runs ``num_epochs`` x ``update_epoch``: reshuffle the batch (single
steps for a feed-forward network, whole env sequences for a recurrent one), then
``update_minibatch`` per minibatch: the gradient of the algorithm's loss and one step
of the shared optimiser (``nnxrl.optim``) with the traced step size and clip norm.
The algorithm's static settings ``s`` carry what this needs (``tx``, ``lr_schedule``,
``num_epochs``, ``num_minibatches``, ``sequences``, ``shuffle_groups``: blocks of
envs shuffled apart, one per device holding envs, ``nnxrl.parallel.mesh``) and are
passed on to its loss.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import optax

from nnxrl import optim
from nnxrl.ops.minibatch import shuffle_env_sequences, shuffle_steps
from nnxrl.types import UpdateState

# (params, minibatch, hp, s) -> (scalar loss, metrics)
Loss = Callable[[Any, Any, Any, Any], tuple[jax.Array, dict]]


def update_epochs(
    state: UpdateState, batch: Any, key: jax.Array, hp: Any, s: Any, loss: Loss
) -> tuple[UpdateState, dict]:
    """num_epochs passes over the batch; metrics [E, M] per name."""

    def epoch(carry: tuple[UpdateState, jax.Array], _: Any):
        return update_epoch(carry, batch, hp, s, loss)

    (state, _), metrics = jax.lax.scan(epoch, (state, key), length=s.num_epochs)
    return state, metrics


def update_epoch(
    carry: tuple[UpdateState, jax.Array], batch: Any, hp: Any, s: Any, loss: Loss
) -> tuple[tuple[UpdateState, jax.Array], dict]:
    """Reshuffle the batch, then one optimiser step per minibatch."""
    state, key = carry
    key, shuffle_key = jax.random.split(key)
    shuffle = shuffle_env_sequences if s.sequences else shuffle_steps
    minibatches = shuffle(shuffle_key, batch, s.num_minibatches, s.shuffle_groups)

    def step(state: UpdateState, minibatch: Any):
        return update_minibatch(state, minibatch, hp, s, loss)

    state, metrics = jax.lax.scan(step, state, minibatches)
    return (state, key), metrics


def update_minibatch(
    state: UpdateState, minibatch: Any, hp: Any, s: Any, loss: Loss
) -> tuple[UpdateState, dict]:
    """One optimiser step (``nnxrl.optim``: clip the global norm, the direction, the
    annealed step size), with the traced learning rate and clip norm."""
    grads, metrics = jax.grad(loss, has_aux=True)(state.params, minibatch, hp, s)
    params, opt_state = optim.step(
        s.tx,
        grads,
        state.opt_state,
        state.params,
        learning_rate=hp.learning_rate,
        max_grad_norm=hp.max_grad_norm,
    )
    metrics = {
        **metrics,
        "stats/grad_norm": optax.tree.norm(grads),
        "stats/learning_rate": hp.learning_rate * s.lr_schedule(state.opt_step),
    }
    return UpdateState(params, opt_state, state.opt_step + 1), metrics
