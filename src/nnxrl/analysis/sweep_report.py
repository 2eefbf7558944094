"""A sweep's results: settings ranked by their final return, plots, and ``best.yaml``.

``report(run_dir)`` reads the sweep's records (``metrics.jsonl``, or each group's in
``group-<g>/`` for an ``allow_recompile`` sweep) and

- ranks the settings by the mean over seeds of each seed's rolling return
  (``episode_return_window``) at its last update, with a 95 % percentile-bootstrap
  interval of that mean across seeds (as ``nnxrl plot`` draws); ties (CartPole's
  500) go to the setting whose rolling return was higher over the whole run (the
  mean over updates and seeds: it learned sooner); settings in which a seed
  diverged (a NaN or inf) come last;
- draws ``sweep.png``: the final return against each swept key, one panel per key;
- writes ``best.yaml``: the best setting as a plain config (no sweep section) that
  ``nnxrl train best.yaml`` trains alone, seeds included, reproducing its records;
- writes ``sweep.json``: the table as data;
- for a PBT run (``sweep.pbt``), whose settings are only where its members started:
  ranks each seed's members, traces the winner's lineage and schedule
  (``lineage.py``), draws ``pbt_lineage.png``, writes ``pbt.json`` and, in place of
  ``best.yaml`` (no fixed setting reproduces a schedule), ``best_schedule.yaml``: the
  best seed's winner's schedule as a plain config whose ``hp_schedule`` trains it
  again from scratch (``config/hp_schedule.py``).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nnxrl import config as config_lib
from nnxrl.analysis import lineage as lineage_lib
from nnxrl.analysis.plots import across_seeds
from nnxrl.config import population
from nnxrl.logging.jsonl import read_records
from nnxrl.logging.records import DIVERGED
from nnxrl.schema import describe_values
from nnxrl.sweeps.space import swept_keys

METRIC = "episode_return_window"
GROUP_PREFIX = "group-"


@dataclass(frozen=True)
class SettingResult:
    """One setting's final rolling return across its seeds."""

    setting: int
    values: dict
    mean: float | None  # None: no seed has a finished episode (or every seed diverged)
    low: float | None  # 95 % bootstrap interval of the mean across seeds
    high: float | None
    seeds: int  # seeds with a value
    update: int  # the last update recorded
    over_run: float | None  # the rolling return's mean over every update and seed
    diverged: list[int]  # seeds that met a NaN or inf


@dataclass(frozen=True)
class SweepReport:
    config: config_lib.Config  # the sweep's config (every setting)
    results: list[SettingResult]  # best first

    @property
    def best(self) -> SettingResult:
        return self.results[0]


def report(run_dir: str | Path, *, write: bool = True, quiet: bool = False) -> SweepReport:
    """Rank the settings of the sweep in ``run_dir`` (see the module docstring); with
    ``write`` also write sweep.png, sweep.json and best.yaml there; print the table
    unless ``quiet``."""
    run_dir = Path(run_dir)
    config = sweep_config(run_dir)
    records = sweep_records(run_dir)
    if not records:
        raise FileNotFoundError(f"{run_dir}: the sweep has no records yet (metrics.jsonl)")
    results = rank(final_results(config, records))
    result = SweepReport(config, results)
    if not quiet:
        print_table(result)
    if config.sweep.pbt.interval:
        report_pbt(run_dir, config, records, write=write, quiet=quiet)
    if write:
        write_outputs(run_dir, result)
        if not quiet and not config.sweep.pbt.interval:
            print(
                f"wrote {run_dir / 'best.yaml'} (setting {result.best.setting}; train it "
                f"alone with `nnxrl train {run_dir / 'best.yaml'}`), {run_dir / 'sweep.png'} "
                f"and {run_dir / 'sweep.json'}"
            )
    return result


def report_pbt(
    run_dir: Path, config: config_lib.Config, records: list[dict], *, write: bool, quiet: bool
) -> list[lineage_lib.Lineage]:
    """Each seed's members ranked and its winner's lineage; pbt.json,
    pbt_lineage.png and best_schedule.yaml with ``write``."""
    keys = swept_keys(config.sweep)
    found = lineage_lib.lineages(records, keys, config.num_seeds)
    if not quiet:
        for x in found:
            winner = x.ranking[0]
            print(
                f"PBT seed {x.seed}: member {winner['member']} ends best at "
                f"{winner['final_return']:.2f}, along a lineage that began in setting "
                f"{x.members[0] // config.num_seeds} and copied {x.copies} times; its schedule:"
            )
            for step in x.schedule:
                values = {k: v for k, v in step.items() if k != "from_update"}
                print(f"  from update {step['from_update']}: {describe_values(values)}")
    if write:
        from nnxrl.store import lock as run_lock
        from nnxrl.store import own_files

        own_files.refuse_links(run_dir, ("pbt.json", "pbt_lineage.png", "best_schedule.yaml"))
        best = max(found, key=lambda x: lineage_lib.ranked_return(x.ranking[0]))
        with run_lock.hold(run_dir, "sweep-report"):
            text = json.dumps({"metric": METRIC, "seeds": lineage_lib.as_json(found)}, indent=1)
            own_files.write_text(run_dir / "pbt.json", text)
            title = f"{config.env.id}: each seed's winning PBT lineage"
            lineage_lib.plot_lineages(found, keys, title, run_dir / "pbt_lineage.png")
            scheduled = config_lib.saved_yaml(schedule_config(config, best))
            own_files.write_text(run_dir / "best_schedule.yaml", scheduled)
        if not quiet:
            print(
                f"wrote {run_dir / 'pbt.json'}, {run_dir / 'pbt_lineage.png'} and "
                f"{run_dir / 'best_schedule.yaml'} (seed {best.seed}'s winner's schedule; "
                f"train it from scratch with `nnxrl train {run_dir / 'best_schedule.yaml'}`)"
            )
    return found


