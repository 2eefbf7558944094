"""Learning checks (marked ``learning``; CI runs them too).

Each asserts what a researcher would claim from several seeds trained in one program:
a mean over seeds with a margin, or that k of n seeds succeed, never one seed's
trajectory (another CPU or a newer dependency changes the floats, and a chaotic run
then takes another path). Each is checked at a second seed offset too
(``NNXRL_TEST_SEED_OFFSET``, conftest.py).
"""

import json

import numpy as np
import pytest

from nnxrl.analysis.lineage import lineages
from nnxrl.cli import main


def train_records(out, config, overrides, seed_offset):
    args = ["train", config, "--out", str(out), "--set", f"seed={seed_offset}"]
    overrides = ["logging.backends=[]", *overrides]
    assert main(args + sum((["--set", s] for s in overrides), [])) == 0
    return [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]


# the off-policy and PQN configs at half their budget (their schedules scaled with it):
# PQN's 250,000 env steps, DQN's 100,000, where the shipped configs run 500,000 and
# 200,000 (measured at half: PQN 500 in every seed at offsets 0 and 1000; DQN means
# 489.5, 499.0 and 500.0 at offsets 0, 1000 and 2000, the lowest seed 458)
CARTPOLE_BUDGETS = {"ppo": [], "pqn": ["total_env_steps=250000"], "dqn": ["total_env_steps=100000"]}


@pytest.mark.learning
@pytest.mark.parametrize("algo", list(CARTPOLE_BUDGETS))
def test_cartpole_four_seeds_in_one_program_solve_it(tmp_path, algo, seed_offset):
    """The mean return of the last 5 % of updates: over 475 (of 500) averaged over 4
    seeds, and over 450 for at least 3 of them."""
    overrides = ["num_seeds=4", *CARTPOLE_BUDGETS[algo]]
    records = train_records(tmp_path, f"configs/{algo}-cartpole.yaml", overrides, seed_offset)
    num_updates = max(r["update"] for r in records)
    tail = num_updates - int(0.05 * num_updates)
    finals = []
    for seed in range(4):
        returns = [
            r["episode_return"]
            for r in records
            if r["seed"] == seed and r["update"] > tail and r["episode_return"] is not None
        ]
        finals.append(np.mean(returns) if returns else 0.0)
    assert np.mean(finals) >= 475 and sum(f >= 450 for f in finals) >= 3, finals


@pytest.mark.learning
def test_sac_swings_pendulum_up_within_20000_env_steps(tmp_path, seed_offset):
    """SAC's policy after 20,000 env steps (100 episodes), played greedily for 16
    episodes per seed: mean return over 4 seeds >= -200 (published SAC solves Pendulum
    by then) and >= -250 for at least 3 of them (measured at offset 0: -173, -110, -175,
    -144 over 10 episodes each; a failed swing-up scores below -1000)."""
    from nnxrl import evaluate, policy_from_checkpoint

    train_records(tmp_path, "configs/sac-pendulum.yaml", ["num_seeds=4"], seed_offset)
    result = evaluate(policy_from_checkpoint(tmp_path), episodes=16, greedy=True)
    means = np.asarray([row["return_mean"] for row in result.seeds])
    assert np.mean(means) >= -200 and np.sum(means >= -250) >= 3, means


def best_returns(records) -> np.ndarray:
    """Each seed's best update-mean return over the run."""
    by_seed = {}
    for r in records:
        by_seed.setdefault(r["seed"], []).append(r["episode_return"] or 0.0)
    return np.asarray([max(v) for _, v in sorted(by_seed.items())])


@pytest.mark.learning
def test_rnd_finds_deepsea_treasure_that_plain_ppo_never_reaches(tmp_path, seed_offset):
    """DeepSea's treasure pays 1 (minus move costs) at the end of one exact path. Over
    12 seeds and the first half of the shipped config's budget (58 updates; its
    learning rate is constant, so these are that run's first updates), plain PPO
    reaches it in none; RND in at least 2 (measured: 19 of 36 seeds over offsets 0,
    1000, 2000; at that rate 2 of 12 fails about once in 560 runs)."""
    config, seeds = "configs/rnd-deepsea.yaml", ["num_seeds=12", "total_env_steps=60000"]
    plain = ["intrinsic.addon=none", "intrinsic.options={}", *seeds]
    ppo = best_returns(train_records(tmp_path / "ppo", config, plain, seed_offset))
    rnd = best_returns(train_records(tmp_path / "rnd", config, seeds, seed_offset))
    assert len(ppo) == len(rnd) == 12
    assert np.all(ppo < 0.5), ppo
    assert np.sum(rnd > 0.9) >= 2, rnd


