"""A chunk of updates as one guarded scan (nnxrl.run.chunk): the first non-finite update
of any seed freezes every seed at its last good state and is reported."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from nnxrl import config as config_lib
from nnxrl.parallel.mesh import make_layout
from nnxrl.run.chunk import SEED_AXIS, all_finite, train_chunk
from nnxrl.run.programs import chunk_program


@struct.dataclass
class State:
    params: jax.Array  # [] a counter standing in for the parameters
    bad_at: jax.Array  # [] the update whose result is NaN


def update(state: State, hp: jax.Array) -> tuple[State, dict]:
    """Adds hp; the update numbered ``bad_at`` produces a NaN."""
    params = jnp.where(state.params + 1 == state.bad_at, jnp.nan, state.params + hp)
    return state.replace(params=params), {"loss": params * 2}


def test_all_finite_looks_at_floating_leaves_only():
    assert bool(all_finite({"a": jnp.ones(3), "n": jnp.array([1, 2], jnp.int32)}))
    assert not bool(all_finite({"a": jnp.array([1.0, jnp.inf])}))
    assert bool(all_finite({}))


def test_a_chunk_without_trouble_is_a_plain_scan():
    chunk = partial(train_chunk, update_fn=update, num_updates=5, axis_name=None)
    state, metrics = jax.jit(chunk)(State(jnp.float32(0), jnp.float32(99)), jnp.float32(1))
    assert float(state.params) == 5.0
    np.testing.assert_array_equal(metrics["loss"], [2, 4, 6, 8, 10])
    np.testing.assert_array_equal(metrics["nonfinite"], np.zeros(5))


def test_the_first_nan_of_one_seed_freezes_every_seed_at_its_last_good_state():
    chunk = partial(train_chunk, update_fn=update, num_updates=6)
    run = jax.jit(jax.vmap(chunk, in_axes=(0, None), axis_name=SEED_AXIS))
    starts = State(jnp.zeros(2, jnp.float32), jnp.array([99.0, 3.0]))  # seed 1: bad update 3
    state, metrics = run(starts, jnp.float32(1))
    np.testing.assert_array_equal(state.params, [2.0, 2.0])  # both kept the state of update 2
    assert metrics["nonfinite"][1, 2] == 1.0 and metrics["nonfinite"][0, 2] == 0.0
    assert metrics["nonfinite"][:, :2].sum() == 0


@pytest.mark.parametrize("seeds", [2, 4])
def test_a_nan_on_one_device_freezes_the_seeds_of_every_device(seeds):
    """Seeds split over this process's two CPU devices, each device mapping its own
    (one, or two vmapped): the last seed's NaN at update 3 stops them all."""
    config = config_lib.load("ppo-cartpole", [f"num_seeds={seeds}", "logging.backends=[]"])
    layout = make_layout(config)
    assert layout.seed_shards == 2
    program = chunk_program(config, update, 6, None, None, layout)
    bad_at = np.full(seeds, 99.0, np.float32)
    bad_at[-1] = 3.0
    starts = jax.device_put(State(jnp.zeros(seeds), jnp.asarray(bad_at)), layout.by_seed)
    state, metrics = jax.jit(program)(starts, jnp.float32(1))
    np.testing.assert_array_equal(state.params, np.full(seeds, 2.0))
    assert metrics["nonfinite"][-1, 2] == 1.0 and metrics["nonfinite"][:-1].sum() == 0
