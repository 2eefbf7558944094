"""What the commands print: the line that starts a run, the outcome after it, an
evaluation's table, the env suites. Plain text from what the API returned."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import nnxrl
from nnxrl import config as config_lib
from nnxrl.config import population, schedule
from nnxrl.hints import command


def training_line(config: config_lib.Config, out_dir: Path) -> None:
    """What is about to train, for how long, and where it writes."""
    settings = f" x {len(population.settings(config))} settings" if config.is_sweep else ""
    print(
        f"nnxrl: training {config.env.id} for {config.total_env_steps} env steps x "
        f"{config.num_seeds} seed(s){settings} ({schedule.num_updates(config)} updates) "
        f"-> {out_dir}",
        flush=True,
    )


def outcome(config: config_lib.Config, out_dir: Path, result: Any) -> None:
    """After training: the times and each seed's return (a sweep: its best setting),
    and the command that evaluates the policy."""
    if result is not None:  # one program (a sweep of several reports per group)
        print(
            f"compile {result.compile_seconds:.1f} s, train {result.train_seconds:.1f} s, "
            f"{result.env_steps_per_second:,.0f} env steps/s (all seeds)"
        )
    if config.is_sweep:
        best = nnxrl.sweep_report(out_dir).best.setting
        print(f"evaluate a setting's policy: {command(f'eval {out_dir} --setting {best}')}")
    else:
        final_table(config, result)
        print(f"evaluate the policy: {command(f'eval {out_dir}')}")
    if "mlflow" in config.logging.backends and config.logging.mlflow_tracking_uri is None:
        print(nnxrl.mlflow_ui_instructions(out_dir))


def final_table(config: config_lib.Config, result: Any) -> None:
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


def evaluation(report: Any) -> None:
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


def suites(configs: dict[str, Path]) -> None:
    """The env suites behind id prefixes: an id, the shipped configs that train one,
    and whether the suite's extra is installed (else the command that installs it)."""
    print("\nenv suites (env.id PREFIX:NAME), each an optional extra:")
    for suite in nnxrl.env_suites():
        shipped = [n for n, p in configs.items() if f"id: {suite.prefix}" in p.read_text()]
        state = "installed" if suite.available() else f"uv sync --extra {suite.extra}"
        example = suite.prefix + suite.example
        print(f"  {suite.name:<15} {example:<28} {', '.join(shipped):<20} {state}")


def env_family(family: Any) -> None:
    """One suite's line (its ids as env.id takes them, or how to install it), wrapped."""
    extra = f"extra {family.extra}, " if family.extra else ""
    if not family.installed:
        print(f"{family.name} ({extra}not installed: `uv sync --extra {family.extra}`)")
        return
    print(f"{family.name} ({extra}{len(family.ids)} ids)")
    if family.ids:
        print(
            textwrap.fill(
                ", ".join(family.ids),
                width=88,
                initial_indent="  ",
                subsequent_indent="  ",
                break_on_hyphens=False,
            )
        )
