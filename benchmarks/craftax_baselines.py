"""nnxrl beside the script it rewrites: Craftax_Baselines' ppo.py and ppo_rnn.py.

    uv run python benchmarks/craftax_baselines.py --baselines ~/src/Craftax_Baselines
    uv run python benchmarks/craftax_baselines.py --baselines DIR --kind ff --repeats 1
    uv run python benchmarks/craftax_baselines.py --baselines DIR --env Craftax-Classic-Symbolic-v1
    uv run python benchmarks/craftax_baselines.py --baselines DIR --kind ff --ynn none
    uv run python benchmarks/craftax_baselines.py --baselines DIR --kind ff --env-alone

DIR is a local clone of the public repository MichaelTMatthews/Craftax_Baselines,
kept outside this repository (its files are another project's): ``git clone`` it
anywhere. Its scripts run unchanged, through their own ``__main__`` and argparse,
with this project's Python and packages (plus distrax and chex, which they import:
``uv run --with distrax --with chex``), logging switched to W&B's disabled mode.

Both sides train the same workload: 64 envs x 64 steps, 4 epochs x 8 minibatches,
width 512, the baselines' PPO hyperparameters, optimistic resets with ratio 16, one
seed, ``--updates`` updates, every compile cold (nnxrl's saved programs and JAX's
cache off). Each measurement is a fresh process; the sides take turns within each
repetition (A B, then B A) so that drift in the machine's speed hits all alike.

Per update wall times come from a mark at the end of each update: the baselines'
own once-per-update callback (``logz.batch_logging.batch_log``, wrapped to note the
time, then called), and nnxrl's host hand-over of each finished update
(``MetricLogger.log_chunk``, one update per chunk). Columns: steady env steps/s
(4096 env steps over the median time between marks after the first), the time from
the worker's first line to the end of the first update (imports, env and network
set-up, compilation, one update), and the worker's peak RSS. The table gives
medians and nnxrl / baselines.

``--env-alone`` adds a third side, alternated with the two: nnxrl's Craftax env with
no agent, compiled and run as nnxrl runs it (an init program that generates every
world, then a program of one 64-step rollout with optimistic resets and uniformly
random actions, a mark after each). Whatever PPO is put around the env must compile
and run at least this, so its first update and rate bound both sides': the
``env alone / baselines`` row is the best first-update ratio any Craftax PPO with
this env code could reach.

``--least`` adds a side: the least PPO program that computes what nnxrl's config asks
(feed-forward: ``benchmarks/ppo_floor.py``'s ``run_craftax``; recurrent:
``benchmarks/ppo_rnn_floor.py``; plain JAX around nnxrl's env, the learning rate
annealed and time limits bootstrapped, nothing else; init and one update compiled as
two programs, a mark after each update). Its rate and first update over the
baselines' bound what a PPO written in JAX reaches here.

``--learn STEPS`` compares what the two learn instead (the Craftax-1M budget is
``--learn 1e6``): each side trains once for STEPS env steps at the settings above
(seed 0 each, or ``--seed``), both at once, one core each; the table gives the mean episode
return over the last 10 % of updates, as a percent of Craftax's maximum (226, as the
Craftax scoreboard reports it), Crafter's score over the same updates (the geometric
mean of 1 + each achievement's success rate in percent, less 1), the achievements
reached by at least 1 % of episodes, and the wall time. Both record the same
quantities per update: the mean return and each achievement's rate over the
episodes that ended in it.
"""

from __future__ import annotations

import time

STARTED = time.time()  # the worker's first line: the start of "time to first update"

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
NUM_ENVS, NUM_STEPS = 64, 64
SCRIPTS = {"ff": "ppo.py", "rnn": "ppo_rnn.py"}
SIDES = ("nnxrl", "baselines", "env alone", "least program")
RESET_RATIO = 16
CONFIGS = {"ff": "ppo-craftax-classic-symbolic", "rnn": "ppo-rnn-craftax-symbolic"}
HOW_TO_GET = (
    "benchmarks/craftax_baselines.py needs a local clone of Craftax_Baselines (the public "
    "GitHub repository MichaelTMatthews/Craftax_Baselines), kept outside this repository:\n"
    "  git clone <its address> ~/src/Craftax_Baselines\n"
    "  uv run python benchmarks/craftax_baselines.py --baselines ~/src/Craftax_Baselines"
)


