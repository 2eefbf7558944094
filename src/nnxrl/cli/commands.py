"""One function per command: it reads the parsed arguments, calls the functions the
Python API exports (``nnxrl.train``, ``nnxrl.evaluate``, ``nnxrl.plot``, ...) and
prints what they return (``printing.py``). Nothing here trains, reads a run or draws:
what a command does, a Python user can call."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml

import nnxrl
from nnxrl import config as config_lib
from nnxrl.cli import printing
from nnxrl.config import population, schedule
from nnxrl.hints import command, did_you_mean
from nnxrl.progress import waiting
from nnxrl.store.own_files import ensure_writable_file


def train(args: argparse.Namespace) -> int:
    """``nnxrl train``: read and check the config (before --out is touched), train it
    with ``nnxrl.train`` (or ``nnxrl.train_groups``, a sweep of several programs),
    then say how it went and what to run next."""
    if args.print_config or args.dry_run:
        return inspect(args)
    config, out_dir = train_target(args)
    main = nnxrl.is_main_process()  # in a multi-process run the others stay silent
    if main:
        printing.training_line(config, out_dir)
    resume, result = bool(args.resume), None
    if population.needs_groups(config):
        if args.step is not None:
            raise config_lib.ConfigError(
                f"--step: {out_dir} is a sweep of several programs, one per group; resume "
                "one group from a step with "
                f"`{command(f'train --resume {out_dir}/group-G --step U')}`"
            )
        nnxrl.train_groups(
            config, out_dir, progress=True, resume=resume, stop_after=args.stop_after
        )
    else:
        result = nnxrl.train(
            config,
            out_dir,
            progress=True,
            resume=resume,
            step=args.step,
            stop_after=args.stop_after,
        )
    if main:
        printing.outcome(config, out_dir, result)
    return 0


def inspect(args: argparse.Namespace) -> int:
    """``--print-config``: the resolved config as YAML; ``--dry-run``: the config and
    its parts checked and every program compiled (``nnxrl.dry_run``), nothing trained
    or written."""
    path = args.config or (args.resume and f"{args.resume}/config.yaml")
    if not path:
        raise config_lib.ConfigError("train: give a CONFIG file, or --resume RUN_DIR")
    config = config_lib.load(path, args.set or ())
    if args.print_config:
        print(yaml.safe_dump(config_lib.saved_dict(config), sort_keys=False), end="")
        return 0
    for program in nnxrl.dry_run(config):
        group = program.config
        print(
            f"nnxrl: dry run: {group.env.id}, {schedule.num_updates(group)} updates of "
            f"{schedule.batch_size(group)} transitions x {population.num_members(group)} "
            f"member(s) compiled in {program.compile_seconds:.1f} s ({program.layout}); "
            "nothing was trained or written",
            flush=True,
        )
    return 0


def train_target(args: argparse.Namespace) -> tuple[config_lib.Config, Path]:
    """The config to train (checked, its parts included: ``nnxrl.prepare``) and the run
    directory: a new one (``nnxrl.fresh_run_dir``), or the run ``--resume`` continues."""
    if args.resume:
        if args.out:
            raise config_lib.ConfigError("--out: a resumed run writes to its own directory")
        out_dir = Path(args.resume)
        if not (out_dir / "config.yaml").is_file():
            raise config_lib.ConfigError(
                f"--resume: {out_dir} is not a run directory (no config.yaml)"
            )
        config = config_lib.load(args.config or out_dir / "config.yaml", args.set or ())
        return nnxrl.prepare(config), out_dir
    if args.config is None:
        raise config_lib.ConfigError("train: give a CONFIG file, or --resume RUN_DIR")
    if args.step is not None:
        raise config_lib.ConfigError(
            "--step: picks the checkpoint to resume from; use it with --resume"
        )
    config = nnxrl.prepare(config_lib.load(args.config, args.set or ()))  # before --out
    return config, nnxrl.fresh_run_dir(args.out or default_out_dir(args.config), "--out")


def default_out_dir(config_path: str | Path) -> Path:
    """``runs/<config's name>-<date>-<time>``."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{Path(config_path).stem}-{stamp}"


