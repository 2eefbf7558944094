"""gymnax environments as a VecEnv (gymnax >= 1.0 resets itself and splits
terminated from truncated, returning the final observation in ``info``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from nnxrl.envs.base import EnvSpec, EnvStep, VecEnv


def gymnax_ids() -> list[str]:
    import gymnax

    return list(gymnax.registered_envs)


def make_gymnax_env(env_id: str, num_envs: int, **kwargs) -> VecEnv:
    import gymnax
    from gymnax.environments import spaces

    env, params = gymnax.make(env_id, **kwargs)
    action_space = env.action_space(params)
    if not isinstance(action_space, spaces.Discrete):
        raise ValueError(
            f"env.id: {env_id!r} has a continuous action space; nnxrl's PPO takes "
            "discrete actions (e.g. CartPole-v1, Acrobot-v1, the MinAtar and bsuite ids)"
        )
    obs_shape = tuple(env.observation_space(params).shape)

    def reset(key: jax.Array):
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, num_envs), params)
        return obs.astype(jnp.float32), state

    def step(key: jax.Array, state, action: jax.Array):
        obs, state, reward, terminated, truncated, info = jax.vmap(
            env.step, in_axes=(0, 0, 0, None)
        )(jax.random.split(key, num_envs), state, action, params)
        return state, EnvStep(
            obs=obs.astype(jnp.float32),
            reward=reward.astype(jnp.float32),
            terminated=terminated.astype(bool),
            truncated=jnp.logical_and(truncated, ~terminated),
            final_obs=info["final_observation"].astype(jnp.float32),
            episode={},
        )

    spec = EnvSpec(id=env_id, obs_shape=obs_shape, num_actions=int(action_space.n))
    return VecEnv(spec=spec, num_envs=num_envs, reset=reset, step=step)
