"""nnxrl beside rejax, side by side in one run: PPO (or DQN) on CartPole-v1, SAC on
Pendulum-v1, at matched settings.

    uv run python benchmarks/peers.py                  # 1 and 8 seeds, 3 alternated repetitions
    uv run python benchmarks/peers.py --seeds 1 --repeats 1
    uv run python benchmarks/peers.py --algo dqn       # DQN: nnxrl and rejax
    uv run python benchmarks/peers.py --algo sac       # SAC: nnxrl and rejax

A third side, "plain JAX", is the least PPO program that computes what nnxrl's config
asks (``benchmarks/ppo_floor.py --matched``: one jitted function, the annealed learning
rate and the time-limit bootstrap, nothing else either library adds); its compile
time and rate bound what a PPO written in JAX reaches on this machine.

Each measurement is a fresh process, so every compile is cold (nnxrl's persistent
compilation cache is switched off for them); the sides take turns within each
repetition (the order rotated each repetition, and reversed every other one) so that
drift in the machine's speed hits all alike, and the table shows medians. rejax runs
in an isolated environment of its own (``uv run --isolated --with rejax==0.1.3 --with
gymnax==0.0.9``: rejax 0.1.3 needs gymnax 0.0.9), so neither library's pins touch the
other's. A last nnxrl row
runs with the cache on, twice, and reports the second (warm) start: its programs
loaded from the saved executables, nothing traced. Every row gives the worker's peak
host memory (max RSS).

Matched settings (nnxrl's configs/ppo-cartpole.yaml): 4 envs x 128 steps, 4 epochs x
4 minibatches, Adam at 2.5e-4, gamma 0.99, GAE lambda 0.95, clip 0.2 (value clip
too), entropy 0.01, value 0.5, gradient clip 0.5, two tanh layers of 64 for actor and
critic, 500k env steps per seed. Where they differ by design: rejax does not anneal
the learning rate (nnxrl's config does), clips gradients element-wise (optax.clip;
nnxrl by global norm), updates actor and critic with two optimisers, and treats
time-limit truncation as termination (nnxrl bootstraps through it, one more critic
pass per env step). rejax's periodic evaluation is off (one evaluation at the end,
outside the timed run). "Final return" is, for both, the mean undiscounted return
of 128 episodes played by the final policy (actions sampled), averaged over seeds.

DQN (``--algo dqn``; no plain-JAX side): nnxrl's configs/dqn-cartpole.yaml with
rejax's settings, which it quotes (10 envs, one step each, then 5 gradient steps on
batches of 100 from a 50,000-transition buffer filled with 5,000 first; Adam at 1e-3,
double Q-learning, the target Polyak-averaged once per update with 0.98 of the old,
epsilon 1 -> 0.05 over half the run, two SiLU/swish layers of 64, 200k env steps),
with the config's two changes undone for equal settings (1-step returns, a constant
step size). Where they differ by design: rejax acts uniformly at random until the
buffer is filled (nnxrl epsilon-greedily, epsilon near 1 then), clips gradients
element-wise (nnxrl by global norm) and treats time limits as terminations (nnxrl
bootstraps through them from the final observation it stores). Final returns are of
greedy actions for both.

SAC (``--algo sac``; no plain-JAX side): nnxrl's configs/sac-pendulum.yaml with
rejax's Pendulum settings, which it quotes (1 env, one step then one gradient step
per update, batches of 256 from a 10,000-transition buffer filled with 256 first,
Adam at 1e-2 for actor, critics and temperature, target critics Polyak-averaged
every step with 0.98 of the old, the temperature from 1 toward an entropy of
-dim(A), two SiLU/swish layers of 64, 20,000 env steps). Where they differ by
design: rejax's shipped Pendulum config standardises observations (nnxrl's SAC sees
them as they are; rejax runs here without, for equal inputs), rejax updates actor,
critics and temperature in turn with three optimisers (nnxrl one step on the sum of
the three losses: the critics' target uses the actor before the step), clips no
gradient (nnxrl by global norm 100) and treats time limits as terminations. Final
returns are of sampled actions for both.

Compile time is what each library spends before the first env step: tracing,
lowering and XLA compilation of every program the run needs (nnxrl: init and the
chunk of updates; rejax: its one train program). Env steps/s is env steps of all
seeds over the wall time of training after compilation.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
CONFIG = ROOT / "configs" / "ppo-cartpole.yaml"
SIDES = {
    "ppo": ["nnxrl", "rejax", "plain JAX"],
    "dqn": ["nnxrl", "rejax"],
    "sac": ["nnxrl", "rejax"],
}
SAC_CONFIG = ROOT / "configs" / "sac-pendulum.yaml"
SAC_STEPS = 20_000
DQN_CONFIG = ROOT / "configs" / "dqn-cartpole.yaml"
DQN_EQUAL = ["dqn.n_step=1", "dqn.anneal_lr=false", "dqn.target_period=5"]  # rejax's
DQN_STEPS = 200_000
REJAX = ["--with", "rejax==0.1.3", "--with", "gymnax==0.0.9"]
EVAL_EPISODES = 128


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, action="append", help="default: 1 and 8")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--algo", choices=tuple(SIDES), default="ppo")
    parser.add_argument("--worker", choices=("nnxrl", "rejax"), help=argparse.SUPPRESS)
    parser.add_argument("--cache-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        seeds = args.seeds[0]
        if args.worker == "nnxrl":
            result = run_nnxrl(seeds, args.cache_dir, args.algo)
        else:
            result = {"ppo": run_rejax, "dqn": run_rejax_dqn, "sac": run_rejax_sac}[args.algo](
                seeds
            )
        print("RESULT " + json.dumps(result), flush=True)
        return
    print("| run | library | compile s | env steps/s | final return | peak RSS MiB |", flush=True)
    print("|---|---|---:|---:|---:|---:|", flush=True)
    sides = SIDES[args.algo]
    summary = []
    for seeds in args.seeds or (1, 8):
        runs: dict[str, list[dict]] = {library: [] for library in sides}
        for rep in range(args.repeats):
            order = sides[rep % len(sides) :] + sides[: rep % len(sides)]
            order = order if rep % 2 == 0 else order[::-1]
            for library in order:
                result = measure(library, seeds, algo=args.algo)
                runs[library].append(result)
                print(row(f"{seeds} seed(s), rep {rep + 1}", library, result), flush=True)
        with tempfile.TemporaryDirectory() as cache:
            measure("nnxrl", seeds, cache, args.algo)  # fills the cache
            warm = measure("nnxrl", seeds, cache, args.algo)
        print(row(f"{seeds} seed(s), warm cache", "nnxrl", warm), flush=True)
        summary.append((seeds, runs, warm))
    print_medians(summary, sides)


def print_medians(summary: list, sides: list[str]) -> None:
    """The medians of every side, and each side's over rejax's."""
    floor_cols = "plain JAX" in sides
    print("\nMedians, and each / rejax:\n")
    print("| run | nnxrl | rejax | plain JAX | nnxrl / rejax | plain JAX / rejax |")
    print("|---|---:|---:|---:|---:|---:|")
    for seeds, runs, warm in summary:
        for key, label in (
            ("sps", "env steps/s"),
            ("compile_s", "compile s, cold"),
            ("rss_mib", "peak host memory, MiB"),
        ):
            ours, theirs = (statistics.median(r[key] for r in runs[s]) for s in sides[:2])
            floor = statistics.median(r[key] for r in runs["plain JAX"]) if floor_cols else None
            shown = f"{floor:,.2f} | " if floor else " | "
            ratio = f" {floor / theirs:.2f}x |" if floor else " |"
            print(
                f"| {label}, {seeds} seed(s) | {ours:,.2f} | {theirs:,.2f} | {shown}"
                f"{ours / theirs:.2f}x |{ratio}"
            )
        theirs = statistics.median(r["compile_s"] for r in runs["rejax"])
        print(
            f"| compile s, nnxrl warm cache, {seeds} seed(s) | {warm['compile_s']:.2f} | "
            f"{theirs:.2f} | | {warm['compile_s'] / theirs:.2f}x | |"
        )
        for library in sides:
            returns = statistics.median(r["final_return"] for r in runs[library])
            print(f"| final return, {seeds} seed(s), {library} | {returns:.1f} | | |")


def row(run: str, library: str, r: dict) -> str:
    return (
        f"| {run} | {library} | {r['compile_s']:.2f} | {r['sps']:,.0f} | {r['final_return']:.1f} "
        f"| {r['rss_mib']:,.0f} |"
    )


def measure(library: str, seeds: int, cache_dir: str | None = None, algo: str = "ppo") -> dict:
    """One fresh worker process; its RESULT line."""
    args = [str(HERE), "--worker", library, "--seeds", str(seeds), "--algo", algo]
    if library == "plain JAX":
        cmd = [
            sys.executable,
            str(HERE.parent / "ppo_floor.py"),
            "--matched",
            "--seeds",
            str(seeds),
        ]
    elif library == "nnxrl":
        cmd = [sys.executable, *args] + (["--cache-dir", cache_dir] if cache_dir else [])
    else:
        cmd = [
            "uv",
            "run",
            "--isolated",
            "--no-project",
            "--python",
            "3.11",
            *REJAX,
            "python",
            *args,
        ]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=dict(os.environ))
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        sys.exit(f"{library} worker failed ({' '.join(cmd)}):\n{done.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


def peak_rss_mib() -> float:
    """This process's peak resident memory (Linux reports KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_nnxrl(seeds: int, cache_dir: str | None, algo: str = "ppo") -> dict:
    from nnxrl.parallel.devices import use_cpu_devices

    use_cpu_devices()  # as the CLI does: one CPU device per core
    import jax
    import numpy as np

    from nnxrl import config as config_lib
    from nnxrl.agent.evaluate import play_first_episodes
    from nnxrl.agent.policy import policy_of
    from nnxrl.run.training import train

    cache = [f"compile_cache.dir={cache_dir}"] if cache_dir else ["compile_cache.enabled=false"]
    overrides = [f"num_seeds={seeds}", "logging.backends=[]", *cache]
    if algo == "dqn":
        overrides += DQN_EQUAL
    path = {"ppo": CONFIG, "dqn": DQN_CONFIG, "sac": SAC_CONFIG}[algo]
    config = config_lib.load(str(path), overrides)
    result = train(config)
    policy = policy_of(config, result.params)
    episodes = play_first_episodes(policy, EVAL_EPISODES, greedy=False, key=jax.random.key(1))
    return {
        "compile_s": result.compile_seconds,
        "sps": result.env_steps_per_second,
        "final_return": float(np.mean(episodes["return"])),
        "rss_mib": peak_rss_mib(),
    }


