"""Rendering one episode of a trained policy to an animated GIF.

Craftax frames come from Craftax's own pixel renderer (its textures prepared once per
machine, ``envs/craftax_textures.py``). Classic control is drawn from the state
(CartPole, Acrobot, MountainCar; gymnax's own visualiser needs gym's pygame renderer,
so these few shapes are drawn here with Pillow). Jumanji, XLand-MiniGrid and Navix
envs are drawn by their suites' own renderers. Envs whose observation is a grid
(the MinAtar games, DeepSea, Catch, Pgx's 2048, ...) are drawn from the observation as gymnax's
visualiser does: one colour per channel. Other envs get a clear message. One frame
per step: the state each action was chosen in; ``scale`` enlarges frames (nearest
neighbour) and ``overlay`` writes the step and the return so far above each frame.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nnxrl.agent.policy import Policy
from nnxrl.envs import CRAFTAX_IDS, make_env
from nnxrl.envs.base import legal_actions
from nnxrl.envs.brax_env import PREFIX as BRAX_PREFIX
from nnxrl.envs.compiler_options import compiler_options
from nnxrl.envs.settings import EnvConfig
from nnxrl.envs.suites import suite_of
from nnxrl.hints import command

MOUNTAIN_CAR_GOALS = {"MountainCar-v0": 0.5, "MountainCarContinuous-v0": 0.45}
DRAWN_FROM_STATE = ("CartPole-v1", "Acrobot-v1", "Pendulum-v1", *MOUNTAIN_CAR_GOALS)
GRID_CELL = 16  # pixels per cell of a grid observation


def frame_renderer(env: EnvConfig, obs_shape: tuple[int, ...]) -> Callable[[Any, Any], np.ndarray]:
    """(state of one env, its observation) -> frame [H, W, 3] uint8."""
    env_id, suite = env.id, suite_of(env.id)
    if suite and hasattr(suite.module(), "frames"):  # the suite's own renderer
        return suite.module().frames(env_id.removeprefix(suite.prefix), env.kwargs)
    if env_id in CRAFTAX_IDS:
        from nnxrl.envs.craftax_textures import prepare_textures

        prepare_textures(env_id)
        if "Classic" in env_id:
            from craftax.craftax_classic.renderer import make_craftax_pixel_renderer
        else:
            from craftax.craftax.renderer import make_craftax_pixel_renderer
        render = jax.jit(make_craftax_pixel_renderer(16))
        return lambda state, obs: np.asarray(render(state)).clip(0, 255).astype(np.uint8)
    if env_id.startswith(BRAX_PREFIX):
        return brax_renderer(env_id)
    if env_id == "CartPole-v1":
        return lambda state, obs: draw_cartpole(state)
    if env_id == "Acrobot-v1":
        return lambda state, obs: draw_acrobot(state)
    if env_id == "Pendulum-v1":
        return lambda state, obs: draw_pendulum(state)
    if env_id in MOUNTAIN_CAR_GOALS:
        return lambda state, obs: draw_mountain_car(state, MOUNTAIN_CAR_GOALS[env_id])
    if len(obs_shape) in (2, 3):
        return lambda state, obs: draw_grid(obs)
    raise ValueError(
        f"nnxrl render: {env_id!r} has no renderer here; renderable envs: Craftax, "
        f"{', '.join(DRAWN_FROM_STATE)}, and any env whose observation is a grid "
        "(the MinAtar games, DeepSea, Catch, ...)"
    )


def brax_renderer(env_id: str) -> Callable[[Any, Any], np.ndarray]:
    """Brax's own renderer (MuJoCo's, through OpenGL: it needs a display, or EGL or
    OSMesa with MUJOCO_GL set); a clear error where none can be made."""
    from nnxrl.envs.brax_env import import_brax

    import_brax()
    from brax import envs
    from brax.io import image

    system = envs.get_environment(env_id.removeprefix(BRAX_PREFIX)).sys

    def draw(state: Any, obs: Any) -> np.ndarray:
        try:
            return np.asarray(image.render_array(system, state.state.pipeline_state, 240, 320))
        except Exception as e:  # mujoco.FatalError without an OpenGL context
            raise ValueError(
                f"nnxrl render: Brax draws {env_id} with MuJoCo's OpenGL renderer, which "
                f"could not start here ({str(e).splitlines()[0][:120]}); on a machine with "
                "a display, or with EGL/OSMesa and MUJOCO_GL=egl or osmesa, it renders. "
                f"`{command('eval')}` evaluates the policy without drawing"
            ) from None

    return draw


def draw_cartpole(state: Any, size: tuple[int, int] = (240, 360)) -> np.ndarray:
    """A CartPole frame [H, W, 3] uint8: track, cart, pole (x in [-2.4, 2.4])."""
    from PIL import Image, ImageDraw

    h, w = size
    image = Image.new("RGB", (w, h), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    track_y, scale = int(h * 0.75), w / 4.8
    draw.line([(0, track_y), (w, track_y)], fill=(0, 0, 0))
    cx = w / 2 + float(state.x) * scale
    draw.rectangle([cx - 25, track_y - 12, cx + 25, track_y + 2], fill=(40, 40, 40))
    length, theta = 1.0 * scale, float(state.theta)  # pole length 1.0
    tip = (cx + length * np.sin(theta), track_y - 12 - length * np.cos(theta))
    draw.line([(cx, track_y - 12), tip], fill=(200, 120, 60), width=6)
    return np.asarray(image)


def draw_acrobot(state: Any, size: int = 240) -> np.ndarray:
    """An Acrobot frame: two links of length 1 hanging from the centre, angles from
    straight down; the line the tip must rise above (height 1 above the pivot)."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (size, size), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    scale, pivot = size / 4.4, (size / 2, size / 2)
    a1, a2 = float(state.joint_angle1), float(state.joint_angle2)
    elbow = (pivot[0] + scale * np.sin(a1), pivot[1] + scale * np.cos(a1))
    tip = (elbow[0] + scale * np.sin(a1 + a2), elbow[1] + scale * np.cos(a1 + a2))
    goal_y = pivot[1] - scale
    draw.line([(0, goal_y), (size, goal_y)], fill=(0, 0, 0))
    for start, end in ((pivot, elbow), (elbow, tip)):
        draw.line([start, end], fill=(0, 80, 160), width=8)
    for x, y in (pivot, elbow):
        draw.ellipse([x - 5, y - 5, x + 5, y + 5], fill=(200, 200, 0))
    return np.asarray(image)


