"""Command line.

nnxrl train CONFIG [--set KEY=VALUE ...] [--out DIR]
nnxrl plot RUN_DIR [RUN_DIR ...] [--metric NAME] [--out FILE.png]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from nnxrl import config as config_lib


def _train(args: argparse.Namespace) -> int:
    from nnxrl.train import default_out_dir, run_training

    config = config_lib.load(args.config, args.set or ())
    out_dir = args.out or default_out_dir(args.config)
    print(
        f"nnxrl: training {config.env.id} for {config.total_env_steps} env steps x "
        f"{config.num_seeds} seed(s) ({config.num_updates} updates) -> {out_dir}",
        flush=True,
    )
    result = run_training(config, out_dir)
    print(
        f"compile {result.compile_seconds:.1f} s, train {result.train_seconds:.1f} s, "
        f"{result.env_steps_per_second:,.0f} env steps/s (all seeds)"
    )
    for i, ret in enumerate(result.final_returns):
        shown = "none (no episode ended in the last update)" if ret is None else f"{ret:.2f}"
        print(f"seed {config.seed}+{i}: final return {shown}")
    return 0


def _plot(args: argparse.Namespace) -> int:
    from nnxrl.plot import plot_runs

    try:
        labels = plot_runs(args.runs, args.metric, args.out)
    except (FileNotFoundError, KeyError) as e:
        print(f"nnxrl: {e.args[0]}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: {args.metric} of {', '.join(labels)}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nnxrl", description="Legible RL in JAX + Flax NNX")
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train an agent from a YAML config")
    train.add_argument("config", help="path to a YAML config, e.g. configs/ppo-cartpole.yaml")
    train.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a config key (dotted), e.g. --set ppo.learning_rate=3e-4",
    )
    train.add_argument("--out", help="output directory (default runs/<config>-<timestamp>)")
    train.set_defaults(func=_train)
    plot = sub.add_parser("plot", help="learning curves (mean +- std over seeds) of runs")
    plot.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directories to overlay")
    plot.add_argument("--metric", default="episode_return", help="metric to plot")
    plot.add_argument("--out", default="plot.png", help="output PNG (default plot.png)")
    plot.set_defaults(func=_plot)
    return parser


def use_all_cpu_cores() -> None:
    """Let JAX see one CPU device per core, so that seeds can be spread over cores.
    Takes effect only if JAX has not started yet; an explicit setting wins."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        count = f"--xla_force_host_platform_device_count={os.cpu_count() or 1}"
        os.environ["XLA_FLAGS"] = f"{flags} {count}".strip()


def main(argv: Sequence[str] | None = None) -> int:
    use_all_cpu_cores()
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except config_lib.ConfigError as e:
        print(f"nnxrl: config error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nnxrl: interrupted; metrics written so far are kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
