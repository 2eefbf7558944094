"""Rendering one episode of a trained policy to an animated GIF.

Craftax frames come from Craftax's own pixel renderer; CartPole is drawn from its
state (cart position and pole angle). Other envs have no renderer here and get a
clear message. One frame per step: the state each action was chosen in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nnxrl.envs import CRAFTAX_IDS, make_env
from nnxrl.policy import Policy

RENDERABLE = (*CRAFTAX_IDS, "CartPole-v1")


def draw_cartpole(state: Any, size: tuple[int, int] = (240, 360)) -> np.ndarray:
    """A CartPole frame [H, W, 3] uint8: track, cart, pole (x in [-2.4, 2.4])."""
    h, w = size
    frame = np.full((h, w, 3), 255, np.uint8)
    track_y = int(h * 0.75)
    frame[track_y, :] = (0, 0, 0)
    scale = w / 4.8
    cx = int(w / 2 + float(state.x) * scale)
    frame[track_y - 12 : track_y + 2, max(cx - 25, 0) : min(cx + 25, w)] = (40, 40, 40)
    length = 0.5 * 2 * scale  # pole length 1.0 (half-length 0.5)
    theta = float(state.theta)
    for t in np.linspace(0.0, 1.0, 200):
        px = int(cx + t * length * np.sin(theta))
        py = int(track_y - 12 - t * length * np.cos(theta))
        if 0 <= py < h and 0 <= px < w:
            frame[max(py - 2, 0) : py + 3, max(px - 2, 0) : px + 3] = (200, 120, 60)
    return frame


def with_timeline(frame: np.ndarray, index: int, count: int) -> np.ndarray:
    """The frame with a 4-pixel progress bar below it (step index / steps). The bar's
    first pixel column alternates shade from step to step, so no two consecutive
    frames are identical (GIF writers merge identical ones: one frame per step)."""
    bar = np.full((4, frame.shape[1], 3), 220, np.uint8)
    bar[:, : int(frame.shape[1] * (index + 1) / count)] = (30, 90, 200)
    bar[:, 0] = (30, 90, 200) if index % 2 else (20, 60, 140)
    return np.concatenate([frame, bar], axis=0)


def frame_renderer(env_id: str) -> Callable[[Any], np.ndarray]:
    """state of one env (unbatched) -> frame [H, W, 3] uint8."""
    if env_id in CRAFTAX_IDS:
        if "Classic" in env_id:
            from craftax.craftax_classic.renderer import make_craftax_pixel_renderer
        else:
            from craftax.craftax.renderer import make_craftax_pixel_renderer
        render = jax.jit(make_craftax_pixel_renderer(16))
        return lambda state: np.asarray(render(state)).clip(0, 255).astype(np.uint8)
    if env_id == "CartPole-v1":
        return draw_cartpole
    raise ValueError(
        f"nnxrl render: {env_id!r} has no renderer here; renderable envs: {', '.join(RENDERABLE)}"
    )


def render_episode(
    policy: Policy,
    seed: int,
    out: str | Path,
    key: jax.Array,
    greedy: bool = False,
    max_steps: int = 1000,
) -> dict[str, Any]:
    """Play one episode with seed ``seed``'s network and write it to ``out`` (GIF).
    Returns the episode's return, length and number of frames."""
    from PIL import Image

    if not 0 <= seed < policy.num_seeds:
        raise ValueError(f"--seed: {seed} is not one of the run's seeds 0..{policy.num_seeds - 1}")
    draw = frame_renderer(policy.env.id)
    env = make_env(dataclasses.replace(policy.env, num_envs=1, reset_ratio=1))
    model = nnx.merge(policy.graphdef, jax.tree.map(lambda x: x[seed], policy.params))

    @jax.jit
    def act_and_step(key, env_state, hidden, obs, start):
        action_key, step_key = jax.random.split(key)
        hidden, dist = policy.action_distribution(model, hidden, obs, start)
        action = dist.mode() if greedy else dist.sample(action_key)
        env_state, result = env.step(step_key, env_state, action)
        return env_state, hidden, result

    reset_key, key = jax.random.split(key)
    obs, env_state = jax.jit(env.reset)(reset_key)
    hidden, start = model.initial_hidden(1), jnp.ones(1, bool)
    frames, total, length = [], 0.0, 0
    for _ in range(max_steps):
        frames.append(draw(jax.tree.map(lambda x: x[0], env_state.env_state)))
        key, step_key = jax.random.split(key)
        env_state, hidden, result = act_and_step(step_key, env_state, hidden, obs, start)
        obs, start = result.obs, jnp.logical_or(result.terminated, result.truncated)
        total += float(result.reward[0])
        length += 1
        if bool(start[0]):
            break
    images = [Image.fromarray(with_timeline(f, i, len(frames))) for i, f in enumerate(frames)]
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    images[0].save(out, save_all=True, append_images=images[1:], duration=50, loop=0)
    return {"return": total, "length": length, "frames": len(frames), "ended": bool(start[0])}
