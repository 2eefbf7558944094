"""A training loop written by hand around PPO's ``init`` and ``update``: the whole run
is one ``jit`` of a ``scan`` over updates, as in rejax or purejaxrl; logging is yours."""

from __future__ import annotations

import jax
import numpy as np

import nnxrl
from nnxrl.algos import ppo
from nnxrl.config import schedule


def main(total_env_steps: int = 100_000) -> np.ndarray:
    config = nnxrl.load_config("configs/ppo-cartpole.yaml", [f"total_env_steps={total_env_steps}"])
    env = nnxrl.make_env(config.env)
    # PPO from its own settings and the run's length; no add-on: the no-bonus default
    run = nnxrl.RunFacts(num_updates=schedule.num_updates(config))
    agent = ppo.make_ppo(config.ppo, env, run, network=config.network)
    hp = ppo.hyperparams(config.ppo)
    key = jax.random.key(config.seed)

    @jax.jit
    def run(key):
        state = agent.init(key)  # networks, optimiser, envs: all inside the program
        state, metrics = jax.lax.scan(
            lambda s, _: agent.update(s, hp), state, length=schedule.num_updates(config)
        )
        return state, metrics

    state, metrics = run(key)
    returns = np.asarray(metrics["episode_return"])
    updates = schedule.num_updates(config)
    print(f"{updates} updates; mean return over the last 20: {returns[-20:].mean():.1f}")
    return returns


if __name__ == "__main__":
    main()
