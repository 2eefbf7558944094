"""The one optimiser (nnxrl.optim): the clip comes before Adam's direction, the
schedule multiplies the step size, and the injected step size and clip norm are
values the compiled step takes (so a sweep vmaps over them)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

from nnxrl import optim


def test_linear_decay_reaches_exactly_zero_on_the_last_step():
    decay = optim.linear_decay(5)
    assert [float(decay(jnp.float32(s))) for s in range(5)] == [1.0, 0.75, 0.5, 0.25, 0.0]
    assert float(optim.linear_decay(1)(jnp.float32(0))) == 1.0  # one step: no division by 0
    assert float(optim.constant_one(jnp.int32(7))) == 1.0


def test_a_step_matches_optax_clip_then_adam_then_the_step_size():
    params = {"w": jnp.array([1.0, -2.0, 3.0])}
    grads = {"w": jnp.array([30.0, -40.0, 0.0])}  # norm 50: clipped to 5
    tx = optim.make_optimizer(1e-5, optim.linear_decay(10))
    new, _ = optim.step(tx, grads, tx.init(params), params, learning_rate=0.1, max_grad_norm=5.0)
    reference = optax.chain(
        optax.clip_by_global_norm(5.0),
        optax.scale_by_adam(eps=1e-5),
        optax.scale_by_schedule(optim.linear_decay(10)),
        optax.scale_by_learning_rate(0.1),
    )
    updates, _ = reference.update(grads, reference.init(params), params)
    np.testing.assert_allclose(new["w"], optax.apply_updates(params, updates)["w"], rtol=1e-6)


def test_the_step_size_and_clip_norm_are_traced_values():
    params = {"w": jnp.ones(3)}
    grads = {"w": jnp.array([1.0, 2.0, 3.0])}
    tx = optim.make_optimizer(1e-8, direction="radam")
    state = tx.init(params)

    @jax.jit
    def one_step(learning_rate):
        new, _ = optim.step(
            tx, grads, state, params, learning_rate=learning_rate, max_grad_norm=1.0
        )
        return new["w"]

    moved = [one_step(jnp.float32(lr)) for lr in (0.0, 1e-3, 1e-2)]
    assert one_step._cache_size() == 1  # one program for every value
    np.testing.assert_allclose(jax.vmap(one_step)(jnp.array([0.0, 1e-3, 1e-2])), moved)
    np.testing.assert_array_equal(moved[0], params["w"])  # step size 0: no change
    steps = np.abs(np.asarray(moved[1:]) - 1.0).max(axis=1)  # RAdam's first steps: SGD
    np.testing.assert_allclose(steps[1] / steps[0], 10.0, rtol=1e-4)
