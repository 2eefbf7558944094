"""Methods compared across seeds and envs, as Agarwal et al. (2021, "Deep RL at the
edge of the statistical precipice") recommend: interval estimates, not point
estimates of a few runs.

``compare(paths, by=...)`` reads runs (a sweep's settings count as runs of their own)
and groups them into methods (by ``algo``, or any config key) and envs. Each seed's
final score (``scores.py``: the rolling return mapped to [0, 1] by the env's range;
Craftax's achievement score) is one run of one task. Per env and over every env the
methods share it reports the mean, median, interquartile mean (IQM) and optimality
gap with 95 % stratified-bootstrap intervals, the probability of improvement of each
method over each other, performance profiles (the fraction of runs above each
score) and the IQM along training (sample efficiency): a Markdown table,
``compare.json`` and figures (``comparison_figures.py``, drawn with rliable's plotting).
The statistics are rliable's, drawn vectorised (``interval_estimates.py``), from one
seeded generator so that a comparison is reproducible.
"""

from __future__ import annotations

import glob
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nnxrl.analysis import interval_estimates as ie
from nnxrl.analysis.runs import Run, load_runs
from nnxrl.analysis.scores import Scored, score_run

STATISTICS, NAMES = ie.AGGREGATES, ie.NAMES
CURVE_POINTS = 20  # the IQM along training: at this many env-step counts
PROFILE_POINTS = 41  # performance profiles: thresholds from 0 to the highest score


@dataclass(frozen=True)
class Entry:
    """One run (or sweep setting) of one method on one env."""

    method: str
    env: str
    name: str
    run: Run
    scored: Scored


@dataclass
class Comparison:
    """What ``compare`` found; ``as_json()`` is compare.json."""

    methods: list[str]
    envs: list[str]
    sources: dict[str, str]  # env -> how its score is made
    scores: dict[str, dict[str, np.ndarray]]  # method -> env -> [N] final scores
    per_env: dict[str, dict[str, dict]]  # env -> method -> statistic -> [point, low, high]
    aggregate: dict[str, dict]  # method -> statistic -> [point, low, high] over `shared`
    shared: list[str]  # the envs every method has (the aggregate's)
    improvement: dict[str, list[float]]  # "x,y" -> [P(x > y), low, high] over `shared`
    profiles: dict[str, Any] = field(default_factory=dict)
    curves: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        """The comparison as Markdown tables (what ``nnxrl compare`` prints)."""
        return markdown(self)

    def as_json(self) -> dict:
        return {
            "methods": self.methods,
            "envs": self.envs,
            "score": self.sources,
            "seeds": {
                m: {e: len(v) for e, v in by_env.items()} for m, by_env in self.scores.items()
            },
            "scores": {m: {e: v.tolist() for e, v in d.items()} for m, d in self.scores.items()},
            "per_env": self.per_env,
            "aggregate": {"envs": self.shared, "methods": self.aggregate},
            "probability_of_improvement": self.improvement,
            "notes": self.notes,
        }


def compare(
    paths: Sequence[str | Path],
    *,
    by: str = "algo",
    ranges: Mapping[str, tuple[float, float]] | None = None,
    metric: str | None = None,
    reps: int = 2000,
    seed: int = 0,
    out: str | Path | None = None,
    fmt: str = "png",
    pool_unlike: bool = False,
) -> Comparison:
    """Compare the runs under ``paths`` (run directories, folders of runs, globs)
    grouped into methods by ``by``, on ``metric`` (default: each env's score,
    ``scores.py``); with ``out`` write compare.json, compare.md and the figures there
    (``fmt``: png, svg or pdf). Runs of one method on one env are pooled only when
    alike (``check_alike``), or with ``pool_unlike`` (then a note says how they
    differ). See the module docstring."""
    entries = collect(paths, by, ranges, metric)
    unlike = check_alike(entries, pool_unlike)
    scores, notes = score_table(entries)
    notes += unlike
    methods = sorted(scores)
    envs = sorted({e.env for e in entries})
    shared = [env for env in envs if all(env in scores[m] for m in methods)]
    check_aggregable(entries, shared)
    state = np.random.default_rng(seed)
    comparison = Comparison(
        methods=methods,
        envs=envs,
        sources={e.env: e.scored.source for e in entries},
        scores=scores,
        per_env={env: estimates(by_env(scores, [env]), state, reps) for env in envs},
        aggregate=estimates(by_env(scores, shared), state, reps) if shared else {},
        shared=shared,
        improvement=improvement(by_env(scores, shared), state, reps) if shared else {},
        notes=notes,
    )
    for env in {e.env for e in entries if not e.scored.normalised}:  # no best to fall short of
        gapless = [*comparison.per_env[env].values()]
        gapless += comparison.aggregate.values() if env in shared else []
        for stats in gapless:
            stats["optimality_gap"] = None
    if shared:
        comparison.profiles = profiles(by_env(scores, shared), state, reps)
        comparison.curves = sample_efficiency(entries, shared, state, reps)
    if out is not None:
        write_outputs(comparison, Path(out), fmt)
    return comparison