@pytest.mark.learning
def test_pqn_with_rnd_finds_deepsea_treasure_that_plain_pqn_rarely_reaches(tmp_path, seed_offset):
    """Every step right costs, so only the treasure makes an update's mean return
    positive. Over 8 seeds, PQN + RND has such an update in at least 6, plain PQN in at
    most 3, over half the shipped config's budget with epsilon decaying over all of
    it (so its schedule is the shipped run's). Measured: PQN + RND in 31 of 32 seeds (16 at
    offsets 0 and 1000; the last first found it at update 264), plain PQN in 4 of 40
    (16 and 4 seeds at each offset); at those rates the claim fails about once in 150
    runs."""
    config = "configs/pqn-rnd-deepsea.yaml"
    half = ["num_seeds=8", "total_env_steps=240000", "pqn.epsilon_decay_fraction=1.0"]
    plain = ["intrinsic.addon=none", "intrinsic.options={}", "intrinsic.mode=reward"]
    pqn = best_returns(train_records(tmp_path / "pqn", config, [*plain, *half], seed_offset))
    rnd = best_returns(train_records(tmp_path / "rnd", config, half, seed_offset))
    assert len(pqn) == len(rnd) == 8
    assert np.sum(rnd > 0.0) >= 6, rnd
    assert np.sum(pqn > 0.0) <= 3, pqn


def final_returns(records) -> np.ndarray:
    """Each seed's mean return over its last 10 updates."""
    last = max(r["update"] for r in records)
    by_seed = {}
    for r in records:
        if r["update"] > last - 10 and r["episode_return"] is not None:
            by_seed.setdefault(r["seed"], []).append(r["episode_return"])
    return np.asarray([np.mean(v) for _, v in sorted(by_seed.items())])


# the stronger recall test below (RepeatPrevious) where a kind passes it, with its floor:
# each cell and each algorithm once (the other pairs are measured in docs/memory.md;
# each of these runs is 1-3 minutes of the suite); min_gru with one layer, whose
# convolution sees 3 steps back, so that the fourth is held by its state, at half the
# budget (it recalls by then); PQN's LSTM and transformer with their own configs, at
# half their budgets too (PPO's transformer: the transformer's recall test below)
HALF = "total_env_steps=102400"
MIN_GRU_CONV = ["network.options={layers: 1, conv: 4}", HALF]
RECALL_RUNS = [
    pytest.param("ppo-rnn", ["network.kind=gru"], 0.9, id="ppo-gru"),
    pytest.param("pqn-lstm", [HALF], 0.85, id="pqn-lstm"),
    pytest.param("ppo-rnn", ["network.kind=min_gru", *MIN_GRU_CONV], 0.9, id="ppo-min_gru"),
    pytest.param("pqn-trxl", [HALF], 0.9, id="pqn-transformer_xl"),
]


@pytest.mark.learning
def test_pqn_min_gru_remembers_what_feed_forward_networks_cannot(tmp_path, seed_offset):
    """MemoryChain: +1 for repeating a bit seen five steps earlier, -1 otherwise. Over
    4 seeds PQN's min_gru averages over 0.8 and at least 3 seeds exceed 0.8 (measured
    at offsets 0, 1000 and 2000: every seed of min_gru, PPO's and PQN's, at 0.99 or
    1.0); a feed-forward network stays at chance (next test). The other pairs are asked
    more by the RepeatPrevious test below."""
    config = "configs/pqn-rnn-memorychain.yaml"
    overrides = ["network.kind=min_gru", "num_seeds=4"]
    finals = final_returns(train_records(tmp_path, config, overrides, seed_offset))
    assert len(finals) == 4
    assert np.mean(finals) > 0.8 and np.sum(finals > 0.8) >= 3, finals


