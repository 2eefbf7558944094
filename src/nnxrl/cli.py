"""Command line.

nnxrl train CONFIG [--set KEY=VALUE ...] [--out DIR] [--stop-after UPDATES]
nnxrl train --resume RUN_DIR [CONFIG] [--set KEY=VALUE ...] [--step UPDATE]
nnxrl eval RUN_DIR|POLICY_DIR [--episodes N] [--greedy | --epsilon E] [--step UPDATE]
           [--setting I] [--json FILE] [--fast-compile]
nnxrl render RUN_DIR|POLICY_DIR [--seed I] [--out episode.gif] [--greedy | --epsilon E]
             [--step UPDATE] [--setting I] [--scale K] [--overlay] [--fast-compile]
nnxrl export RUN_DIR [--step UPDATE] [--setting I] [--out DIR]
nnxrl sweep-report RUN_DIR  (a sweep's settings ranked; writes best.yaml, sweep.png)
nnxrl plot RUN_DIR [RUN_DIR ...] [--metric NAME ...] [--smooth W] [--statistic mean|iqm]
           [--no-interval] [--out FILE.png]
nnxrl configs                (the shipped configs, which train and --resume take by name)
nnxrl --plugin MODULE ...   (import MODULE first: it may register envs and add-ons)
"""

from __future__ import annotations

import argparse
import errno
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nnxrl
from nnxrl import config as config_lib
from nnxrl.config import population, schedule
from nnxrl.parallel.devices import is_main_process, use_cpu_devices


def _train(args: argparse.Namespace) -> int:
    """``nnxrl train``: read and check the config (before --out is touched), train it
    with ``nnxrl.train`` (or ``nnxrl.train_groups``, a sweep of several programs),
    then say how it went and what to run next."""
    from nnxrl.run.groups import needs_groups, train_groups
    from nnxrl.run.training import train

    if args.print_config or args.dry_run:
        return _inspect(args)
    config, out_dir = _train_target(args)
    main = is_main_process()  # in a multi-process run the others stay silent
    if main:
        settings = f" x {len(population.settings(config))} settings" if config.is_sweep else ""
        print(
            f"nnxrl: training {config.env.id} for {config.total_env_steps} env steps x "
            f"{config.num_seeds} seed(s){settings} ({schedule.num_updates(config)} updates) "
            f"-> {out_dir}",
            flush=True,
        )
    resume, result = bool(args.resume), None
    if needs_groups(config):
        if args.step is not None:
            raise config_lib.ConfigError(
                f"--step: {out_dir} is a sweep of several programs, one per group; resume "
                f"one group from a step with `nnxrl train --resume {out_dir}/group-G --step U`"
            )
        train_groups(config, out_dir, quiet=False, resume=resume, stop_after=args.stop_after)
    else:
        result = train(
            config, out_dir, quiet=False, resume=resume, step=args.step, stop_after=args.stop_after
        )
    if main:
        print_outcome(config, out_dir, result)
    return 0


def _inspect(args: argparse.Namespace) -> int:
    """``--print-config``: the resolved config as YAML; ``--dry-run``: the config and
    its parts checked and every program compiled, nothing trained or written."""
    import time

    import yaml

    from nnxrl.run.groups import group_configs, needs_groups
    from nnxrl.run.programs import compile_programs
    from nnxrl.run.training import prepare

    path = args.config or (args.resume and f"{args.resume}/config.yaml")
    if not path:
        raise config_lib.ConfigError("train: give a CONFIG file, or --resume RUN_DIR")
    config = config_lib.load(path, args.set or ())
    if args.print_config:
        print(yaml.safe_dump(config_lib.saved_dict(config), sort_keys=False), end="")
        return 0
    config = prepare(config)
    for group in [c for _, c in group_configs(config)] if needs_groups(config) else [config]:
        started = time.perf_counter()
        programs = compile_programs(group)
        print(
            f"nnxrl: dry run: {group.env.id}, {schedule.num_updates(group)} updates of "
            f"{schedule.batch_size(group)} transitions x {population.num_members(group)} "
            f"member(s) compiled in {time.perf_counter() - started:.1f} s "
            f"({programs.layout.describe()}); nothing was trained or written",
            flush=True,
        )
    return 0