def collect(
    paths: Sequence[str | Path], by: str, ranges: Mapping | None, metric: str | None
) -> list[Entry]:
    """Every run under ``paths``, scored, with its method (``method_of``)."""
    entries = []
    for directory in run_directories(paths):
        for run in load_runs(directory):
            scored = score_run(run, ranges, metric)
            entries.append(Entry(method_of(run, by), run.env, run.name, run, scored))
    if not entries:
        raise FileNotFoundError(f"no runs found under {', '.join(map(str, paths))}")
    return entries


def run_directories(paths: Sequence[str | Path]) -> list[Path]:
    """Run directories: each path that holds metrics.jsonl, else those under it; a
    glob is expanded first."""
    found: list[Path] = []
    for path in paths:
        matches = sorted(glob.glob(str(path))) if glob.has_magic(str(path)) else [str(path)]
        if not matches:
            raise FileNotFoundError(f"{path}: matches no file or directory")
        for match in map(Path, matches):
            if (match / "metrics.jsonl").is_file():
                found.append(match)
                continue
            below = sorted(p.parent for p in match.rglob("metrics.jsonl"))
            if not below:
                raise FileNotFoundError(f"{match}: not a run directory and holds none")
            found += below
    return list(dict.fromkeys(found))


def method_of(run: Run, by: str) -> str:
    """The method a run belongs to: its ``by`` value (``algo``, or a dotted config key,
    a sweep setting's own value if the sweep varies it); a sweep setting grouped by
    a key the sweep does not vary is a method of its own, named by its values."""
    if by in run.hparams:
        return f"{by}={run.hparams[by]}"
    node: Any = run.config if by != "algo" else {"algo": run.algo}
    for part in by.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(
                f"{run.name}: its config has no key {by!r} to group by; give --by algo or "
                "a dotted key of its config.yaml (env.id, network.kind, ppo.learning_rate)"
            )
        node = node[part]
    label = str(node) if by == "algo" else f"{by}={node}"
    if run.hparams:
        label += " (" + ", ".join(f"{k}={v}" for k, v in run.hparams.items()) + ")"
    return label


def check_alike(entries: Sequence[Entry], pool_unlike: bool) -> list[str]:
    """Runs pooled into one method on one env must be alike: trained for the same env
    steps per seed, with as many seeds, by the same nnxrl. A ValueError naming the
    runs and how they differ; with ``pool_unlike``, the same said as notes."""
    groups: dict[tuple[str, str], list[Entry]] = {}
    for e in entries:
        groups.setdefault((e.method, e.env), []).append(e)
    said = []
    for (method, env), group in groups.items():
        facts = {
            "env steps per seed": lambda e: f"{int(e.run.env_steps[-1]):,}",
            "seeds": lambda e: str(e.run.num_seeds),
            "nnxrl": lambda e: e.run.version or "unrecorded",
        }
        for what, fact in facts.items():
            values = {e.name: fact(e) for e in group}
            if len(set(values.values())) > 1:
                listed = ", ".join(f"{name} {value}" for name, value in values.items())
                said.append(f"{method} on {env} pools runs of unlike {what}: {listed}")
    if said and not pool_unlike:
        raise ValueError(
            "; ".join(said) + ". Compare like with like (give the runs of one budget, "
            "seed count and nnxrl), or pass --pool-unlike to pool them anyway"
        )
    return said