def evaluate(args: argparse.Namespace) -> int:
    """``nnxrl eval``: ``nnxrl.evaluate`` of a run's (or a saved) policy, as a table
    (with the interval over seeds), and with ``--json FILE`` every episode as JSON."""
    if args.json and args.json != "-":
        ensure_writable_file(args.json, "--json")
    if args.greedy and args.epsilon is not None:
        print(
            f"nnxrl: --epsilon {args.epsilon:g} is ignored: --greedy acts greedily "
            "(epsilon 0); leave one of them out",
            file=sys.stderr,
        )
    policy = nnxrl.policy_at(args.run, args.step, args.setting, args.epsilon)
    progress = evaluation_progress(args.episodes)
    started = time.perf_counter()
    what = f"eval: {policy.env.id}, {args.episodes:,} episodes x {policy.num_seeds} seed(s): "
    with waiting(what + "compiling and playing"):
        report = nnxrl.evaluate(
            policy,
            args.episodes,
            greedy=args.greedy,
            key=args.key,
            progress=progress,
            fast_compile=args.fast_compile,
        )
    if report.stopped:
        print(
            f"eval: stopped after {report.episodes:,} of {args.episodes:,} episodes per seed "
            f"({time.perf_counter() - started:.1f} s); the table covers those",
            file=sys.stderr,
            flush=True,
        )
    else:
        print(f"eval: done in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    printing.evaluation(report)
    if args.json == "-":  # on the last line of stdout, for a pipe (tail -n 1)
        print(json.dumps(report.as_dict()))
    elif args.json:
        Path(args.json).write_text(json.dumps(report.as_dict(), indent=1))
        print(f"wrote {args.json} (every episode's return and length)")
    return 130 if report.stopped else 0


def evaluation_progress(episodes: int) -> Callable[[int], None]:
    """Say after each batch how many episodes are done and about how long the rest
    takes (the first batch, compiled, is left out of the estimate once there is a
    second); Ctrl-C ends the play there with what is done."""
    times: list[tuple[float, int]] = [(time.perf_counter(), 0)]

    def progress(done: int) -> None:
        times.append((time.perf_counter(), done))
        (t0, d0), (t1, d1) = times[min(1, len(times) - 2)], times[-1]
        left = (episodes - done) * (t1 - t0) / max(d1 - d0, 1)
        print(
            f"eval: {done:,} of {episodes:,} episodes per seed ({t1 - times[0][0]:.0f} s; "
            f"about {left:.0f} s to go; Ctrl-C stops with the episodes done so far)",
            file=sys.stderr,
            flush=True,
        )

    return progress


def render(args: argparse.Namespace) -> int:
    """``nnxrl render``: one episode of a run's (or a saved) policy as a GIF."""
    import jax

    ensure_writable_file(args.out, "--out")
    policy = nnxrl.policy_at(args.run, args.step, args.setting, args.epsilon)
    with waiting(f"render: playing seed {args.seed}'s episode on {policy.env.id} and drawing it"):
        info = nnxrl.render(
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


def export(args: argparse.Namespace) -> int:
    """``nnxrl export``: a checkpoint's policy saved on its own."""
    out, policy = nnxrl.export_policy(args.run, args.out, step=args.step, setting=args.setting)
    of = "" if policy.setting is None else f" of setting {policy.setting}"
    print(f"wrote the policy of {policy.num_seeds} seed(s){of} to {out}")
    return 0


def sweep_report(args: argparse.Namespace) -> int:
    """``nnxrl sweep-report``: a sweep's settings ranked."""
    nnxrl.sweep_report(args.run, write=not args.no_write)
    return 0


def plot(args: argparse.Namespace) -> int:
    """``nnxrl plot``: learning curves of runs."""
    ensure_writable_file(args.out, "--out")
    chosen = {"metrics": args.metric} if args.metric else {}  # else the plot's default
    try:
        drawn = nnxrl.plot(
            args.runs,
            out=args.out,
            smooth=args.smooth,
            statistic=args.statistic,
            interval=not args.no_interval,
            labels=args.label,
            title=args.title,
            **chosen,
        )
    except (FileNotFoundError, KeyError, ValueError) as e:
        print(f"nnxrl: {e.args[0]}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: {', '.join(drawn['metrics'])} of {', '.join(drawn['labels'])}")
    return 0


def compare(args: argparse.Namespace) -> int:
    """``nnxrl compare``: methods across seeds and envs, with interval estimates."""
    try:
        found = nnxrl.compare(
            args.runs,
            by=args.by,
            ranges=dict(env_range(text) for text in args.range),
            metric=args.metric,
            reps=args.reps,
            seed=args.seed,
            out=args.out,
            fmt=args.format,
            pool_unlike=args.pool_unlike,
        )
    except (FileNotFoundError, KeyError, ValueError) as e:
        print(f"nnxrl: {e.args[0]}", file=sys.stderr)
        return 2
    print(found.markdown(), end="")
    print(f"wrote compare.json, compare.md and the figures ({args.format}) to {args.out}")
    return 0


def env_range(text: str) -> tuple[str, tuple[float, float]]:
    """``ENV=LOW:HIGH`` -> (env, (low, high)), with a message naming what is wrong."""
    env, sep, bounds = text.partition("=")
    low, colon, high = bounds.partition(":")
    try:
        pair = (float(low), float(high))
    except ValueError:
        pair = None
    if not (sep and colon and env and pair and math.isfinite(sum(pair)) and pair[0] < pair[1]):
        raise ValueError(
            f"--range {text!r}: expected ENV=LOW:HIGH with LOW < HIGH, e.g. Asterix-MinAtar=0:100"
        )
    return env, pair


def configs(args: argparse.Namespace) -> int:
    """``nnxrl configs``: the shipped configs and the env suites."""
    from nnxrl.config.shipped import configs_dir, describe, shipped_configs

    found = shipped_configs()
    if not found:
        print("nnxrl: no shipped configs found with this installation", file=sys.stderr)
        return 2
    print(f"shipped configs ({configs_dir()}); run one with `{command('train NAME')}`:")
    width = max(map(len, found))
    for name, path in found.items():
        print(f"  {name:<{width}}  {describe(path)}")
    printing.suites(found)
    return 0


def envs(args: argparse.Namespace) -> int:
    """``nnxrl envs``: the env ids by suite (``--suite``: one), with the extra each
    needs and whether it is installed."""
    families = nnxrl.env_families()
    if args.suite is not None:
        names = [f.name for f in families]
        if args.suite not in names:
            close = did_you_mean(args.suite, names)
            raise config_lib.ConfigError(
                f"--suite: no suite {args.suite!r}{'; ' + close if close else ''} (the suites: "
                f"{', '.join(names)})"
            )
        families = [f for f in families if f.name == args.suite]
    for family in families:
        printing.env_family(family)
    return 0
