"""The command line's parser: every command, its arguments and their checks (each
argument's type says what it accepts). Each command's function is in ``commands.py``."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from typing import Any, NoReturn

from nnxrl import config as config_lib
from nnxrl.cli import commands
from nnxrl.hints import did_you_mean
from nnxrl.version import git_commit, version


def count(low: int, high: int | None = None):
    """An argparse type: an integer in [low, high], with a message that says so."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f">= {low}" if high is None else f"between {low} and {high}"
            raise argparse.ArgumentTypeError(f"{value} is out of range; it must be {bound}")
        return value

    return parse


def probability(text: str) -> float:
    """An argparse type: a number in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{value} is out of range; it must be between 0 and 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="nnxrl", description="Legible RL in JAX + Flax NNX")
    parser.add_argument(
        "--version", action=VersionAction, help="print the version (and git commit) and exit"
    )
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="import this module (a name or a .py file) first, so that the envs, add-ons, "
        "networks and algorithms it registers can be named in configs; repeatable",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    add_train(sub)
    add_policy_commands(sub)
    add_plot(sub)
    add_sweep_report(sub)
    add_compare(sub)
    configs = sub.add_parser("configs", help="list the shipped configs (train takes their names)")
    configs.set_defaults(func=commands.configs)
    envs = sub.add_parser(
        "envs", help="list the env ids env.id takes, by suite, with the extra each needs"
    )
    envs.add_argument("--suite", help="only this suite's ids (gymnax, craftax, brax, navix, ...)")
    envs.set_defaults(func=commands.envs)
    return parser


class Parser(argparse.ArgumentParser):
    """argparse's parser (its commands' parsers too), whose refusal of an unknown
    choice, a command's name or an option's value, says which one was meant."""

    def error(self, message: str) -> NoReturn:
        refused = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if refused:
            hint = did_you_mean(refused.group(1), re.findall(r"'([^']*)'", refused.group(2)))
            message += f"; {hint}" if hint else ""
        super().error(message)


class VersionAction(argparse.Action):
    """``nnxrl --version``: the installed version, and the git commit of the checkout
    it runs in, if any (read only when asked)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        commit = git_commit()
        print(f"nnxrl {version()}" + (f" (git {commit[:12]})" if commit else ""))
        parser.exit()


def add_train(sub: Any) -> None:
    """``nnxrl train``."""
    train = sub.add_parser("train", help="train an agent from a YAML config")
    train.add_argument(
        "config",
        nargs="?",
        help="a YAML config file, or a shipped config's name (nnxrl configs), e.g. ppo-cartpole",
    )
    train.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a config key (dotted), e.g. --set ppo.learning_rate=3e-4",
    )
    train.add_argument("--out", help="output directory (default runs/<config>-<timestamp>)")
    train.add_argument(
        "--resume",
        metavar="RUN_DIR",
        help="continue the run in RUN_DIR from its latest checkpoint (its config.yaml, or "
        "CONFIG, which must match the config the run started with except for logging.*, "
        "checkpoint.*, compile_cache.*, mesh.* and distributed.*)",
    )
    train.add_argument(
        "--step",
        type=count(0),
        metavar="UPDATE",
        help="with --resume: continue from this checkpoint rather than the newest",
    )
    train.add_argument(
        "--stop-after",
        type=count(1),
        metavar="UPDATES",
        help="stop (as Ctrl-C does: checkpoint, exit 130) once this many updates are done "
        "(at the end of the chunk that reaches them)",
    )
    train.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved config (the file, --set applied, every default) and exit",
    )
    train.add_argument(
        "--dry-run",
        action="store_true",
        help="check the config and its env, network and add-on, compile every program, and "
        "exit without training or writing",
    )
    train.set_defaults(func=commands.train)


def add_policy_commands(sub: Any) -> None:
    """``nnxrl eval``, ``render`` and ``export``: a run's (or a saved) policy."""
    for name, func, text in (
        ("eval", commands.evaluate, "evaluate a run's latest checkpoint (or a saved policy)"),
        ("render", commands.render, "play one episode and write it as an animated GIF"),
        (
            "export",
            commands.export,
            "save a checkpoint's policy (params + network config) on its own",
        ),
    ):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument(
            "run",
            metavar="RUN_DIR",
            help="a run directory (or, for eval/render, a policy directory)",
        )
        cmd.add_argument(
            "--step",
            type=count(0),
            metavar="UPDATE",
            help="the checkpoint to use (default: latest)",
        )
        cmd.add_argument(
            "--setting",
            type=count(0),
            metavar="I",
            help="a sweep's setting whose policy to use (nnxrl sweep-report ranks them)",
        )
        cmd.set_defaults(func=func)
        add_own_options(cmd, name)