def run_rejax(seeds: int) -> dict:
    from rejax import PPO

    total = 500_000
    algo = PPO.create(
        env="CartPole-v1",
        num_envs=4,
        num_steps=128,
        num_epochs=4,
        num_minibatches=4,
        learning_rate=2.5e-4,
        max_grad_norm=0.5,
        total_timesteps=total,
        eval_freq=total,
        skip_initial_evaluation=True,
        gamma=0.99,
        gae_lambda=0.95,
        clip_eps=0.2,
        ent_coef=0.01,
        vf_coef=0.5,
        agent_kwargs={"activation": "tanh", "hidden_layer_sizes": (64, 64)},
    )
    return timed_rejax(algo, seeds)


def timed_rejax(algo: Any, seeds: int) -> dict:
    """A rejax algorithm's train compiled and run over ``seeds`` seeds, then evaluated."""
    import jax
    import jax.numpy as jnp
    from rejax.evaluate import evaluate

    algo = algo.replace(eval_callback=lambda algo, ts, rng: ts.global_step)  # no evaluation
    keys = jax.random.split(jax.random.key(0), seeds)
    t = time.perf_counter()
    train = jax.jit(jax.vmap(algo.train)).lower(keys).compile()
    compile_s = time.perf_counter() - t
    t = time.perf_counter()
    ts, steps = train(keys)
    jax.block_until_ready(ts)
    seconds = time.perf_counter() - t
    env_steps = int(jnp.sum(ts.global_step))

    def final_return(ts, key):
        act = algo.make_act(ts)
        max_steps = algo.env_params.max_steps_in_episode
        _, returns = evaluate(act, key, algo.env, algo.env_params, EVAL_EPISODES, max_steps)
        return returns.mean()

    returns = jax.jit(jax.vmap(final_return))(ts, jax.random.split(jax.random.key(1), seeds))
    return {
        "compile_s": compile_s,
        "sps": env_steps / seconds,
        "final_return": float(jnp.mean(returns)),
        "rss_mib": peak_rss_mib(),
    }