@pytest.mark.learning
def test_a_gru_with_chrono_initialisation_holds_a_bit_across_50_steps(tmp_path, seed_offset):
    """MemoryChain with a memory of 50 (configs/ppo-rnn-memorychain-50.yaml, the GRU
    with chrono 64), at 300,000 env steps (the config's 1M reaches 1.0): over 8 seeds
    at least 6 exceed 0.8 and the mean 0.75. Measured: 58 of 60 seed runs over 0.9
    (offsets 0, 1000 and 2000, 4, 8 and 16 seeds a program), two near chance (0.15 and
    0.16), so a claim on all of 4 seeds failed once in a suite run; at 1 in 30 a seed,
    3 of 8 fail about once in 500 runs. Without chrono the same GRU stayed near chance (0.287
    at 500,000; docs/memory.md), its gradient 16 steps back under 1e-3 of the current
    step's (test_memory.py)."""
    config = "configs/ppo-rnn-memorychain-50.yaml"
    overrides = ["total_env_steps=300000", "num_seeds=8"]
    finals = final_returns(train_records(tmp_path, config, overrides, seed_offset))
    assert len(finals) == 8
    assert np.mean(finals) > 0.75 and np.sum(finals > 0.8) >= 6, finals


@pytest.mark.learning
@pytest.mark.parametrize("algo", ["ppo", "pqn"])
def test_a_feed_forward_network_stays_at_chance_on_memory_chain(tmp_path, algo, seed_offset):
    """The same task without memory: |mean| < 0.3 over 4 seeds."""
    config = f"configs/{algo}-rnn-memorychain.yaml"
    mlp_overrides = ["network.kind=feedforward", "num_seeds=4"]
    mlp = final_returns(train_records(tmp_path, config, mlp_overrides, seed_offset))
    assert len(mlp) == 4 and abs(np.mean(mlp)) < 0.3, mlp


@pytest.mark.learning
@pytest.mark.parametrize(("config", "overrides", "floor"), RECALL_RUNS)
def test_each_memory_kind_recalls_the_symbol_four_steps_back(
    tmp_path, config, overrides, floor, seed_offset
):
    """RepeatPrevious: name the symbol (of 4) shown 4 steps earlier, at the
    ``{config}-repeat-previous.yaml`` settings (docs/memory.md), three of them at half
    the budget: over 4 seeds the mean and at least 3 seeds reach ``floor``, PPO's GRU,
    PQN's LSTM, PPO's min_gru with a convolution over 4 inputs and PQN's
    Transformer-XL (RECALL_RUNS). Measured at offsets 0 and 1000: PPO's GRU 0.985 and
    0.986 (every seed 0.96 to 0.99). PQN's LSTM, its own config (16 epochs) at
    102,400 env steps: 0.984, 0.927 and 0.953 at offsets 0, 1000 and 2000 (every seed
    0.90 or more; at 204,800, 0.992 and 0.990), where the recurrent config's 8 epochs
    at 204,800, the same SGD steps, gave seeds from 0.84 to 0.99 and failed this floor
    at offset 2000 (0.99, 0.845, 0.860, 0.848). PPO's min_gru, one layer, conv 4, at
    102,400 env steps: 0.995, 0.993 and 0.997 at offsets 0, 1000 and 2000 (every seed
    0.99 or more; at 204,800, 0.999 at 0 and 1000), where without the convolution
    min_gru stays at 0.49. PQN's Transformer-XL, width 32, its step size annealed
    from 3e-3, at 102,400 env steps: 0.966 and 0.978 (every seed 0.94 or more; at
    204,800, 0.987 and 0.986), where with a constant rate it levelled off near 0.9."""
    config = f"configs/{config}-repeat-previous.yaml"
    finals = final_returns(train_records(tmp_path, config, overrides, seed_offset))
    assert len(finals) == 4
    assert np.mean(finals) >= floor and np.sum(finals >= floor) >= 3, finals


@pytest.mark.learning
@pytest.mark.parametrize(("memory", "solved"), [(4, True), (3, False)])
def test_the_transformer_recalls_within_its_memory_and_not_beyond(
    tmp_path, memory, solved, seed_offset
):
    """RepeatPrevious: name the symbol (of 4) shown 4 steps earlier. PPO with a
    one-layer Transformer-XL whose window holds M = 4 steps averages over 0.8 on 4
    seeds (3 over 0.8); with M = 3 the symbol has left the window and it stays near
    chance, 0.25 (mean under 0.4). Half the config's budget, 102,400 env steps;
    measured at offsets 0 and 1000: 0.94 to 1.0 with M = 4, 0.24 to 0.26 with M = 3
    (at the full budget 0.98 to 1.0 and 0.22 to 0.26)."""
    config = "configs/ppo-trxl-repeat-previous.yaml"  # M = 8 there
    options = f"network.options={{layers: 1, heads: 2, memory: {memory}}}"
    overrides = [options, "total_env_steps=102400"]
    finals = final_returns(train_records(tmp_path, config, overrides, seed_offset))
    assert len(finals) == 4
    if solved:
        assert np.mean(finals) > 0.8 and np.sum(finals > 0.8) >= 3, finals
    else:
        assert np.mean(finals) < 0.4, finals


