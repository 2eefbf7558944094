"""Small memory tasks with known optimal returns, fast on CPU, so that a memory
network's reach is measurable (POPGym-style; bsuite's MemoryChain is a gymnax id).

- ``RepeatPrevious-v0`` (``env.kwargs``: ``delay`` k, ``symbols`` n, ``length`` L):
  each step shows one of n symbols; from step k on, the action must name the symbol
  shown k steps before. Reward 1 / (L - k) per correct answer: the return is the
  fraction answered right, 1 at best, 1 / n by chance (all a policy without k steps
  of memory can do).
- ``StatelessCartPole-v1``: gymnax's CartPole with the velocities hidden (the
  observation is the cart's position and the pole's angle); 500 at best, and a
  feed-forward policy cannot tell which way the pole is falling.

Both are in the env registry (``registry.py``) as the ``memory`` family.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from nnxrl.envs.base import VecEnv
from nnxrl.envs.gymnax_env import make_gymnax_env
from nnxrl.envs.single import from_single

# cart position, pole angle (not their velocities); plain ints: an array made at import
# would start JAX before a run sets its devices
VISIBLE_CARTPOLE = (0, 2)


def make_repeat_previous(
    num_envs: int, delay: int = 4, symbols: int = 4, length: int = 16
) -> VecEnv:
    """RepeatPrevious-v0, batched (see the module docstring)."""
    if not (1 <= delay < length) or symbols < 2:
        raise ValueError(
            f"RepeatPrevious-v0: needs 1 <= delay < length and symbols >= 2; got "
            f"delay={delay}, length={length}, symbols={symbols}"
        )

    def reset_one(key):
        shown = jax.random.randint(key, (length,), 0, symbols)
        state = {"shown": shown, "t": jnp.int32(0)}
        return jax.nn.one_hot(shown[0], symbols), state

    def step_one(key, state, action):
        t, shown = state["t"], state["shown"]
        asked = shown[jnp.maximum(t - delay, 0)]
        scored = t >= delay
        reward = jnp.where(scored & (action == asked), 1.0 / (length - delay), 0.0)
        t = t + 1
        done = t >= length
        obs = jax.nn.one_hot(shown[jnp.minimum(t, length - 1)], symbols)
        return obs, {"shown": shown, "t": t}, reward, done, jnp.bool_(False)

    return from_single("RepeatPrevious-v0", reset_one, step_one, (symbols,), symbols, num_envs)


def make_stateless_cartpole(num_envs: int) -> VecEnv:
    """StatelessCartPole-v1, batched: CartPole-v1 observed without its velocities."""
    env = make_gymnax_env("CartPole-v1", num_envs)

    def hide(obs: jax.Array) -> jax.Array:
        return obs[..., list(VISIBLE_CARTPOLE)]

    def reset(key: jax.Array):
        obs, state = env.reset(key)
        return hide(obs), state

    def step(key: jax.Array, state, action: jax.Array) -> tuple:
        state, out = env.step(key, state, action)
        return state, out._replace(obs=hide(out.obs), final_obs=hide(out.final_obs))

    spec = env.spec._replace(id="StatelessCartPole-v1", obs_shape=(len(VISIBLE_CARTPOLE),))
    return VecEnv(spec=spec, num_envs=num_envs, reset=reset, step=step)