def _train_target(args: argparse.Namespace) -> tuple[config_lib.Config, Any]:
    """The config to train (checked, its parts included) and the run directory: a new
    one (created), or the run ``--resume`` continues."""
    from pathlib import Path

    from nnxrl.run.run_dir import default_out_dir, refuse_a_run
    from nnxrl.run.training import prepare
    from nnxrl.store import lock as run_lock
    from nnxrl.store import own_files
    from nnxrl.store.own_files import ensure_writable_dir

    if args.resume:
        if args.out:
            raise config_lib.ConfigError("--out: a resumed run writes to its own directory")
        out_dir = Path(args.resume)
        if not (out_dir / "config.yaml").is_file():
            raise config_lib.ConfigError(
                f"--resume: {out_dir} is not a run directory (no config.yaml)"
            )
        return prepare(
            config_lib.load(args.config or out_dir / "config.yaml", args.set or ())
        ), out_dir
    if args.config is None:
        raise config_lib.ConfigError("train: give a CONFIG file, or --resume RUN_DIR")
    if args.step is not None:
        raise config_lib.ConfigError(
            "--step: picks the checkpoint to resume from; use it with --resume"
        )
    config = prepare(config_lib.load(args.config, args.set or ()))  # before --out
    out_dir = ensure_writable_dir(args.out or default_out_dir(args.config), "--out")
    own_files.refuse_links(out_dir)  # what training would refuse, before the "training" line
    with run_lock.hold(out_dir):
        refuse_a_run(out_dir)
    return config, out_dir


def print_outcome(config: config_lib.Config, out_dir: Any, result: Any) -> None:
    """After training: the times and each seed's return (a sweep: its best setting),
    and the command that evaluates the policy."""
    from nnxrl.analysis.sweep_report import report as sweep_report

    if result is not None:  # one program (a sweep of several reports per group)
        print(
            f"compile {result.compile_seconds:.1f} s, train {result.train_seconds:.1f} s, "
            f"{result.env_steps_per_second:,.0f} env steps/s (all seeds)"
        )
    if config.is_sweep:
        best = sweep_report(out_dir).best.setting
        print(f"evaluate a setting's policy: nnxrl eval {out_dir} --setting {best}")
    else:
        print_final_table(config, result)
        print(f"evaluate the policy: nnxrl eval {out_dir}")
    if "mlflow" in config.logging.backends and config.logging.mlflow_tracking_uri is None:
        from nnxrl.logging.mlflow_tracker import ui_instructions

        print(ui_instructions(out_dir))


def print_final_table(config: config_lib.Config, result) -> None:
    """One row per seed: its index, its key, and its rolling return at the end."""
    window = config.logging.return_window
    print(
        f"| seed | key | return (last {window} episodes of training) | episodes |\n"
        "|---:|---|---:|---:|"
    )
    for i, (ret, count) in enumerate(zip(result.final_returns, result.final_episodes, strict=True)):
        shown = "- (no episode ended)" if ret is None else f"{ret:.2f}"
        key = f"fold_in(key({config.seed}), {i})"
        print(f"| {i} | {key} | {shown} | {count} |")