def add_own_options(cmd: Any, name: str) -> None:
    """The options of one of eval, render and export beyond the shared ones."""
    if name == "eval":
        cmd.add_argument(
            "--episodes",
            type=count(1, 1_000_000),
            default=10,
            help="episodes per seed (default 10; played 1024 at a time)",
        )
        cmd.add_argument("--json", metavar="FILE", help="every episode as JSON in FILE (-: stdout)")
    if name == "render":
        cmd.add_argument("--seed", type=count(0), default=0, help="which seed's policy (default 0)")
        cmd.add_argument("--out", default="episode.gif", help="output GIF (default episode.gif)")
        cmd.add_argument(
            "--scale",
            type=count(1, 16),
            default=1,
            metavar="K",
            help="enlarge frames K times (nearest neighbour; default 1)",
        )
        overlay = "write the step and the return so far above each frame"
        cmd.add_argument("--overlay", action="store_true", help=overlay)
    if name == "export":
        cmd.add_argument("--out", help="output directory (default RUN_DIR/policy)")
    if name in ("eval", "render"):
        cmd.add_argument("--greedy", action="store_true", help="take the most likely action")
        cmd.add_argument(
            "--epsilon",
            type=probability,
            metavar="E",
            help="PQN policies: act epsilon-greedily, a random action with probability "
            "E (default 0: greedy)",
        )
        cmd.add_argument(
            "--key",
            type=count(0, config_lib.MAX_SEED),
            default=0,
            help="PRNG seed for envs and sampling",
        )
        cmd.add_argument(
            "--fast-compile",
            action="store_true",
            help="compile with XLA's backend optimisations off, as the config key "
            "fast_compile does: a shorter compile, a slower play (for quick checks)",
        )


def add_plot(sub: Any) -> None:
    """``nnxrl plot``."""
    plot = sub.add_parser(
        "plot", help="learning curves of runs: a statistic across seeds with a 95 %% CI band"
    )
    plot.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directories to overlay")
    plot.add_argument(
        "--metric",
        action="append",
        metavar="NAME",
        help="a metrics.jsonl key; repeat for stacked panels (default episode_return_window: "
        "the rolling return over the last logging.return_window episodes)",
    )
    plot.add_argument(
        "--smooth",
        type=count(1),
        default=1,
        metavar="W",
        help="average each seed over its last W updates first (default 1: raw)",
    )
    plot.add_argument(
        "--statistic",
        choices=("mean", "iqm"),
        default="mean",
        help="across seeds: the mean, or the interquartile mean (default mean)",
    )
    plot.add_argument(
        "--no-interval", action="store_true", help="leave out the bootstrap confidence band"
    )
    plot.add_argument(
        "--label",
        action="append",
        metavar="TEXT",
        help="the legend entry of each curve, in order (one per run; a sweep: per setting); "
        "default: the run's name, a sweep setting's values",
    )
    plot.add_argument("--title", help="the figure's title (default: env, algorithm, seeds)")
    plot.add_argument(
        "--out", default="plot.png", help="output .png, .svg or .pdf (default plot.png)"
    )
    plot.set_defaults(func=commands.plot)


def add_compare(sub: Any) -> None:
    """``nnxrl compare``."""
    cmd = sub.add_parser(
        "compare",
        help="compare methods across seeds and envs: mean, median, IQM, optimality gap with "
        "95 %% stratified-bootstrap CIs, probability of improvement, profiles (docs/compare.md)",
    )
    cmd.add_argument(
        "runs",
        nargs="+",
        metavar="RUN_OR_GLOB",
        help="run directories, folders holding runs, or globs ('runs/ppo-*'); a sweep's "
        "settings count as runs of their own",
    )
    cmd.add_argument(
        "--by",
        default="algo",
        metavar="KEY",
        help="what makes a method: algo (default) or a dotted config key (network.kind, "
        "ppo.learning_rate, ...)",
    )
    cmd.add_argument(
        "--metric",
        metavar="NAME",
        help="a metrics.jsonl key to score by (default: the env's score: the rolling return "
        "mapped by its declared range; Craftax: the achievements' score)",
    )
    cmd.add_argument(
        "--range",
        action="append",
        default=[],
        metavar="ENV=LOW:HIGH",
        help="the lowest and highest return of ENV's episodes, mapped to 0 and 1 (shipped for "
        "CartPole, Acrobot, MountainCar, Pendulum, MemoryChain, RepeatPrevious, DeepSea); "
        "repeatable",
    )
    cmd.add_argument(
        "--reps", type=count(100), default=2000, help="bootstrap samples (default 2000)"
    )
    unlike = "pool a method's runs on an env whose budgets, seed counts or nnxrl differ"
    cmd.add_argument("--pool-unlike", action="store_true", help=unlike)
    cmd.add_argument("--seed", type=count(0), default=0, help="the bootstrap's seed (default 0)")
    cmd.add_argument("--out", default="compare", help="output folder (default ./compare)")
    cmd.add_argument(
        "--format", choices=("png", "svg", "pdf"), default="png", help="figures (default png)"
    )
    cmd.set_defaults(func=commands.compare)


def add_sweep_report(sub: Any) -> None:
    """``nnxrl sweep-report``."""
    report = sub.add_parser(
        "sweep-report",
        help="rank a sweep's settings by final return; write best.yaml and sweep.png (PBT: "
        "each seed's winning lineage and schedule, pbt.json, pbt_lineage.png and "
        "best_schedule.yaml, which `nnxrl train` replays)",
    )
    report.add_argument("run", metavar="RUN_DIR", help="a sweep's run directory")
    report.add_argument(
        "--no-write", action="store_true", help="print the table only (no best.yaml, plots)"
    )
    report.set_defaults(func=commands.sweep_report)
