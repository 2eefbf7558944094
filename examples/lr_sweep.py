"""A learning-rate sweep as one compiled program: ``vmap`` over the traced
hyperparameters (and over seeds), no recompilation per setting.

Every coefficient in ``Hyperparams`` (learning rate, entropy and value coefficients,
clip ranges, gamma, GAE lambda, gradient clip, intrinsic coefficients) is an array
inside the program, so a population of settings is one more vmapped axis. This is
the mechanism written out by hand in your own loop; a config's ``sweep:`` section
does the same for ``nnxrl train``, with seeds, the device mesh, logging per setting,
checkpoints and a report (README, "Sweeps").
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

import nnxrl
from nnxrl.config import schedule
from nnxrl.run.chunk import train_chunk


def main(total_env_steps: int = 100_000, rates=(1e-4, 3e-4, 1e-3, 3e-3)) -> np.ndarray:
    config = nnxrl.load_config("configs/ppo-cartpole.yaml", [f"total_env_steps={total_env_steps}"])
    env = nnxrl.make_env(config.env)
    ppo = nnxrl.make_algorithm(config, env)
    key = jax.random.key(config.seed)
    state = jax.jit(ppo.init)(key)  # the same start for every setting

    hp = nnxrl.hyperparams_from(config)
    swept = hp._replace(learning_rate=jnp.asarray(rates, jnp.float32))
    axes = hp._replace(**{name: None for name in hp._fields})._replace(learning_rate=0)
    run = partial(
        train_chunk, update_fn=ppo.update, num_updates=schedule.num_updates(config), axis_name=None
    )
    states = jax.tree.map(lambda x: jnp.stack([x] * len(rates)), state)
    _, metrics = jax.jit(jax.vmap(run, in_axes=(0, axes)))(states, swept)
    returns = np.asarray(metrics["episode_return"])  # [settings, updates]
    final = returns[:, -20:].mean(axis=1)
    for rate, value in zip(rates, final, strict=True):
        print(f"learning rate {rate:.0e}: mean return over the last 20 updates {value:.1f}")
    return final


if __name__ == "__main__":
    main()
