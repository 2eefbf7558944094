"""The one way nnxrl builds an optimiser, for every algorithm and add-on: optax's
global-norm clip, Adam's (or RAdam's) direction, an optional schedule, the step size.

    u = -lr * schedule(step) * adam(clip(g, max_grad_norm))

The schedules are multipliers of the optimiser's step count: ``linear_decay`` (to
exactly zero on the last step) or ``constant_one``.

``learning_rate`` and ``max_grad_norm`` are injected hyperparameters
(``optax.inject_hyperparams``): they live in the optimiser state, and ``step`` sets
them from the traced ``Hyperparams`` before each update, so a sweep can vmap over
them inside one compiled program.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

DIRECTIONS = {"adam": optax.scale_by_adam, "radam": optax.scale_by_radam}


def make_optimizer(
    adam_eps: float,
    schedule: Callable[[jax.Array], jax.Array] | None = None,
    *,
    learning_rate: float = 0.0,
    max_grad_norm: float = 1.0,
    direction: str = "adam",
) -> optax.GradientTransformation:
    """clip -> Adam or RAdam (``direction``) -> schedule (a multiplier of the
    optimiser's step count; none: constant) -> step size; see the module docstring.
    ``learning_rate`` and ``max_grad_norm`` are the injected values until ``step``
    sets others (an add-on, whose values are fixed, just keeps them)."""
    scale_by_direction = DIRECTIONS[direction]

    def chain(learning_rate: float, max_grad_norm: float) -> optax.GradientTransformation:
        parts = [optax.clip_by_global_norm(max_grad_norm), scale_by_direction(eps=adam_eps)]
        if schedule is not None:
            parts.append(optax.scale_by_schedule(schedule))
        parts.append(optax.scale_by_learning_rate(learning_rate))
        return optax.chain(*parts)

    return optax.inject_hyperparams(chain)(learning_rate=learning_rate, max_grad_norm=max_grad_norm)


def step(
    tx: optax.GradientTransformation,
    grads: Any,
    opt_state: Any,
    params: Any,
    *,
    learning_rate: jax.Array | float,
    max_grad_norm: jax.Array | float,
) -> tuple[Any, Any]:
    """One optimiser step with these hyperparameters; returns (params, opt_state)."""
    injected = {
        "learning_rate": jnp.asarray(learning_rate, jnp.float32),
        "max_grad_norm": jnp.asarray(max_grad_norm, jnp.float32),
    }
    opt_state = opt_state._replace(hyperparams={**opt_state.hyperparams, **injected})
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


def linear_decay(total_steps: int) -> Callable[[jax.Array], jax.Array]:
    """Multiplier 1 -> 0 over optimiser steps 0 .. total_steps - 1 (exactly 0 at the last).
    The count enters as a float: past 2**31 steps (an endless run's budget) an int
    would not fit the program's int32."""
    return lambda step: 1.0 - step / float(max(total_steps - 1, 1))


def constant_one(step: jax.Array) -> jax.Array:
    """No annealing: the step size stays at its configured value."""
    return jnp.ones_like(step, jnp.float32)
