"""nnxrl render on every kind of env it draws: classic control from the state, grid
observations (MinAtar, bsuite) from the observation; --scale and --overlay."""

import numpy as np
import pytest
from PIL import Image

import nnxrl
from nnxrl import config as C
from nnxrl.agent.policy import policy_of
from nnxrl.agent.render import render_episode

TINY = [
    "fast_compile=true",
    "env.num_envs=4",
    "ppo.num_steps=16",
    "total_env_steps=128",
    "ppo.num_minibatches=2",
    "network.width=32",
    "logging.backends=[]",
]
ENVS = {  # env id -> frame size (width, height) at scale 1
    "Acrobot-v1": (240, 240),
    "MountainCar-v0": (360, 240),
    "Breakout-MinAtar": (160, 160),
    "DeepSea-bsuite": (128, 128),
}


def frames_of(path):
    with Image.open(path) as image:
        frames = []
        for i in range(image.n_frames):
            image.seek(i)
            frames.append(np.asarray(image.convert("RGB")))
    return frames


@pytest.mark.parametrize("env_id", list(ENVS))
def test_render_draws_each_step(env_id, tmp_path):
    config = C.load("configs/ppo-cartpole.yaml", [*TINY, f"env.id={env_id}"])
    policy = policy_of(config, nnxrl.train(config).params)
    out = tmp_path / "episode.gif"
    info = render_episode(policy, 0, out, key_of(0), max_steps=40, scale=2, overlay=True)
    frames = frames_of(out)
    assert len(frames) == info["frames"] == info["length"] > 1
    width, height = ENVS[env_id]
    assert frames[0].shape == (2 * height + 14 + 4, 2 * width, 3)  # caption, timeline
    body = [f[14:-4] for f in frames]
    assert len({b.tobytes() for b in body}) > 1  # the picture follows the episode
    assert all((b != b[0, 0]).any() for b in body)  # not blank: two colours or more
    captions = [f[:14] for f in frames]
    assert captions[0].min() < 128 and captions[0].tobytes() != captions[-1].tobytes()


def key_of(seed):
    import jax

    return jax.random.key(seed)