def schedule_config(config: config_lib.Config, lineage: lineage_lib.Lineage) -> config_lib.Config:
    """A lineage's schedule as a plain config: its first values as the config's own,
    each later change an ``hp_schedule`` entry (the sweep section dropped)."""
    first, *changes = ({k: short(v) for k, v in step.items()} for step in lineage.schedule)
    start = config_lib.with_values(config, {k: v for k, v in first.items() if k != "from_update"})
    return config_lib.validate(dataclasses.replace(start, hp_schedule=tuple(changes)))


def short(value: float) -> float:
    """A float32 value as its shortest decimal (0.0125 for 0.01249999925...), which
    reads back as the same float32."""
    return value if isinstance(value, int) else float(str(np.float32(value)))


def sweep_config(run_dir: Path) -> config_lib.Config:
    """The sweep's config from ``run_dir/config.yaml``; an error if it is not a sweep."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"{run_dir}: no config.yaml (is it an nnxrl run directory?)")
    config = config_lib.load(path)
    if not config.is_sweep:
        raise config_lib.ConfigError(
            f"{run_dir} is not a sweep (its config has no sweep.grid or sweep.random); "
            f"compare runs with `nnxrl plot {run_dir} ...`"
        )
    return config


def group_dirs(run_dir: Path) -> list[Path]:
    """The run directories of an allow_recompile sweep's groups (sorted by number)."""
    found = [p for p in run_dir.glob(f"{GROUP_PREFIX}*") if (p / "config.yaml").is_file()]
    return sorted(found, key=lambda p: int(p.name[len(GROUP_PREFIX) :]))


def setting_run_dir(run_dir: str | Path, setting: int | None) -> Path:
    """The run directory holding ``setting``: ``run_dir`` itself, or for a sweep of
    several programs the group that trained it (a ConfigError naming the choices)."""
    run_dir = Path(run_dir)
    parts = group_dirs(run_dir) if run_dir.is_dir() else []
    if not parts:
        return run_dir
    owners = {
        index: part
        for part in parts
        for index, _ in population.settings(config_lib.load(part / "config.yaml"))
    }
    if setting not in owners:
        given = "none was given" if setting is None else f"{setting} is not one of them"
        raise config_lib.ConfigError(
            f"--setting: {run_dir} is a sweep of settings {sorted(owners)} and one must be "
            f"chosen ({given}); `nnxrl sweep-report {run_dir}` ranks them"
        )
    return owners[setting]


def sweep_records(run_dir: Path) -> list[dict]:
    """Every record of the sweep: its own metrics.jsonl, or its groups'."""
    paths = [run_dir / "metrics.jsonl", *(g / "metrics.jsonl" for g in group_dirs(run_dir))]
    return [r for path in paths if path.is_file() for r in read_records(path)]


def final_results(config: config_lib.Config, records: list[dict]) -> list[SettingResult]:
    """Each setting's final rolling return per seed, summarised across seeds."""
    last: dict[tuple[int, int], dict] = {}  # (setting, seed) -> its last record
    history: dict[int, list[float]] = {}  # setting -> every rolling return recorded
    for r in records:
        key = (r["setting"], r["seed"])
        if key not in last or r["update"] >= last[key]["update"]:
            last[key] = r
        if r.get(METRIC) is not None:
            history.setdefault(r["setting"], []).append(r[METRIC])
    values = dict(population.settings(config))
    results = []
    for index in sorted({setting for setting, _ in last}):
        rows = [last[key] for key in sorted(last) if key[0] == index]
        diverged = [r["seed"] for r in rows if r.get(DIVERGED)]
        finals = np.asarray(
            [np.nan if r.get(METRIC) is None else r[METRIC] for r in rows], np.float64
        )
        finite = finals[np.isfinite(finals)]
        mean = low = high = None
        if finite.size and not diverged:
            center, lo, hi = across_seeds(finite[:, None])
            mean, low, high = float(center[0]), float(lo[0]), float(hi[0])
        results.append(
            SettingResult(
                setting=index,
                values=values.get(index, rows[0].get("hparams", {})),
                mean=mean,
                low=low,
                high=high,
                seeds=int(finite.size),
                update=min(r["update"] for r in rows),
                over_run=float(np.mean(history[index])) if index in history else None,
                diverged=diverged,
            )
        )
    return results