def run_rejax_dqn(seeds: int) -> dict:
    """rejax's DQN at the settings of configs/dqn-cartpole.yaml (see the docstring)."""
    from rejax import DQN

    algo = DQN.create(
        env="CartPole-v1",
        agent="QNetwork",
        agent_kwargs={"activation": "swish"},  # its layers: (64, 64)
        num_envs=10,
        buffer_size=50_000,
        fill_buffer=5_000,
        batch_size=100,
        max_grad_norm=10,
        learning_rate=1e-3,
        num_epochs=5,
        total_timesteps=DQN_STEPS,
        eval_freq=DQN_STEPS,
        skip_initial_evaluation=True,
        polyak=0.98,
        eps_start=1.0,
        eps_end=0.05,
        exploration_fraction=0.5,
        gamma=0.99,
        ddqn=True,
    )
    return timed_rejax(algo, seeds)


def run_rejax_sac(seeds: int) -> dict:
    """rejax's SAC at the settings of configs/sac-pendulum.yaml (see the docstring)."""
    from rejax import SAC

    algo = SAC.create(
        env="Pendulum-v1",
        agent_kwargs={"activation": "swish"},  # its layers: (64, 64)
        num_envs=1,
        buffer_size=10_000,
        fill_buffer=256,
        batch_size=256,
        learning_rate=1e-2,
        num_epochs=1,
        total_timesteps=SAC_STEPS,
        eval_freq=SAC_STEPS,
        skip_initial_evaluation=True,
        gamma=0.99,
        polyak=0.98,
    )
    return timed_rejax(algo, seeds)


if __name__ == "__main__":
    main()