def draw_pendulum(state: Any, size: int = 240) -> np.ndarray:
    """A Pendulum frame: a rod of length 1 from the centre at angle ``state.theta``
    from upright (the goal, marked), and the last torque as an arc whose length is its
    size (max 2)."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (size, size), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    scale, (px, py) = size / 2.6, (size / 2, size / 2)
    theta = float(state.theta)
    tip = (px + scale * np.sin(theta), py - scale * np.cos(theta))
    draw.line([(px, py), (px, py - scale - 8)], fill=(200, 200, 200), width=1)  # upright
    draw.line([(px, py), tip], fill=(200, 60, 60), width=10)
    torque = float(np.asarray(state.last_u).reshape(-1)[0])
    if abs(torque) > 1e-3:
        r, sweep = scale * 0.35, 90.0 * min(abs(torque), 2.0)
        start = -90.0 if torque > 0 else -90.0 - sweep
        draw.arc([px - r, py - r, px + r, py + r], start, start + sweep, fill=(0, 0, 0), width=3)
    draw.ellipse([px - 5, py - 5, px + 5, py + 5], fill=(40, 40, 40))
    return np.asarray(image)


def draw_mountain_car(state: Any, goal: float, size: tuple[int, int] = (240, 360)) -> np.ndarray:
    """A MountainCar frame: the hill y = 0.45 sin(3x) + 0.55 over x in [-1.2, 0.6], the
    car at ``state.position``, the flag at ``goal``."""
    from PIL import Image, ImageDraw

    h, w = size
    image = Image.new("RGB", (w, h), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    low, high = -1.2, 0.6
    scale = w / (high - low)

    def point(x: float, lift: float = 0.0) -> tuple[float, float]:
        return (x - low) * scale, h - 20 - (0.45 * np.sin(3 * x) + 0.55 + lift) * scale * 0.9

    draw.line([point(x) for x in np.linspace(low, high, 100)], fill=(0, 0, 0), width=2)
    fx, fy = point(goal)
    draw.line([(fx, fy), (fx, fy - 40)], fill=(0, 0, 0), width=2)
    draw.polygon([(fx, fy - 40), (fx + 20, fy - 33), (fx, fy - 26)], fill=(220, 180, 0))
    cx, cy = point(float(state.position), lift=0.04)
    draw.ellipse([cx - 12, cy - 12, cx + 12, cy + 12], fill=(40, 40, 40))
    return np.asarray(image)


def draw_grid(obs: Any) -> np.ndarray:
    """A grid observation [H, W] or [H, W, C] as an image: black where every channel is
    0, else the colour of the last channel set (a cubehelix palette over C channels,
    as gymnax's MinAtar visualiser), GRID_CELL pixels per cell."""
    from matplotlib import colormaps

    grid = np.asarray(obs, np.float32)
    grid = grid[..., None] if grid.ndim == 2 else grid
    channels = grid.shape[-1]
    palette = colormaps["cubehelix"](np.linspace(0.25, 0.9, channels))[:, :3]
    palette = np.concatenate([np.zeros((1, 3)), palette]) * 255
    index = np.max(np.where(grid > 0, np.arange(1, channels + 1), 0), axis=-1)
    frame = palette[index].astype(np.uint8)
    return frame.repeat(GRID_CELL, axis=0).repeat(GRID_CELL, axis=1)


def with_timeline(frame: np.ndarray, index: int, count: int) -> np.ndarray:
    """The frame with a 4-pixel progress bar below it (step index / steps). The bar's
    first pixel column alternates shade from step to step, so no two consecutive
    frames are identical (GIF writers merge identical ones: one frame per step)."""
    bar = np.full((4, frame.shape[1], 3), 220, np.uint8)
    bar[:, : int(frame.shape[1] * (index + 1) / count)] = (30, 90, 200)
    bar[:, 0] = (30, 90, 200) if index % 2 else (20, 60, 140)
    return np.concatenate([frame, bar], axis=0)


def with_caption(frame: np.ndarray, text: str) -> np.ndarray:
    """The frame below a 14-pixel band holding ``text``."""
    from PIL import Image, ImageDraw

    band = Image.new("RGB", (frame.shape[1], 14), (255, 255, 255))
    ImageDraw.Draw(band).text((3, 1), text, fill=(0, 0, 0))
    return np.concatenate([np.asarray(band), frame], axis=0)


def render_episode(
    policy: Policy,
    seed: int,
    out: str | Path,
    key: jax.Array,
    greedy: bool = False,
    max_steps: int = 1000,
    *,
    scale: int = 1,
    overlay: bool = False,
    fast_compile: bool = False,
) -> dict[str, Any]:
    """Play one episode with seed ``seed``'s network and write it to ``out`` (GIF),
    frames enlarged ``scale`` times, with the step and return so far above each when
    ``overlay``; ``fast_compile`` as the config key of that name. Returns the episode's
    return, length and number of frames."""
    if not 0 <= seed < policy.num_seeds:
        raise ValueError(f"--seed: {seed} is not one of the run's seeds 0..{policy.num_seeds - 1}")
    env = make_env(dataclasses.replace(policy.env, num_envs=1, reset_ratio=1))
    draw = frame_renderer(policy.env, env.spec.obs_shape)
    frames = []

    def add_frame(state: Any, obs: Any, total: float) -> None:
        frame = draw(state, obs)
        if scale > 1:
            frame = frame.repeat(scale, axis=0).repeat(scale, axis=1)
        if overlay:
            frame = with_caption(frame, f"step {len(frames)}  return {total:.2f}")
        frames.append(frame)

    total, length, ended = play_episode(
        policy, env, seed, key, greedy, max_steps, add_frame, fast=fast_compile
    )
    write_gif(frames, Path(out))
    return {"return": total, "length": length, "frames": len(frames), "ended": ended}


def play_episode(
    policy: Policy,
    env: Any,
    seed: int,
    key: jax.Array,
    greedy: bool,
    max_steps: int,
    before_step: Callable[[Any, Any, float], None],
    fast: bool = False,
) -> tuple[float, int, bool]:
    """Seed ``seed``'s network in one env until its episode ends (or ``max_steps``),
    calling ``before_step(env state, observation, return so far)`` before each step;
    returns the episode's return, length and whether it ended. Compiled with the XLA
    options of the env (and of ``fast_compile`` when ``fast``), as training is."""
    model = nnx.merge(policy.graphdef, jax.tree.map(lambda x: x[seed], policy.params))
    moments = policy.seed_moments(seed)
    options = compiler_options(env.spec, fast)

    @partial(jax.jit, compiler_options=options)
    def act_and_step(key, env_state, hidden, obs, start):
        action_key, step_key = jax.random.split(key)
        legal = legal_actions(env, env_state)
        hidden, dist = policy.action_distribution(model, hidden, obs, start, moments, legal)
        action = dist.mode() if greedy else dist.sample(action_key)
        env_state, result = env.step(step_key, env_state, action)
        return env_state, hidden, result

    reset_key, key = jax.random.split(key)
    obs, env_state = jax.jit(partial(reset_as_step_does, env), compiler_options=options)(reset_key)
    hidden, start = model.initial_hidden(1), jnp.ones(1, bool)
    total, length = 0.0, 0
    for _ in range(max_steps):
        before_step(jax.tree.map(lambda x: x[0], env_state.env_state), obs[0], total)
        key, step_key = jax.random.split(key)
        env_state, hidden, result = act_and_step(step_key, env_state, hidden, obs, start)
        obs, start = result.obs, jnp.logical_or(result.terminated, result.truncated)
        total += float(result.reward[0])
        length += 1
        if bool(start[0]):
            break
    return total, length, bool(start[0])


def reset_as_step_does(env: Any, key: jax.Array) -> tuple[jax.Array, Any]:
    """``env.reset(key)`` with every array strongly typed, as ``env.step`` returns them:
    Craftax's reset leaves some fields weakly typed (``player_direction``), and a state
    of other types would compile ``act_and_step`` and the renderer a second time at the
    second step (about 20 s for Craftax)."""
    return jax.tree.map(lambda x: jax.lax.convert_element_type(x, x.dtype), env.reset(key))


def write_gif(frames: list[np.ndarray], out: Path) -> None:
    """The frames as an animated GIF (20 frames a second), a timeline under each."""
    from PIL import Image

    images = [Image.fromarray(with_timeline(f, i, len(frames))) for i, f in enumerate(frames)]
    out.parent.mkdir(parents=True, exist_ok=True)
    images[0].save(out, save_all=True, append_images=images[1:], duration=50, loop=0)