def best_final_per_seed(records: list[dict]) -> np.ndarray:
    """Each seed's best member's rolling return at the last update."""
    last = max(r["update"] for r in records)
    finals: dict[int, float] = {}
    for r in records:
        if r["update"] == last:
            finals[r["seed"]] = max(finals.get(r["seed"], -np.inf), r["episode_return_window"])
    return np.array([finals[s] for s in sorted(finals)])


@pytest.mark.learning
def test_pbt_ends_at_or_above_the_best_fixed_learning_rate(tmp_path, seed_offset):
    """configs/pbt-ppo-cartpole.yaml: 5 learning rates x 4 seeds, 100k env steps. Each
    seed's best PBT member against the best member of the same grid without PBT (equal
    compute): the mean over the 4 seeds solves CartPole (>= 450) and is no more than 25
    below the grid's (4 seeds cannot tell a few points apart), and every seed's
    winning lineage changed its rate during the run (a schedule, not a point); the
    best winner's schedule (best_schedule.yaml) trained from scratch on 8 seeds
    averages 425 or more, 6 of them 400 or more (one run a seed, against the grid's
    best of 5 a seed, so it is held to the task, not to the grid). Measured at offsets
    0 and 1000: PBT 490 and 492 (per seed 481 to 500), the grid 474 and 479 (448 to
    497); with newer dependencies inside the pinned ranges (JAX 0.10.2, Flax 0.12.8,
    Optax 0.2.8): PBT 500 and 477, the grid 490 and 482. The replay, 16 seeds at
    offsets 0, 1000 and 2000 on a later machine: means 492, 479 and 471, 42 of 48
    seeds at 450 or more, the lowest 398 and 399; there a replay on 4 seeds at offset
    1000 gave 455, 486, 234 and 500, so a claim on the mean of 4 (450) failed. The
    order of the means is within 4 seeds' noise, so the test asserts PBT within 25 of
    the grid, not above it."""
    config = "configs/pbt-ppo-cartpole.yaml"
    pbt_records = train_records(tmp_path / "pbt", config, [], seed_offset)
    grid_records = train_records(
        tmp_path / "grid", config, ["sweep.pbt={interval: 0}"], seed_offset
    )
    pbt, grid = best_final_per_seed(pbt_records), best_final_per_seed(grid_records)
    assert len(pbt) == len(grid) == 4
    assert pbt.mean() >= 450 and pbt.mean() >= grid.mean() - 25, (pbt, grid)
    for found in lineages(pbt_records, ["ppo.learning_rate"], num_seeds=4):
        assert len(found.schedule) > 1, found.schedule
    assert main(["sweep-report", str(tmp_path / "pbt")]) == 0
    schedule = str(tmp_path / "pbt" / "best_schedule.yaml")
    replay_seeds = ["num_seeds=8"]
    replay = best_final_per_seed(
        train_records(tmp_path / "replay", schedule, replay_seeds, seed_offset)
    )
    assert len(replay) == 8, replay
    assert replay.mean() >= 425 and np.sum(replay >= 400) >= 6, (replay, grid)


@pytest.mark.learning
def test_a_registered_algorithm_learns_cartpole(tmp_path, seed_offset):
    """A2C (examples/custom_algorithm.py, trained through --plugin) on CartPole: the
    rolling return of the last 100 episodes over 150 averaged over 4 seeds and over
    120 for at least 3 (measured at offsets 0, 1000, 2000: 12 seeds, 176 to 461, mean
    219 to 388; a random policy scores about 22)."""
    args = ["--plugin", "examples/custom_algorithm.py", "train", "examples/a2c-cartpole.yaml"]
    args += ["--out", str(tmp_path), "--set", f"seed={seed_offset}", "--set", "logging.backends=[]"]
    assert main(args) == 0
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    last = max(r["update"] for r in records)
    finals = [r["episode_return_window"] for r in records if r["update"] == last]
    assert np.mean(finals) >= 150 and sum(f >= 120 for f in finals) >= 3, finals