def main() -> None:
    args = parse_args()
    if args.worker:
        records: list[dict] = []
        marks = run_worker(args, records)
        result = {"started": STARTED, "marks": marks, "rss": peak_rss_mib(), "records": records}
        print("RESULT " + json.dumps(result))
        return
    if args.baselines is None or not (Path(args.baselines) / "ppo.py").is_file():
        sys.exit(HOW_TO_GET)
    if args.learn:
        compare_learning(args)
        return
    print(f"{args.env}: {NUM_ENVS} envs x {NUM_STEPS} steps, {args.updates} updates, cold")
    print("| kind | side | rep | env steps/s | first update s | peak RSS MiB |")
    print("|---|---|---:|---:|---:|---:|", flush=True)
    kinds = args.kind or ("ff", "rnn")
    table = [summarise(kind, measure_kind(args, kind)) for kind in kinds]
    print("\nMedians, and nnxrl / baselines:\n")
    print("| kind | side | env steps/s | first update s | peak RSS MiB |")
    print("|---|---|---:|---:|---:|")
    for rows in table:
        print("\n".join(rows))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baselines", help="a local clone of Craftax_Baselines")
    parser.add_argument("--env", default="Craftax-Symbolic-v1")
    parser.add_argument("--kind", choices=tuple(SCRIPTS), action="append", help="default: both")
    parser.add_argument("--updates", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0, help="both sides' seed")
    parser.add_argument("--set", action="append", default=[], help="an nnxrl override")
    parser.add_argument(
        "--ynn",
        help="nnxrl's Craftax XLA CPU option xla_cpu_experimental_ynn_fusion_type replaced "
        "by this value (none: XLA's default), to measure what it costs",
    )
    parser.add_argument(
        "--env-alone", action="store_true", help="add the env with no agent as a third side"
    )
    parser.add_argument(
        "--least",
        action="store_true",
        help="add the least PPO program (benchmarks/ppo_floor.py, ppo_rnn_floor.py) as a side",
    )
    parser.add_argument(
        "--learn",
        type=lambda x: int(float(x)),
        help="compare learning over this many env steps instead (1e6: Craftax-1M)",
    )
    parser.add_argument("--worker", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--worker-kind", choices=tuple(SCRIPTS), help=argparse.SUPPRESS)
    return parser.parse_args()


def measure_kind(args: argparse.Namespace, kind: str) -> dict[str, list[dict]]:
    """Every side ``--repeats`` times, alternated, each a fresh process."""
    sides = ["nnxrl", "baselines"] + ["env alone"] * args.env_alone
    sides += ["least program"] * args.least
    runs: dict[str, list[dict]] = {side: [] for side in sides}
    for rep in range(args.repeats):
        order = sides if rep % 2 == 0 else tuple(reversed(sides))
        for side in order:
            result = measure(args, side, kind)
            runs[side].append(result)
            print(row(kind, side, str(rep + 1), result), flush=True)
    return runs


def measure(args: argparse.Namespace, side: str, kind: str) -> dict:
    """One fresh worker: its steady env steps/s, first update time and peak RSS."""
    done = subprocess.run(**worker(args, side, kind), capture_output=True, text=True)
    result = worker_result(done.returncode, done.stdout, done.stderr, side, kind)
    marks = result["marks"]
    between = [b - a for a, b in zip(marks, marks[1:], strict=False)]
    return {
        "sps": NUM_ENVS * NUM_STEPS / statistics.median(between),
        "first": marks[0] - result["started"],
        "rss": result["rss"],
    }


def worker(args: argparse.Namespace, side: str, kind: str) -> dict:
    """The command, folder and environment of a fresh worker process."""
    command = ["uv", "run"]
    if side == "baselines":
        command += ["--with", "distrax", "--with", "chex"]
    command += ["python", str(HERE), f"--worker={side}", "--worker-kind", kind]
    updates = args.learn // (NUM_ENVS * NUM_STEPS) if args.learn else args.updates
    command += ["--env", args.env, "--updates", str(updates), "--seed", str(args.seed)]
    command += ["--baselines", str(Path(args.baselines).resolve())]
    command += [f"--set={o}" for o in args.set] + ([f"--ynn={args.ynn}"] if args.ynn else [])
    env = {**os.environ, "WANDB_MODE": "disabled", "WANDB_SILENT": "true"}
    return {"args": command, "cwd": ROOT, "env": env}


def worker_result(returncode: int, stdout: str, stderr: str, side: str, kind: str) -> dict:
    """The RESULT line a worker printed, or an exit naming the side that failed."""
    lines = [x for x in stdout.splitlines() if x.startswith("RESULT ")]
    if returncode != 0 or not lines:
        sys.exit(f"{side} {kind} failed ({returncode}):\n{stderr[-4000:]}")
    return json.loads(lines[-1].removeprefix("RESULT "))


def compare_learning(args: argparse.Namespace) -> None:
    """Both sides at once for ``--learn`` env steps each (fresh processes), then the
    table of what each learned (see the module docstring)."""
    steps = f"{NUM_ENVS} envs x {NUM_STEPS} steps, {args.learn:,} env steps"
    print(f"{args.env}: {steps}, seed {args.seed}")
    print(
        "| kind | side | return, last 10 % | % of max (226) | Crafter score | "
        "achievements >= 1 % | wall min |"
    )
    print("|---|---|---:|---:|---:|---:|---:|", flush=True)
    for kind in args.kind or ("ff", "rnn"):
        sides = ("nnxrl", "baselines")
        procs = {
            side: subprocess.Popen(
                **worker(args, side, kind),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for side in sides
        }
        for side, proc in procs.items():
            stdout, stderr = proc.communicate()
            result = worker_result(proc.returncode, stdout, stderr, side, kind)
            print(learning_row(kind, side, result), flush=True)


def learning_row(kind: str, side: str, result: dict) -> str:
    """One side's table row: its last 10 % of updates' return and achievements."""
    import numpy as np

    records = result["records"]
    tail = records[-max(1, len(records) // 10) :]
    returns = np.array([r["return"] for r in tail], dtype=float)
    names = sorted(tail[-1]["achievements"])
    rates = np.array([[r["achievements"].get(n, np.nan) for n in names] for r in tail], float)
    rates = np.nanmean(rates, axis=0)  # [A] percents over the episodes of the tail
    score = np.expm1(np.log1p(rates).mean())
    ret = float(np.nanmean(returns))
    wall = (result["marks"][-1] - result["started"]) / 60
    reached = int((rates >= 1.0).sum())
    return (
        f"| {kind} | {side} | {ret:.2f} | {100 * ret / 226:.2f} | {score:.2f} | "
        f"{reached} of {len(names)} | {wall:.1f} |"
    )


def row(kind: str, side: str, rep: str, r: dict) -> str:
    return f"| {kind} | {side} | {rep} | {r['sps']:,.0f} | {r['first']:.1f} | {r['rss']:,.0f} |"


def summarise(kind: str, runs: dict[str, list[dict]]) -> list[str]:
    """The medians of each side and their ratio, as table rows."""
    med = {
        side: {k: statistics.median(r[k] for r in rs) for k in ("sps", "first", "rss")}
        for side, rs in runs.items()
    }
    b = med["baselines"]
    rows = [
        f"| {kind} | {side} | {m['sps']:,.0f} | {m['first']:.1f} | {m['rss']:,.0f} |"
        for side, m in med.items()
    ]
    for side in [side for side in med if side != "baselines"]:
        ratio = " | ".join(f"{med[side][k] / b[k]:.2f}x" for k in ("sps", "first", "rss"))
        rows.append(f"| {kind} | {side} / baselines | {ratio} |")
    return rows


def run_worker(args: argparse.Namespace, records: list[dict]) -> list[float]:
    """Train one side in this process; the Unix time at the end of each update (and
    for the two trainers each update's episode ``records``)."""
    marks: list[float] = []
    if args.worker == "baselines":
        run_baselines(args, marks, records)
    elif args.worker == "env alone":
        run_env_alone(args, marks)
    elif args.worker == "least program" and args.worker_kind == "ff":
        from ppo_floor import run_craftax  # benchmarks/ppo_floor.py, beside this file

        run_craftax(args.env, args.updates, marks)
    elif args.worker == "least program":
        from ppo_rnn_floor import run_craftax_rnn  # benchmarks/ppo_rnn_floor.py

        run_craftax_rnn(args.env, args.updates, marks)
    else:
        run_nnxrl(args, marks, records)
    return marks


def run_baselines(args: argparse.Namespace, marks: list[float], records: list[dict]) -> None:
    """The baselines' script as its own ``__main__``, its per-update callback timed
    and its episode metrics kept (achievement rates there are percents)."""
    import runpy

    sys.path.insert(0, args.baselines)
    import logz.batch_logging as batch_logging

    batch_log = batch_logging.batch_log

    def timed_batch_log(update_step, log, config):
        marks.append(time.time())
        rates = {k.split("/")[-1].lower(): float(v) for k, v in log.items() if "/" in k}
        records.append({"return": float(log["episode_return"]), "achievements": rates})
        return batch_log(update_step, log, config)

    batch_logging.batch_log = timed_batch_log  # the script imports it by name next
    script = os.path.join(args.baselines, SCRIPTS[args.worker_kind])
    sys.argv = [script, "--env_name", args.env, "--num_envs", str(NUM_ENVS)]
    sys.argv += ["--num_steps", str(NUM_STEPS), "--seed", str(args.seed), "--use_wandb"]
    sys.argv += ["--total_timesteps", str(args.updates * NUM_ENVS * NUM_STEPS)]
    runpy.run_path(script, run_name="__main__")


def run_nnxrl(args: argparse.Namespace, marks: list[float], records: list[dict]) -> None:
    """``nnxrl train`` of the shipped config at the same settings, each update's
    hand-over to the logger timed, its records kept (rates as percents)."""
    import tempfile

    from nnxrl import cli
    from nnxrl.envs import craftax_env
    from nnxrl.logging.logger import MetricLogger

    log_chunk = MetricLogger.log_chunk

    def timed_log_chunk(self, metrics, first_update):
        marks.append(time.time())
        return log_chunk(self, metrics, first_update)

    MetricLogger.log_chunk = timed_log_chunk
    if args.ynn:  # read by make_craftax_env when it builds the env
        option = "xla_cpu_experimental_ynn_fusion_type"
        craftax_env.YNN_DOTS_ONLY = () if args.ynn == "none" else ((option, args.ynn),)
    overrides = [
        f"env.id={args.env}",
        f"env.num_envs={NUM_ENVS}",
        f"seed={args.seed}",
        f"total_env_steps={args.updates * NUM_ENVS * NUM_STEPS}",
        "logging.updates_per_chunk=1",
        "logging.backends=[]",
        "checkpoint.enabled=false",
        "compile_cache.enabled=false",
        *args.set,
    ]
    with tempfile.TemporaryDirectory() as out:
        sets = [x for o in overrides for x in ("--set", o)]
        cli.main(["train", CONFIGS[args.worker_kind], "--out", f"{out}/run", *sets])
        for line in Path(out, "run", "metrics.jsonl").read_text().splitlines():
            r = json.loads(line)
            ended = r["episode_return"] is not None
            rates = {
                k.removeprefix("achievements/"): 100.0 * v if ended else float("nan")
                for k, v in r.items()
                if k.startswith("achievements/")
            }
            ret = r["episode_return"] if ended else float("nan")
            records.append({"return": ret, "achievements": rates})


def run_env_alone(args: argparse.Namespace, marks: list[float]) -> None:
    """nnxrl's Craftax env with no agent: init (every world generated), then
    ``--updates`` rollouts of 64 steps with random actions, each its mark."""
    import jax

    from nnxrl.envs.compiler_options import compiler_options
    from nnxrl.envs.craftax_env import make_craftax_env

    env = make_craftax_env(args.env, NUM_ENVS, RESET_RATIO)
    options = compiler_options(env.spec)

    def rollout(state, key):
        def step(state, key):
            action = jax.random.randint(key, (NUM_ENVS,), 0, env.spec.num_actions)
            state, out = env.step(key, state, action)
            return state, out.reward.sum()

        state, rewards = jax.lax.scan(step, state, jax.random.split(key, NUM_STEPS))
        return state, rewards.sum()

    key = jax.random.key(0)
    init = jax.jit(lambda key: env.reset(key)[1]).lower(key).compile(options)
    state = init(key)
    run = jax.jit(rollout, donate_argnums=0).lower(state, key).compile(options)
    for update in range(args.updates):
        state, total = run(state, jax.random.fold_in(key, update))
        total.block_until_ready()
        marks.append(time.time())


def peak_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    main()
