"""Population-based training: ``pbt_step`` on its own (exact copies from donors of the
same seed, perturbed values from the factor set within bounds, the rest untouched,
deterministic), its config checks, and PBT runs: members train as a plain sweep's
until the first step, records carry each member's values and donors, and a stopped
run resumes byte-identically."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cli_runs import CARTPOLE, SHORT_CARTPOLE

from nnxrl import config as config_lib
from nnxrl.analysis.lineage import lineages
from nnxrl.analysis.sweep_report import report
from nnxrl.cli import main
from nnxrl.run.training import run_training
from nnxrl.store import checkpoint
from nnxrl.sweeps.pbt import ExploredKey, PBTStatic, pbt_step
from nnxrl.types import RunState

P, S = 8, 2  # settings per population, seeds (independent populations)
M = P * S


class Hp(NamedTuple):
    learning_rate: Any
    ent_coef: Any


def static(**changes: Any) -> PBTStatic:
    values = {
        "population": P,
        "num_seeds": S,
        "interval": 4,
        "num_updates": 100,
        "seed": 0,
        "exploit": "truncation",
        "fraction": 0.25,
        "explore": "perturb",
        "factors": (0.8, 1.25),
        "resample_probability": 0.25,
        "keys": (
            ExploredKey("ppo.learning_rate", "learning_rate", 0.0, 2e-3, grid=(1e-4, 1e-3)),
            ExploredKey("ppo.ent_coef", "ent_coef", 0.0, 1.0, distribution=("uniform", (0.0, 0.1))),
        ),
    }
    return PBTStatic(**{**values, **changes})


def population(seed: int = 0) -> RunState:
    rng = np.random.default_rng(seed)

    def arr(*shape):
        return jnp.asarray(rng.normal(size=(M, *shape)), jnp.float32)

    return RunState(
        params={"w": arr(3, 2), "b": arr(2)},
        opt_state=(arr(3, 2), jnp.arange(M)),
        env_state=arr(4),
        obs=arr(4),
        hidden=arr(0),
        start=jnp.zeros((M, 4), bool),
        key=jax.random.split(jax.random.key(seed), M),
        update=jnp.full(M, 8, jnp.int32),
        addon={"rnd": arr(5)},
        recent_returns=arr(),
        normalizer=(),
        hyperparams=Hp(
            jnp.asarray(rng.uniform(1e-4, 1e-3, M), jnp.float32),
            jnp.asarray(rng.uniform(0.0, 0.05, M), jnp.float32),
        ),
    )


def leaves_of(state: RunState, member: int, fields: tuple[str, ...]) -> list[np.ndarray]:
    return [np.asarray(x[member]) for f in fields for x in jax.tree.leaves(getattr(state, f))]


COPIED = ("params", "opt_state", "addon", "recent_returns")
OWN = ("env_state", "obs", "start", "update")


@pytest.mark.parametrize("exploit", ["truncation", "tournament"])
def test_pbt_step_copies_donors_exactly_and_perturbs_their_values(exploit):
    s = static(exploit=exploit)
    before = population()
    fitness = jnp.asarray(np.random.default_rng(1).permutation(M), jnp.float32)
    after, donor = pbt_step(before, fitness, jax.random.key(3), s)
    donor = np.asarray(donor)
    copied = np.flatnonzero(donor >= 0)
    assert copied.size > 0
    for m in range(M):
        if donor[m] < 0:  # untouched, every field
            for f in (*COPIED, *OWN, "hyperparams"):
                for a, b in zip(leaves_of(after, m, (f,)), leaves_of(before, m, (f,)), strict=True):
                    np.testing.assert_array_equal(a, b)
            continue
        d = int(donor[m])
        assert d % S == m % S and d != m  # a member of its own seed's population
        assert fitness[d] > fitness[m]
        for a, b in zip(leaves_of(after, m, COPIED), leaves_of(before, d, COPIED), strict=True):
            np.testing.assert_array_equal(a, b)  # exactly the donor's
        for a, b in zip(leaves_of(after, m, OWN), leaves_of(before, m, OWN), strict=True):
            np.testing.assert_array_equal(a, b)  # its own env, observations, clock
        for k in s.keys:
            new = float(getattr(after.hyperparams, k.field)[m])
            old = float(getattr(before.hyperparams, k.field)[d])
            candidates = [min(max(old * f, k.low), k.high) for f in s.factors]
            assert any(np.isclose(new, c, rtol=1e-6) for c in candidates), (new, candidates)
    if exploit == "truncation":  # the 2 least fit of each seed copy from its 2 fittest
        assert copied.size == 2 * S
        for seed in range(S):
            ranked = sorted(range(seed, M, S), key=lambda m: float(fitness[m]))
            assert set(copied[copied % S == seed]) == set(ranked[:2])
            assert {int(donor[m]) for m in ranked[:2]} <= set(ranked[-2:])
    again, again_donor = pbt_step(before, fitness, jax.random.key(3), s)
    np.testing.assert_array_equal(again_donor, donor)  # deterministic given the key
    for f in (*COPIED, "hyperparams"):
        a, b = jax.tree.leaves(getattr(again, f)), jax.tree.leaves(getattr(after, f))
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)


def test_explored_values_stay_within_bounds_and_resample_from_the_sweep():
    s = static(
        explore="resample",
        resample_probability=1.0,
        keys=(ExploredKey("ppo.learning_rate", "learning_rate", 0.0, 2e-3, grid=(1e-4, 1e-3)),),
    )
    fitness = jnp.arange(M, dtype=jnp.float32)
    after, donor = pbt_step(population(), fitness, jax.random.key(0), s)
    lr = np.asarray(after.hyperparams.learning_rate)[np.asarray(donor) >= 0]
    assert lr.size and all(np.isclose(v, 1e-4) or np.isclose(v, 1e-3) for v in lr)  # drawn
    clipped = static(factors=(100.0,))
    after, donor = pbt_step(population(), fitness, jax.random.key(0), clipped)
    lr = np.asarray(after.hyperparams.learning_rate)[np.asarray(donor) >= 0]
    np.testing.assert_allclose(lr, 2e-3)  # x100 clipped to the bound


def test_a_nan_fitness_counts_as_the_least_fit():
    fitness = jnp.arange(M, dtype=jnp.float32).at[M - 1].set(jnp.nan)  # the top of seed 1
    _, donor = pbt_step(population(), fitness, jax.random.key(0), static())
    assert donor[M - 1] >= 0


PBT_SWEEP = [
    *SHORT_CARTPOLE,
    # compiled as a user's run is: the PBT and the plain program then agree to 1e-5 in
    # their first updates (compiled fast they differed by 2.6e-5, other fused loops)
    "fast_compile=false",
    "num_seeds=2",
    "sweep.grid={ppo.learning_rate: [1.0e-4, 1.0e-3, 3.0e-3, 1.0e-2]}",
]
PBT = "sweep.pbt={interval: 8, fraction: 0.25}"
KEYS = ["ppo.learning_rate"]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("sweep.pbt={interval: 40}", "sweep.pbt.interval: 40 updates, but the run has 40"),
        ("sweep.pbt={interval: 6}", "6 is not a multiple of the 4 updates per chunk"),
        ("sweep.pbt={interval: 4, factors: [0.8, 0]}", r"sweep.pbt.factors\[1\]: 0.0"),
        (
            "sweep.pbt={interval: 4, bounds: {ppo.learning_rate: [1.0e-3, 1.0e-2]}}",
            "excludes setting 0's initial value 0.0001",
        ),
        ("sweep.pbt={interval: 4, bounds: {ppo.gamma: [0, 1]}}", "ppo.gamma is not swept"),
        ("sweep.grid={network.width: [16, 32]}", "network.width cannot be traced"),
        ("sweep.grid={ppo.learning_rate: [1.0e-3]}", "the population is the sweep's settings"),
    ],
)
def test_bad_pbt_settings_are_refused_before_anything_is_written(
    override, message, tmp_path, capsys
):
    overrides = [*PBT_SWEEP, "sweep.pbt={interval: 4}", override]
    with pytest.raises(config_lib.ConfigError, match=message):
        config_lib.load(CARTPOLE, overrides)
    args = ["train", CARTPOLE, "--out", str(tmp_path / "run")]
    assert main(args + sum((["--set", o] for o in overrides), [])) == 2
    assert not (tmp_path / "run").exists()


def records(path) -> list[dict]:
    return [json.loads(x) for x in (path / "metrics.jsonl").read_text().splitlines()]


def test_a_pbt_run_trains_as_the_sweep_until_its_first_step_and_resumes_exactly(tmp_path):
    pbt = config_lib.load(CARTPOLE, [*PBT_SWEEP, PBT])
    plain = config_lib.load(CARTPOLE, PBT_SWEEP)
    run_training(plain, tmp_path / "plain", quiet=True)
    trackers = config_lib.load(CARTPOLE, [*PBT_SWEEP, PBT, "logging.backends=[mlflow,tensorboard]"])
    run_training(trackers, tmp_path / "whole", quiet=True)
    with pytest.raises(KeyboardInterrupt):  # stopped at update 12, inside the 2nd interval
        run_training(pbt, tmp_path / "split", quiet=True, stop_after=12)
    assert checkpoint.latest(tmp_path / "split") == 12
    run_training(pbt, tmp_path / "split", quiet=True, resume=True)
    whole = (tmp_path / "whole" / "metrics.jsonl").read_bytes()
    assert whole == (tmp_path / "split" / "metrics.jsonl").read_bytes()

    by_member = {}
    for r in records(tmp_path / "whole"):
        by_member.setdefault((r["setting"], r["seed"]), []).append(r)
    plain_by_member = {}
    for r in records(tmp_path / "plain"):
        plain_by_member.setdefault((r["setting"], r["seed"]), []).append(r)
    assert len(by_member) == 8 and all(len(v) == 40 for v in by_member.values())
    for member, rows in by_member.items():  # updates 1..8: each member as in the sweep
        for r, q in zip(rows[:8], plain_by_member[member][:8], strict=True):
            np.testing.assert_allclose(r["loss/total"], q["loss/total"], rtol=1e-5, atol=1e-6)
            assert r["hp/ppo.learning_rate"] == pytest.approx(q["hparams"]["ppo.learning_rate"])
    steps = [r for rows in by_member.values() for r in rows if r["pbt/donor"] >= 0]
    assert {r["update"] % 8 for r in steps} == {0}  # exploits only every 8 updates
    assert {r["update"] for r in steps} >= {8, 16, 24}
    for r in steps:  # the copy trains on with the donor's value times a factor
        rows = by_member[(r["setting"], r["seed"])]
        donor = int(r["pbt/donor"])
        donor_rows = by_member[(donor // 2, donor % 2)]
        new = rows[r["update"]]["hp/ppo.learning_rate"]  # the next update's value
        old = donor_rows[r["update"] - 1]["hp/ppo.learning_rate"]
        assert any(np.isclose(new, old * f, rtol=1e-5) for f in (0.8, 1.25)), (new, old)

    report(tmp_path / "whole", quiet=True)  # ranks each seed's members, traces the winner
    assert not (tmp_path / "whole" / "best.yaml").exists()  # no fixed setting is the result
    assert (tmp_path / "whole" / "pbt_lineage.png").stat().st_size > 0
    seeds = json.loads((tmp_path / "whole" / "pbt.json").read_text())["seeds"]
    assert [x["seed"] for x in seeds] == [0, 1]
    for x, found in zip(seeds, lineages(records(tmp_path / "whole"), KEYS, 2), strict=True):
        winner = by_member[(x["winner"] // 2, x["winner"] % 2)]
        assert x["ranking"][0]["final_return"] == winner[-1]["episode_return_window"]
        assert found.members[-1] == x["winner"] and len(found.members) == 40
        for u, (a, b) in enumerate(zip(found.members, found.members[1:], strict=False), 1):
            row = by_member[(a // 2, a % 2)][u - 1]  # the lineage's record at update u
            assert row["hp/ppo.learning_rate"] == found.values["ppo.learning_rate"][u - 1]
            if a != b:  # member b copied a after update u
                assert by_member[(b // 2, b % 2)][u - 1]["pbt/donor"] == a
    assert_trackers_hold_each_members_values(tmp_path / "whole", by_member)
    assert_the_best_schedule_replays(tmp_path / "whole", tmp_path / "replay", by_member)


def assert_trackers_hold_each_members_values(run, by_member) -> None:
    """MLflow: a child run per member with its values as a series (as its records
    say, changing where it copied); TensorBoard: a folder per member."""
    from mlflow import MlflowClient

    from nnxrl.logging.mlflow_tracker import local_store_uri

    client = MlflowClient(tracking_uri=local_store_uri(run))
    parent = (run / "mlflow_run_id").read_text().strip()
    experiment = client.get_experiment_by_name("nnxrl-CartPole-v1")
    children = client.search_runs(
        [experiment.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent}'"
    )
    by_tags = {
        (int(c.data.tags["nnxrl.setting"]), int(c.data.tags["nnxrl.seed"])): c for c in children
    }
    assert sorted(by_tags) == sorted(by_member) and len(by_tags) == 8
    changed = 0
    for member, child in by_tags.items():
        assert child.info.run_name.endswith(f"/seed_{member[1]}/member_{member[0]}")
        history = client.get_metric_history(child.info.run_id, "hp/ppo.learning_rate")
        want = [r["hp/ppo.learning_rate"] for r in by_member[member]]
        assert [m.value for m in sorted(history, key=lambda m: m.step)] == pytest.approx(want)
        changed += len(set(want)) > 1
    assert changed >= 2  # members that copied and explored show it
    for setting, seed in by_member:
        assert any((run / "tensorboard" / f"setting_{setting}" / f"seed_{seed}").glob("events.*"))


def assert_the_best_schedule_replays(run, out, by_member) -> None:
    """best_schedule.yaml trains the best seed's winner's schedule from scratch: each
    update of that seed trains with the lineage's value, and until the first change
    (within the first interval) it is the member the lineage started in, as a plain
    run of its values. (Whether the winner was ever copied depends on the run's float
    rounding: a winner never copied has one value, a plain config.)"""
    seeds = json.loads((run / "pbt.json").read_text())["seeds"]
    best = max(seeds, key=lambda x: x["ranking"][0]["final_return"])
    config = config_lib.load(run / "best_schedule.yaml")
    assert not config.is_sweep and len(config.hp_schedule) == len(best["schedule"]) - 1
    run_training(config, out, quiet=True)
    found = lineages(records(run), KEYS, 2)[best["seed"]]
    replay = [r for r in records(out) if r["seed"] == best["seed"]]
    if config.hp_schedule:
        got = [r["hp/ppo.learning_rate"] for r in replay]
    else:  # one value throughout: the plain config's
        got = [config.ppo.learning_rate] * len(replay)
    assert got == pytest.approx(found.values["ppo.learning_rate"], rel=1e-6)
    start = found.members[0]
    first_change = config.hp_schedule[0]["from_update"] if config.hp_schedule else 9
    # over the first interval at most: a population and a run of 2 seeds round apart
    # (1e-7), and CartPole's episodes grow that to 1e-3 within 16 updates on some CPUs
    origin = by_member[(start // 2, start % 2)][: min(first_change, 9) - 1]
    for r, q in zip(replay, origin, strict=False):
        np.testing.assert_allclose(r["loss/total"], q["loss/total"], rtol=1e-5, atol=1e-6)
    assert len(replay) == 40 and first_change > 1


def test_a_lineage_follows_every_copy_back_to_its_start():
    """Member 1 copies member 0 after update 2, member 0 copies member 1 after update
    4: member 0's lineage at update 6 is 0, 0, 1, 1, 0, 0 and its schedule changes
    wherever those members' values differ."""
    lr = {0: [1.0, 1.0, 1.0, 1.0, 2.5, 2.5], 1: [3.0, 3.0, 0.8, 0.8, 0.8, 0.8]}
    donors = {(1, 2): 0, (0, 4): 1}
    rows = [
        {
            "setting": m,
            "seed": 0,
            "update": u,
            "episode_return_window": float(u + m),
            "hp/ppo.learning_rate": lr[m][u - 1],
            "pbt/donor": donors.get((m, u), -1),
        }
        for m in (0, 1)
        for u in range(1, 7)
    ]
    rows[5]["episode_return_window"] = 100.0  # member 0 ends best
    (found,) = lineages(rows, KEYS, num_seeds=1)
    assert found.ranking[0]["member"] == 0 and found.copies == 2
    assert found.members == [0, 0, 1, 1, 0, 0]
    assert found.values["ppo.learning_rate"] == [1.0, 1.0, 0.8, 0.8, 2.5, 2.5]
    assert [step["from_update"] for step in found.schedule] == [1, 3, 5]


