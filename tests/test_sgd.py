"""Epochs of minibatch steps (nnxrl.algos.sgd), shared by every algorithm: each epoch
visits every step of the batch once, one optimiser step per minibatch, and a
quadratic loss is minimised."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from nnxrl import optim
from nnxrl.algos import sgd
from nnxrl.types import UpdateState


@dataclass(frozen=True)
class Static:
    tx: optax.GradientTransformation
    lr_schedule: Any
    num_epochs: int
    num_minibatches: int
    sequences: bool = False
    shuffle_groups: int = 1


class Hp(NamedTuple):
    learning_rate: jax.Array
    max_grad_norm: jax.Array


def fit_mean(params, minibatch, hp, s):
    """0.5 (w - x)^2 averaged: minimised by the mean of x; reports the steps it saw."""
    loss = 0.5 * jnp.mean((params["w"] - minibatch["x"]) ** 2)
    return loss, {"loss": loss, "seen": minibatch["x"].sum(), "count": minibatch["x"].size}


def run(num_epochs: int, num_minibatches: int, lr: float):
    s = Static(optim.make_optimizer(1e-8), optim.constant_one, num_epochs, num_minibatches)
    params = {"w": jnp.float32(0.0)}
    state = UpdateState(params, s.tx.init(params), jnp.int32(0))
    batch = {"x": jnp.arange(32, dtype=jnp.float32).reshape(4, 8)}  # [T, B]
    hp = Hp(jnp.float32(lr), jnp.float32(100.0))
    return sgd.update_epochs(state, batch, jax.random.key(0), hp, s, fit_mean)


def test_every_epoch_visits_every_step_once():
    state, metrics = run(num_epochs=3, num_minibatches=4, lr=0.0)
    assert metrics["loss"].shape == (3, 4)  # [E, M]
    np.testing.assert_array_equal(metrics["count"], np.full((3, 4), 8))
    np.testing.assert_array_equal(metrics["seen"].sum(axis=1), np.full(3, sum(range(32))))
    assert int(state.opt_step) == 12  # one optimiser step per minibatch


def test_the_epochs_minimise_the_loss():
    state, metrics = run(num_epochs=200, num_minibatches=2, lr=0.5)
    assert abs(float(state.params["w"]) - 15.5) < 0.5  # the mean of 0..31
    floor = 0.5 * np.var(np.arange(32))  # the loss at the mean
    assert metrics["loss"][0].mean() > 3 * floor
    assert abs(float(metrics["loss"][-1].mean()) - floor) < 0.1 * floor