def score_table(entries: Sequence[Entry]) -> tuple[dict, list[str]]:
    """method -> env -> [N] final scores, runs of one method and env pooled; a
    method's envs cut to the fewest seeds any of them has (stratified bootstrap
    needs a full runs x envs table), with a note saying so."""
    pooled: dict[str, dict[str, list[np.ndarray]]] = {}
    for e in entries:
        pooled.setdefault(e.method, {}).setdefault(e.env, []).append(e.scored.final)
    table, notes = {}, []
    for method, envs in pooled.items():
        finals = {env: np.concatenate(parts) for env, parts in envs.items()}
        for env, values in finals.items():
            if not np.all(np.isfinite(values)):
                raise ValueError(
                    f"{method} on {env}: {int(np.sum(~np.isfinite(values)))} seed(s) have no "
                    "score (no finished episode, or a diverged run); train longer or leave "
                    "those runs out"
                )
        fewest = min(len(v) for v in finals.values())
        if any(len(v) > fewest for v in finals.values()):
            counts = ", ".join(f"{env}: {len(v)}" for env, v in finals.items())
            notes.append(f"{method}: seeds per env {counts}; each env's first {fewest} are used")
        table[method] = {env: v[:fewest] for env, v in finals.items()}
    return table, notes


def check_aggregable(entries: Sequence[Entry], shared: Sequence[str]) -> None:
    """Envs aggregated together must share a scale: each has a declared range."""
    if len(shared) < 2:
        return
    raw = sorted({e.env for e in entries if e.env in shared and not e.scored.normalised})
    if raw:
        raise ValueError(
            f"no score range is declared for {', '.join(raw)}, so its returns cannot be "
            "aggregated with the other envs'; give each one, e.g. "
            f"--range {raw[0]}=LOW:HIGH (the lowest and highest return of an episode)"
        )


def by_env(scores: dict, envs: Sequence[str]) -> dict[str, np.ndarray]:
    """method -> [N, E] scores on ``envs`` (each method's own N), for the methods
    that have every one of them."""
    return {
        m: np.stack([d[env] for env in envs], axis=1)
        for m, d in scores.items()
        if all(env in d for env in envs)
    }


def estimates(table: dict[str, np.ndarray], rng: Any, reps: int) -> dict[str, dict]:
    """method -> statistic -> [point, low, high]: the aggregates of [N, E] scores
    with 95 % stratified-bootstrap intervals (``interval_estimates.py``)."""
    out = {}
    for method, scores in table.items():
        point, (low, high) = ie.interval(ie.aggregates, (scores,), reps, rng)
        out[method] = {
            name: [float(point[i]), float(low[i]), float(high[i])]
            for i, name in enumerate(STATISTICS)
        }
    return out


def improvement(table: dict[str, np.ndarray], rng: Any, reps: int) -> dict[str, list[float]]:
    """ "x,y" -> [P(X > Y), low, high] for every ordered pair of methods: the chance a
    run of X scores above a run of Y on an env of the table (ties count half), with
    its interval (X and Y redrawn independently)."""
    out = {}
    for x in table:
        for y in table:
            if x != y:
                pair = (table[x], table[y])
                point, (low, high) = ie.interval(ie.probability_of_improvement, pair, reps, rng)
                out[f"{x},{y}"] = [float(point), float(low), float(high)]
    return out


def profiles(table: dict[str, np.ndarray], rng: Any, reps: int) -> dict[str, Any]:
    """Performance profiles: for each threshold tau, the fraction of runs (of every
    env) scoring above it, with its interval."""
    low = min(0.0, min(float(np.min(v)) for v in table.values()))
    top = max(1.0, max(float(np.max(v)) for v in table.values()))
    taus = np.linspace(low, top, PROFILE_POINTS)
    points, intervals = {}, {}
    for method, scores in table.items():
        points[method], intervals[method] = ie.interval(
            lambda x: ie.above(x, taus), (scores,), reps, rng
        )
    return {"taus": taus, "points": points, "intervals": intervals}