def test_a_pbt_run_killed_after_its_exploit_steps_resumes_to_the_same_records(tmp_path):
    """A real `nnxrl train` of a PBT sweep is SIGKILLed once the record of update 17 is
    written (PBT steps at 8 and 16 done, the chunk holding the one at 24 maybe in
    flight), then resumed: metrics.jsonl is byte for byte an uninterrupted run's."""
    overrides = [*PBT_SWEEP, PBT, "total_env_steps=10240", "checkpoint.every_updates=8"]
    args = [arg for o in overrides for arg in ("--set", o)]

    def train(out, *more):
        command = [sys.executable, "-m", "nnxrl", "train", CARTPOLE, "--out", str(out)]
        return subprocess.Popen([*command, *args, *more], stderr=subprocess.PIPE, text=True)

    assert train(tmp_path / "whole").wait(timeout=300) == 0
    split = tmp_path / "split"
    killed = train(split)
    deadline = time.monotonic() + 300
    while not any('"update": 17,' in line for line in lines_of(split / "metrics.jsonl")):
        assert killed.poll() is None and time.monotonic() < deadline, killed.stderr.read()
        time.sleep(0.02)
    killed.kill()
    assert killed.wait() == -signal.SIGKILL
    resume = [sys.executable, "-m", "nnxrl", "train", "--resume", str(split)]
    resumed = subprocess.run(resume, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    whole = (tmp_path / "whole" / "metrics.jsonl").read_bytes()
    assert (split / "metrics.jsonl").read_bytes() == whole


def lines_of(path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []
