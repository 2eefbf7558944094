"""Craftax environments as a VecEnv with optimistic resets.

Craftax's own wrappers report ``done`` only; here the time limit
(``timestep >= max_timesteps``) is told apart from death so PPO can bootstrap
through it, and each finished episode reports its achievements.

Resetting many worlds at once is the expensive part of Craftax on a CPU: world
generation is noise-based, and by default XLA CPU turns parts of a vmapped reset into
YNNPACK element-wise and reduction fusions, one of which takes 44 s for 1024 worlds.
The programs are therefore compiled with YNNPACK fusions kept to single dot
products on CPU (``EnvSpec.cpu_options``, applied by ``nnxrl.run.programs``): world
generation then runs as XLA's own code, while the network's matrix products keep
YNNPACK's kernels. (Keeping the fusions to dots *with* their neighbours,
``LIBRARY_FUSION_TYPE_DOT``, the earlier choice, also avoids the slow fusion but makes
the network's products slower: feed-forward PPO ran at 253 env steps/s with it, 424
with XLA's defaults and 464 with single dots; ``docs/performance.md``.) With
``reset_ratio > 1`` only ``num_envs / reset_ratio`` fresh worlds are made each step and
shared out among the envs that finished (the optimistic reset of the Craftax baselines).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from nnxrl.envs.base import EnvSpec, EnvStep, VecEnv
from nnxrl.envs.craftax_textures import prepare_textures

# On CPU, world generation compiles into one very slow YNNPACK fusion; keeping YNNPACK
# to single dot products avoids it and keeps the network fast (docs/performance.md).
YNN_DOTS_ONLY = (("xla_cpu_experimental_ynn_fusion_type", "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"),)

CRAFTAX_IDS = (
    "Craftax-Classic-Symbolic-v1",
    "Craftax-Classic-Pixels-v1",
    "Craftax-Symbolic-v1",
    "Craftax-Pixels-v1",
)


def generate_worlds(reset_one, keys: jax.Array):
    """reset_one vmapped over keys [N]."""
    return jax.vmap(reset_one)(keys)


def assign_resets(done: jax.Array, num_fresh: int) -> jax.Array:
    """For each env, the index of the fresh world it takes if it is done.

    The k-th finished env (in env order) takes world ``k mod num_fresh``, so up
    to ``num_fresh`` finished envs each get a distinct new world.
    done: [B] bool -> [B] int32.
    """
    return (jnp.cumsum(done) - 1) % num_fresh


def make_craftax_env(env_id: str, num_envs: int, reset_ratio: int = 1) -> VecEnv:
    """``num_envs`` Craftax worlds, ``num_envs // reset_ratio`` fresh ones generated
    each step for the envs whose episode ended (optimistic resets)."""
    from craftax.craftax_env import make_craftax_env_from_name

    if "Pixels" in env_id:  # pixel observations are drawn from the textures
        prepare_textures(env_id)
    env = make_craftax_env_from_name(env_id, auto_reset=False)
    params = env.default_params
    # The same env with an unreachable time limit tells death from the time limit.
    no_limit = params.replace(max_timesteps=jnp.iinfo(jnp.int32).max)
    reset_one = partial(reset_world, env, params)
    step_one = partial(step_world, env, params, no_limit)
    spec = EnvSpec(
        id=env_id,
        obs_shape=tuple(env.observation_space(params).shape),
        num_actions=int(env.num_actions),
        achievement_names=achievement_names(env_id),
        cpu_options=YNN_DOTS_ONLY,
    )
    reset = partial(reset_worlds, reset_one, num_envs)
    step = partial(step_worlds, reset_one, step_one, num_envs, num_envs // reset_ratio)
    return VecEnv(spec=spec, num_envs=num_envs, reset=reset, step=step)


def achievement_names(env_id: str) -> tuple[str, ...]:
    """The achievements of Craftax-Classic or of Craftax, in the env's order."""
    if "Classic" in env_id:
        from craftax.craftax_classic.constants import Achievement
    else:
        from craftax.craftax.constants import Achievement
    return tuple(a.name.lower() for a in Achievement)


def reset_world(env: Any, params: Any, key: jax.Array) -> tuple[jax.Array, Any]:
    obs, state = env.reset(key, params)
    return obs.astype(jnp.float32), state


def step_world(env: Any, params: Any, no_limit: Any, key: jax.Array, state: Any, action: Any):
    """One world's step: (obs, state, reward, done, terminated: done but not by the
    time limit)."""
    obs, state, reward, done, _ = env.step(key, state, action, params)
    terminated = env.is_terminal(state, no_limit)
    return obs.astype(jnp.float32), state, reward, done, terminated


def reset_worlds(reset_one: Any, num_envs: int, key: jax.Array) -> tuple[jax.Array, Any]:
    return generate_worlds(reset_one, jax.random.split(key, num_envs))


def step_worlds(
    reset_one: Any, step_one: Any, num_envs: int, num_fresh: int, key: jax.Array, state, action
) -> tuple[Any, EnvStep]:
    """Step every world; those whose episode ended take one of ``num_fresh`` freshly
    generated worlds (``assign_resets``)."""
    step_key, reset_key = jax.random.split(key)
    obs, stepped, reward, done, terminated = jax.vmap(step_one)(
        jax.random.split(step_key, num_envs), state, action
    )
    fresh_obs, fresh = generate_worlds(reset_one, jax.random.split(reset_key, num_fresh))
    pick = assign_resets(done, num_fresh)

    def choose(fresh_leaf, stepped_leaf):
        mask = done.reshape((-1,) + (1,) * (stepped_leaf.ndim - 1))
        return jnp.where(mask, fresh_leaf[pick], stepped_leaf)

    next_state = jax.tree.map(choose, fresh, stepped)
    next_obs = choose(fresh_obs, obs)
    return next_state, EnvStep(
        obs=next_obs,
        reward=reward.astype(jnp.float32),
        terminated=terminated,
        truncated=jnp.logical_and(done, ~terminated),
        final_obs=obs,
        episode={"achievements": stepped.achievements.astype(jnp.float32)},
    )