def rank(results: list[SettingResult]) -> list[SettingResult]:
    """Best mean first (ties: the higher mean over the run); settings without one
    (diverged, no episode) last, by index."""
    scored = sorted(
        (r for r in results if r.mean is not None), key=lambda r: (-r.mean, -(r.over_run or 0))
    )
    return scored + [r for r in results if r.mean is None]


def print_table(result: SweepReport) -> None:
    keys = swept_keys(result.config.sweep)
    window = result.config.logging.return_window
    print(
        f"| rank | setting | {' | '.join(keys)} | final return (last {window} episodes), "
        "mean [95% CI] | mean over the run | seeds | update |"
    )
    print("|---:|---:|" + "---:|" * len(keys) + "---:|---:|---:|---:|")
    for rank_, r in enumerate(result.results, start=1):
        shown = [
            f"{r.values[k]:.4g}" if isinstance(r.values[k], float) else str(r.values[k])
            for k in keys
        ]
        if r.diverged:
            score = f"diverged (seed {', '.join(map(str, r.diverged))})"
        elif r.mean is None:
            score = "- (no episode ended)"
        else:
            score = f"{r.mean:.2f} [{r.low:.2f}, {r.high:.2f}]"
        over_run = "-" if r.over_run is None else f"{r.over_run:.2f}"
        print(
            f"| {rank_} | {r.setting} | {' | '.join(shown)} | {score} | {over_run} | {r.seeds} "
            f"| {r.update} |"
        )
    best = result.best
    print(f"best: setting {best.setting} ({describe_values(best.values)})")


def write_outputs(run_dir: Path, result: SweepReport) -> None:
    """best.yaml, sweep.json and sweep.png, written as the run's one writer."""
    from nnxrl.store import lock as run_lock
    from nnxrl.store import own_files

    own_files.refuse_links(run_dir, ("best.yaml", "sweep.json", "sweep.png"))
    with run_lock.hold(run_dir, "sweep-report"):
        if not result.config.sweep.pbt.interval:  # a PBT run's result is a schedule
            best = population.setting_config(result.config, result.best.setting)
            own_files.write_text(run_dir / "best.yaml", config_lib.saved_yaml(best))
        rows = [asdict(r) for r in result.results]
        summary = json.dumps({"metric": METRIC, "settings": rows}, indent=1)
        own_files.write_text(run_dir / "sweep.json", summary)
        plot_sweep(result, run_dir / "sweep.png")


def plot_sweep(result: SweepReport, out: Path) -> str:
    """Final return against each swept key (one panel per key; a log axis for keys
    drawn log-uniformly or spanning a factor of 10 or more of positive values), with
    the 95 % interval across seeds where a setting has two or more; returns the
    figure's title, which says which."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweep = result.config.sweep
    keys = swept_keys(sweep)
    scored = [r for r in result.results if r.mean is not None]
    fig, axes = plt.subplots(1, len(keys), figsize=(4.5 * len(keys), 3.8), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        xs = [r.values[key] for r in scored]
        numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xs)
        positions: list[Any] = xs if numeric else [str(x) for x in xs]
        means = np.asarray([r.mean for r in scored])
        below = [r.mean - r.low if r.seeds > 1 else 0.0 for r in scored]
        above = [r.high - r.mean if r.seeds > 1 else 0.0 for r in scored]
        ax.errorbar(positions, means, yerr=np.asarray([below, above]), fmt="o", capsize=3)
        if scored and numeric and log_axis(sweep, key, xs):
            ax.set_xscale("log")
        ax.set_xlabel(key)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"final return (last {result.config.logging.return_window} ep.)")
    title = f"{result.config.env.id}: {len(result.results)} settings, {interval_said(scored)}"
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return title


def interval_said(scored: list[SettingResult]) -> str:
    """What the error bars are: a 95 % interval across seeds, drawn only for a
    setting with two or more seeds; none from one."""
    if all(r.seeds <= 1 for r in scored):
        return "1 seed per setting: no interval"
    if all(r.seeds > 1 for r in scored):
        return "95% CI across seeds"
    return "95% CI across seeds (none for a setting of 1 seed)"


def log_axis(sweep: Any, key: str, xs: list[float]) -> bool:
    spec = sweep.random.get(key)
    if isinstance(spec, dict) and "log_uniform" in spec:
        return True
    positive = [x for x in xs if x > 0]
    return len(positive) == len(xs) and max(positive) / min(positive) >= 10
