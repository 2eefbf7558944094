"""PPO's compiled program: hyperparameters as traced values, advantage-normalisation modes."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nnxrl import config as C
from nnxrl.config import schedule
from nnxrl.envs import make_env
from nnxrl.run.algorithms import hyperparams_from, make_algorithm
from nnxrl.run.chunk import train_chunk

TINY = [
    "fast_compile=true",
    "total_env_steps=512",
    "ppo.num_steps=16",
    "ppo.num_minibatches=2",
    "logging.updates_per_chunk=4",
    "ppo.num_epochs=2",
]


def build(*overrides):
    config = C.load("configs/ppo-cartpole.yaml", [*TINY, *overrides])
    env = make_env(config.env)
    return config, make_algorithm(config, env)


def chunk_of(config, ppo):
    """A chunk of updates without the cross-seed guard (these tests vmap other axes)."""
    return partial(
        train_chunk,
        update_fn=ppo.update,
        num_updates=schedule.updates_per_chunk(config),
        axis_name=None,
    )


def test_a_sweep_vmaps_over_hyperparameters_in_one_program():
    config, ppo = build()
    key = jax.random.key(3)
    hp = hyperparams_from(config)
    rates = jnp.array([2.5e-4, 1e-2])
    swept = hp._replace(learning_rate=rates)
    hp_axes = hp._replace(**{f: None for f in hp._fields if f != "learning_rate"})
    hp_axes = hp_axes._replace(learning_rate=0)
    state = jax.jit(ppo.init)(key)
    states = jax.tree.map(lambda x: jnp.stack([x, x]), state)
    sweep = jax.jit(jax.vmap(chunk_of(config, ppo), in_axes=(0, hp_axes)))
    _, metrics = sweep(states, swept)
    single = jax.jit(chunk_of(config, ppo))
    for i, lr in enumerate(rates):
        _, alone = single(state, hp._replace(learning_rate=lr))
        np.testing.assert_allclose(
            metrics["loss/total"][i], alone["loss/total"], rtol=1e-4, atol=1e-5
        )
        np.testing.assert_allclose(
            metrics["stats/learning_rate"][i], alone["stats/learning_rate"], rtol=1e-6
        )
    assert not np.allclose(metrics["loss/total"][0], metrics["loss/total"][1])


@pytest.mark.parametrize("mode", ["batch", "none"])
def test_advantage_normalization_modes_run_and_differ(mode):
    key = jax.random.key(0)
    results = {}
    for m in ("minibatch", mode):
        config, ppo = build(f"ppo.advantage_normalization={m}")
        state = jax.jit(ppo.init)(key)
        _, metrics = jax.jit(chunk_of(config, ppo))(state, hyperparams_from(config))
        assert np.all(np.isfinite(metrics["loss/policy"]))
        results[m] = np.asarray(metrics["loss/policy"])
    # the first update starts from the same parameters and data; normalisation changes it
    assert not np.allclose(results["minibatch"][0], results[mode][0])


def test_init_is_one_function_that_jits_and_vmaps_over_seeds():
    """Networks (orthogonal, in jnp), optimiser, envs and the add-on's networks are all
    made inside one compiled, vmapped init."""
    from nnxrl.intrinsic import addon_for

    config = C.load(
        "configs/rnd-craftax-classic-symbolic.yaml",
        [*TINY, "env.id=CartPole-v1", "env.num_envs=4", "env.reset_ratio=1", "network.width=32"]
        + ["intrinsic.options={width: 16}", "intrinsic.num_minibatches=2"],
    )
    env = make_env(config.env)
    ppo = make_algorithm(config, env, addon_for(config, env.spec, config.ppo.num_minibatches))
    keys = jax.random.split(jax.random.key(0), 3)
    states = jax.jit(jax.vmap(ppo.init))(keys)
    kernels = [x for x in jax.tree.leaves(states.params) if x.ndim == 3]  # [S, in, out]
    assert kernels and all(k.shape[0] == 3 for k in kernels)
    for kernel in kernels:
        assert not np.allclose(kernel[0], kernel[1])  # seeds differ
        w = np.asarray(kernel[0])
        gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
        scale = gram[0, 0]  # orthogonal up to the layer's gain
        np.testing.assert_allclose(gram, scale * np.eye(len(gram)), atol=1e-4 * max(scale, 1))
    predictor = jax.tree.leaves(states.addon.params)
    assert predictor and all(x.shape[0] == 3 for x in predictor)
    single = jax.jit(ppo.init)(keys[1])
    for a, b in zip(jax.tree.leaves(single.params), jax.tree.leaves(states.params), strict=True):
        np.testing.assert_allclose(a, b[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["feedforward", "gru"])
def test_each_step_bootstraps_from_the_value_of_its_own_final_observation(kind):
    """V(final obs) is computed after the rollout (feed-forward) or inside it (GRU);
    either way, where no episode ended at step t the final observation is the next
    one, so final_value[t] == value[t + 1]; at a time limit it is not the reset's."""
    from nnxrl.algos.on_policy import collect_rollout

    config, ppo = build("env.kwargs={max_steps_in_episode: 6}", f"network.kind={kind}")
    s = ppo.update.keywords["s"]
    state = jax.jit(ppo.init)(jax.random.key(0))
    _, t, _, _ = jax.jit(partial(collect_rollout, plan=None, s=s))(state)
    final, value = np.asarray(t.final_value[:-1, :, 0]), np.asarray(t.value[1:, :, 0])
    ended = np.asarray(t.terminated | t.truncated)[:-1]
    assert ended.any() and (~ended).any()
    np.testing.assert_allclose(final[~ended], value[~ended], rtol=1e-5, atol=1e-6)
    truncated = np.asarray(t.truncated & ~t.terminated)[:-1]
    assert truncated.any()
    assert not np.allclose(final[truncated], value[truncated])