def _eval(args: argparse.Namespace) -> int:
    """``nnxrl eval``: ``nnxrl.agent.evaluate`` of a run's (or a saved) policy, as a table
    and as JSON."""
    import json
    import time
    from pathlib import Path

    from nnxrl.agent.evaluate import MAX_ENVS_AT_ONCE, evaluate
    from nnxrl.progress import waiting
    from nnxrl.store.own_files import ensure_writable_file

    if args.json:
        ensure_writable_file(args.json, "--json")
    if args.greedy and args.epsilon is not None:
        print(
            f"nnxrl: --epsilon {args.epsilon:g} is ignored: --greedy acts greedily "
            "(epsilon 0); leave one of them out",
            file=sys.stderr,
        )
    policy = nnxrl.policy_at(args.run, args.step, args.setting, args.epsilon)
    started = time.perf_counter()
    what = f"eval: {policy.env.id}, {args.episodes:,} episodes x {policy.num_seeds} seed(s): "
    what += "compiling and playing"

    def progress(done: int) -> None:
        print(
            f"eval: {done:,} of {args.episodes:,} episodes per seed "
            f"({time.perf_counter() - started:.0f} s)",
            file=sys.stderr,
            flush=True,
        )

    many = args.episodes > MAX_ENVS_AT_ONCE
    with waiting(what):
        report = evaluate(
            policy,
            args.episodes,
            greedy=args.greedy,
            key=args.key,
            progress=progress if many else None,
            fast_compile=args.fast_compile,
        )
    print(f"eval: done in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    print_evaluation(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report.as_dict(), indent=1))
        print(f"wrote {args.json}")
    else:
        print(json.dumps(report.as_dict()))
    return 0


def print_evaluation(report: Any) -> None:
    """An ``Evaluation`` as a table: a row per seed, its achievements below it."""
    of = "" if report.setting is None else f" (sweep setting {report.setting})"
    print(f"{report.env}{of}: {report.episodes} episodes per seed, {report.actions} actions")
    print("| seed | episodes | return | length |")
    print("|---:|---:|---:|---:|")
    for r in report.seeds:
        ret = (
            "-" if r["return_mean"] is None else f"{r['return_mean']:.2f} +- {r['return_std']:.2f}"
        )
        length = (
            "-" if r["length_mean"] is None else f"{r['length_mean']:.1f} +- {r['length_std']:.1f}"
        )
        print(f"| {r['seed']} | {r['episodes']} | {ret} | {length} |")
        for name, rate in (r.get("achievements") or {}).items():
            if rate > 0:
                print(f"|   | {name} | {rate:.0%} | |")
    over = report.across_seeds
    if over.get("return_low") is not None:
        print(
            f"over {over['seeds']} seeds: return {over['return_mean']:.2f} "
            f"[{over['return_low']:.2f}, {over['return_high']:.2f}] (the mean of the seeds' "
            "means, 95 % bootstrap interval over seeds)"
        )


def _render(args: argparse.Namespace) -> int:
    import jax

    from nnxrl.agent.render import render_episode
    from nnxrl.progress import waiting
    from nnxrl.store.own_files import ensure_writable_file

    ensure_writable_file(args.out, "--out")
    policy = nnxrl.policy_at(args.run, args.step, args.setting, args.epsilon)
    with waiting(f"render: playing seed {args.seed}'s episode on {policy.env.id} and drawing it"):
        info = render_episode(
            policy,
            args.seed,
            args.out,
            jax.random.key(args.key),
            args.greedy,
            scale=args.scale,
            overlay=args.overlay,
            fast_compile=args.fast_compile,
        )
    ended = "" if info["ended"] else " (stopped at the step limit)"
    print(f"wrote {args.out}: {info['frames']} frames, return {info['return']:.2f}{ended}")
    return 0


def _export(args: argparse.Namespace) -> int:
    out, policy = nnxrl.export_policy(args.run, args.out, step=args.step, setting=args.setting)
    of = "" if policy.setting is None else f" of setting {policy.setting}"
    print(f"wrote the policy of {policy.num_seeds} seed(s){of} to {out}")
    return 0


def _sweep_report(args: argparse.Namespace) -> int:
    from nnxrl.analysis.sweep_report import report as sweep_report

    sweep_report(args.run, write=not args.no_write)
    return 0


def _plot(args: argparse.Namespace) -> int:
    from nnxrl.analysis.plots import check_format, plot_runs
    from nnxrl.analysis.runs import DEFAULT_METRIC
    from nnxrl.store.own_files import ensure_writable_file

    check_format(args.out)  # before the file is touched
    ensure_writable_file(args.out, "--out")
    metrics = args.metric or [DEFAULT_METRIC]
    try:
        drawn = plot_runs(
            args.runs,
            metrics,
            args.out,
            smooth=args.smooth,
            statistic=args.statistic,
            interval=not args.no_interval,
            labels=args.label,
            title=args.title,
        )
    except (FileNotFoundError, KeyError, ValueError) as e:
        print(f"nnxrl: {e.args[0]}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: {', '.join(metrics)} of {', '.join(drawn['labels'])}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from nnxrl.analysis.comparison import compare, markdown
    from nnxrl.analysis.scores import parse_range

    try:
        ranges = dict(parse_range(text) for text in args.range)
        found = compare(
            args.runs,
            by=args.by,
            ranges=ranges,
            metric=args.metric,
            reps=args.reps,
            seed=args.seed,
            out=args.out,
            fmt=args.format,
        )
    except (FileNotFoundError, KeyError, ValueError) as e:
        print(f"nnxrl: {e.args[0]}", file=sys.stderr)
        return 2
    print(markdown(found), end="")
    print(f"wrote compare.json, compare.md and the figures ({args.format}) to {args.out}")
    return 0


def _configs(args: argparse.Namespace) -> int:
    from nnxrl.config.shipped import configs_dir, describe, shipped_configs

    found = shipped_configs()
    if not found:
        print("nnxrl: no shipped configs found with this installation", file=sys.stderr)
        return 2
    print(f"shipped configs ({configs_dir()}); run one with `nnxrl train NAME`:")
    width = max(map(len, found))
    for name, path in found.items():
        print(f"  {name:<{width}}  {describe(path)}")
    print_suites(found)
    return 0


def print_suites(configs: dict[str, Path]) -> None:
    """The env suites behind id prefixes: an id, the shipped configs that train one,
    and whether the suite's extra is installed (else the command that installs it)."""
    from nnxrl.envs.suites import SUITES

    print("\nenv suites (env.id PREFIX:NAME), each an optional extra:")
    for suite in SUITES:
        shipped = [n for n, p in configs.items() if f"id: {suite.prefix}" in p.read_text()]
        state = "installed" if suite.available() else f"uv sync --extra {suite.extra}"
        example = suite.prefix + suite.example
        print(f"  {suite.name:<15} {example:<28} {', '.join(shipped):<20} {state}")


def _count(low: int, high: int | None = None):
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


def _probability(text: str) -> float:
    """An argparse type: a number in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{value} is out of range; it must be between 0 and 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nnxrl", description="Legible RL in JAX + Flax NNX")
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
    configs.set_defaults(func=_configs)
    return parser


class VersionAction(argparse.Action):
    """``nnxrl --version``: the installed version, and the git commit of the checkout
    it runs in, if any (read only when asked)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        from nnxrl.logging.run_info import git_commit
        from nnxrl.version import version

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
        type=_count(0),
        metavar="UPDATE",
        help="with --resume: continue from this checkpoint rather than the newest",
    )
    train.add_argument(
        "--stop-after",
        type=_count(1),
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
    train.set_defaults(func=_train)


def add_policy_commands(sub: Any) -> None:
    """``nnxrl eval``, ``render`` and ``export``: a run's (or a saved) policy."""
    for name, func, text in (
        ("eval", _eval, "evaluate a run's latest checkpoint (or a saved policy)"),
        ("render", _render, "play one episode and write it as an animated GIF"),
        ("export", _export, "save a checkpoint's policy (params + network config) on its own"),
    ):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument(
            "run",
            metavar="RUN_DIR",
            help="a run directory (or, for eval/render, a policy directory)",
        )
        cmd.add_argument(
            "--step",
            type=_count(0),
            metavar="UPDATE",
            help="the checkpoint to use (default: latest)",
        )
        cmd.add_argument(
            "--setting",
            type=_count(0),
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
            type=_count(1, 1_000_000),
            default=10,
            help="episodes per seed (default 10; played 1024 at a time)",
        )
        cmd.add_argument("--json", metavar="FILE", help="write the report here (default: print it)")
    if name == "render":
        cmd.add_argument(
            "--seed", type=_count(0), default=0, help="which seed's policy (default 0)"
        )
        cmd.add_argument("--out", default="episode.gif", help="output GIF (default episode.gif)")
        cmd.add_argument(
            "--scale",
            type=_count(1, 16),
            default=1,
            metavar="K",
            help="enlarge frames K times (nearest neighbour; default 1)",
        )
        cmd.add_argument(
            "--overlay",
            action="store_true",
            help="write the step and the return so far above each frame",
        )
    if name == "export":
        cmd.add_argument("--out", help="output directory (default RUN_DIR/policy)")
    if name in ("eval", "render"):
        cmd.add_argument("--greedy", action="store_true", help="take the most likely action")
        cmd.add_argument(
            "--epsilon",
            type=_probability,
            metavar="E",
            help="PQN policies: act epsilon-greedily, a random action with probability "
            "E (default 0: greedy)",
        )
        cmd.add_argument(
            "--key",
            type=_count(0, config_lib.MAX_SEED),
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
        type=_count(1),
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
    plot.set_defaults(func=_plot)


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
        "--reps", type=_count(100), default=2000, help="bootstrap samples (default 2000)"
    )
    cmd.add_argument("--seed", type=_count(0), default=0, help="the bootstrap's seed (default 0)")
    cmd.add_argument("--out", default="compare", help="output folder (default ./compare)")
    cmd.add_argument(
        "--format", choices=("png", "svg", "pdf"), default="png", help="figures (default png)"
    )
    cmd.set_defaults(func=_compare)


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
    report.set_defaults(func=_sweep_report)


PLUGIN_GROUP = "nnxrl.plugins"  # entry points of installed packages, imported at start


def load_plugins(names: Sequence[str]) -> None:
    """Import every installed ``nnxrl.plugins`` entry point, then each ``--plugin``
    (a module name, or the path of a .py file)."""
    import importlib
    import importlib.util
    from importlib.metadata import entry_points
    from pathlib import Path

    for entry in entry_points(group=PLUGIN_GROUP):
        with plugin_errors("plugin entry point", f"{entry.name} ({entry.value})"):
            entry.load()
    for name in names:
        with plugin_errors("--plugin", name):
            if name.endswith(".py"):
                path = Path(name)
                if not path.is_file():
                    raise FileNotFoundError(f"no such file {path}")
                spec = importlib.util.spec_from_file_location(path.stem, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[path.stem] = module
                spec.loader.exec_module(module)
            else:
                importlib.import_module(name)


@contextmanager
def plugin_errors(what: str, name: str) -> Iterator[None]:
    """Whatever importing plugin ``name`` raises (or a ``sys.exit`` in it) becomes a
    ConfigError that names the plugin, the error and the line it came from."""
    try:
        yield
    except (ImportError, FileNotFoundError) as e:
        raise config_lib.ConfigError(
            f"{what}: cannot import {name!r} ({type(e).__name__}: {e}); give a module name "
            "on the Python path or the path of a .py file"
        ) from None
    except SystemExit as e:
        raise config_lib.ConfigError(
            f"{what}: {name!r} called sys.exit({e.code!r}) while being imported; a plugin "
            "should only define and register envs, add-ons or networks"
        ) from None
    except Exception as e:
        if isinstance(e, SyntaxError):
            place = f"{e.filename}, line {e.lineno}"
        else:
            frame = traceback.extract_tb(e.__traceback__)[-1]
            place = f"{frame.filename}, line {frame.lineno}"
        raise config_lib.ConfigError(
            f"{what}: {name!r} failed while being imported ({type(e).__name__}: {e}; at "
            f"{place}); fix the plugin or leave it out"
        ) from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; exit codes: 0 done, 2 bad input (config, paths, checkpoints),
    3 non-finite values, 4 a write failed (disk full, read-only), 130 stopped."""
    from nnxrl.errors import CheckpointError, NonFiniteError, Stopped, StorageError

    args = build_parser().parse_args(argv)
    try:
        use_cpu_devices()  # one per core, unless the config's mesh.cpu_devices says otherwise
        load_plugins(args.plugin)
        return args.func(args)
    except config_lib.ConfigError as e:
        print(f"nnxrl: config error: {e}", file=sys.stderr)
        return 2
    except CheckpointError as e:
        print(f"nnxrl: checkpoint error: {e}", file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError) as e:
        print(f"nnxrl: {e}", file=sys.stderr)
        return 2
    except NonFiniteError as e:
        print(f"nnxrl: training stopped: {e}", file=sys.stderr)
        return 3
    except StorageError as e:
        print(f"nnxrl: storage error: {e}", file=sys.stderr)
        return 4
    except Stopped as e:
        print(f"nnxrl: {stopped_message(e, getattr(args, 'stop_after', None))}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("nnxrl: interrupted; metrics written so far are kept", file=sys.stderr)
        return 130
    except OSError as e:  # a path the OS refuses (too long, not permitted, ...)
        name = str(e.filename or "")
        where = f"{name if len(name) <= 120 else name[:60] + '...' + name[-40:]}: " if name else ""
        print(f"nnxrl: {where}{e.strerror or e}", file=sys.stderr)
        return 4 if e.errno in STORAGE_ERRNOS else 2


def stopped_message(e: Any, stop_after: int | None) -> str:
    """Where a stopped run stands: checkpointed (and how to continue), or stopped
    before anything could be saved; and why a --stop-after stop came later."""
    if e.checkpointed:
        said = f"stopped at update {e.update}, checkpointed"
        if e.out_dir:
            said += f"; continue with `nnxrl train --resume {e.out_dir}`"
    elif e.update == 0:
        said = "stopped before the first update: nothing was trained or checkpointed; "
        said += "run the same command again to start"
    else:
        said = f"stopped at update {e.update}; no checkpoint holds it (checkpoints are off)"
    if stop_after is not None and e.update > stop_after:
        said += (
            f" (--stop-after {stop_after} stops at the end of the chunk that reaches it; "
            "set logging.updates_per_chunk to stop sooner)"
        )
    return said


# OS errors that mean the storage failed (exit 4) rather than a bad path (exit 2)
STORAGE_ERRNOS = {errno.ENOSPC, errno.EROFS, errno.EIO, errno.EDQUOT}


if __name__ == "__main__":
    sys.exit(main())