def sample_efficiency(
    entries: Sequence[Entry], shared: Sequence[str], rng: Any, reps: int
) -> dict[str, Any]:
    """The IQM over runs and envs of each method at CURVE_POINTS env-step counts
    (each seed's score interpolated to them), with 95 % intervals; from the first
    count at which every seed has a score to the shortest run's end."""
    chosen = [e for e in entries if e.env in shared]
    start = max(float(first_scored(e)) for e in chosen)
    end = min(float(e.run.env_steps[-1]) for e in chosen)
    steps = np.linspace(start, end, CURVE_POINTS) if end > start else np.array([end])
    curves: dict[str, dict[str, list[np.ndarray]]] = {}
    for e in chosen:
        at = [np.interp(steps, *finite(e.run.env_steps, row)) for row in e.scored.curve]
        curves.setdefault(e.method, {}).setdefault(e.env, []).extend(at)
    points, intervals = {}, {}
    for method, per_env in curves.items():
        fewest = min(len(v) for v in per_env.values())
        table = np.stack([np.stack(per_env[env][:fewest]) for env in shared], axis=1)  # [N, E, K]
        points[method], intervals[method] = ie.interval(
            lambda x: ie.along(x, iqm), (table,), reps, rng
        )
    return {"steps": steps, "points": points, "intervals": intervals}


def iqm(x: np.ndarray) -> np.ndarray:
    return ie.aggregates(x)[..., 1]


def first_scored(entry: Entry) -> float:
    """The env steps by which every seed of ``entry`` has a score."""
    firsts = [
        entry.run.env_steps[np.flatnonzero(np.isfinite(row))[0]] for row in entry.scored.curve
    ]
    return max(firsts)


def finite(steps: np.ndarray, row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = np.isfinite(row)
    return steps[keep], row[keep]


def markdown(c: Comparison) -> str:
    """The comparison as Markdown: per env, over the shared envs, and the
    probabilities of improvement."""
    lines = []
    for env in c.envs:
        lines += [f"**{env}** (score: {c.sources[env]})", "", *stat_table(c.per_env[env], c), ""]
    if len(c.envs) > 1 and c.shared:
        lines += [f"**over {', '.join(c.shared)}**", "", *stat_table(c.aggregate, c), ""]
    if c.improvement:
        lines += ["| X | Y | P(X > Y) [95% CI] |", "|---|---|---:|"]
        for pair, (p, low, high) in c.improvement.items():
            x, y = pair.split(",", 1)
            lines.append(f"| {x} | {y} | {p:.2f} [{low:.2f}, {high:.2f}] |")
        lines.append("")
    lines += [f"note: {n}" for n in c.notes]
    return "\n".join(lines).rstrip() + "\n"


def stat_table(rows: dict[str, dict], c: Comparison) -> list[str]:
    head = "| method | seeds | " + " | ".join(f"{NAMES[s]} [95% CI]" for s in STATISTICS) + " |"
    out = [head, "|---|---:|" + "---:|" * len(STATISTICS)]
    for method, stats in rows.items():
        seeds = len(next(iter(c.scores[method].values())))
        cells = " | ".join(
            "n/a"
            if v is None
            else f"{v[0]:.3f} " + (f"[{v[1]:.3f}, {v[2]:.3f}]" if seeds > 1 else "(1 seed: none)")
            for v in stats.values()
        )
        out.append(f"| {method} | {seeds} | {cells} |")
    return out


def write_outputs(c: Comparison, out: Path, fmt: str) -> list[Path]:
    """compare.json, compare.md and the figures in ``out``."""
    from nnxrl.analysis.comparison_figures import draw_figures
    from nnxrl.store import own_files

    out.mkdir(parents=True, exist_ok=True)
    own_files.write_text(out / "compare.json", json.dumps(c.as_json(), indent=1))
    own_files.write_text(out / "compare.md", markdown(c))
    return [out / "compare.json", out / "compare.md", *draw_figures(c, out, fmt)]
