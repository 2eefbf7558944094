import importlib.util

import pytest

from nnxrl import config as C
from nnxrl.config import schedule
from nnxrl.config.shipped import shipped_configs
from nnxrl.envs.suites import suite_of

CARTPOLE = "configs/ppo-cartpole.yaml"


def test_shipped_configs_load():
    cfg = C.load(CARTPOLE)
    assert schedule.batch_size(cfg) == 512 and schedule.num_updates(cfg) == 976
    craftax = C.load("configs/ppo-craftax-classic-symbolic.yaml")
    assert craftax.env.reset_ratio == 16 and craftax.network.width == 512


@pytest.mark.parametrize("name", sorted(shipped_configs()))
def test_every_shipped_config_loads_and_its_parts_check(name):
    """Each file names a known env, network kind and add-on that fit together (what
    `nnxrl train` checks before it writes anything); one whose env is in an optional
    extra that is not installed is skipped (CI installs them all)."""
    config = C.load(shipped_configs()[name])
    suite = suite_of(config.env.id)
    if suite and not suite.available():
        pytest.skip(f"{config.env.id} needs `uv sync --extra {suite.extra}`")
    if config.env.id.startswith("brax:") and importlib.util.find_spec("brax") is None:
        pytest.skip(f"{config.env.id} needs `uv sync --extra brax`")
    C.check_parts(config)


@pytest.mark.parametrize(
    ("written", "steps"),
    [("1e5", 100_000), ("5e6", 5_000_000), ("1_000_000", 1_000_000), ("2.5e5", 250_000)],
)
def test_integer_settings_take_numbers_as_researchers_write_them(tmp_path, written, steps):
    """In an override and in a YAML file alike (YAML 1.1 reads 1e5 as a string)."""
    assert C.load(CARTPOLE, [f"total_env_steps={written}"]).total_env_steps == steps
    path = tmp_path / "run.yaml"
    path.write_text(f"env:\n  id: CartPole-v1\ntotal_env_steps: {written}\n")
    assert C.load(path).total_env_steps == steps


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("1.5e-3", "total_env_steps: expected a whole number, got 0.0015; write it as 1000, 1e5"),
        ("2.5", "total_env_steps: expected a whole number, got 2.5"),
        ("1e20", "total_env_steps: 100000000000000000000 is out of range; it must be <= 10000"),
        ("lots", "total_env_steps: expected an integer, got 'lots'"),
    ],
)
def test_an_integer_setting_refuses_what_is_not_a_whole_number_by_name(written, said):
    with pytest.raises(C.ConfigError) as e:
        C.load(CARTPOLE, [f"total_env_steps={written}"])
    assert str(e.value).startswith(said), str(e.value)


def test_overrides_apply_and_run_keys_are_top_level():
    cfg = C.load(CARTPOLE, ["num_seeds=8", "total_env_steps=100000", "ppo.learning_rate=1e-3"])
    assert (cfg.num_seeds, cfg.total_env_steps, cfg.ppo.learning_rate) == (8, 100000, 1e-3)


@pytest.mark.parametrize(
    "override,names",
    [
        (["ppo.learnig_rate=1e-3"], ["ppo.learnig_rate", "did you mean ppo.learning_rate"]),
        (["bogus=1"], ["bogus"]),
        (["ppo.num_epochs=two"], ["ppo.num_epochs", "'two'", "integer"]),
        (["ppo.anneal_lr=1"], ["ppo.anneal_lr", "true or false"]),
        (["ppo.gamma=1.5"], ["ppo.gamma", "1.5", "<= 1"]),
        (["ppo.learning_rate=0"], ["ppo.learning_rate", "> 0"]),
        (["env.num_envs=0"], ["env.num_envs", ">= 1"]),
        (["network.activation=sigmoid"], ["network.activation", "'sigmoid'", "'tanh'"]),
        (["ppo.advantage_normalization=global"], ["ppo.advantage_normalization", "'batch'"]),
        (["ppo.num_minibatches=3"], ["ppo.num_minibatches", "3", "512"]),
        (["total_env_steps=100"], ["total_env_steps", "100", "512"]),
        (["env.reset_ratio=2"], ["env.reset_ratio", "Craftax"]),
        (["env.id=NoSuchEnv-v0"], ["env.id", "NoSuchEnv-v0", "nnxrl envs` lists the ids"]),
        (["logging.updates_per_chunk=5"], ["logging.updates_per_chunk", "976"]),
        (["ppo=3"], ["ppo", "mapping"]),
    ],
)
def test_bad_values_name_the_key(override, names):
    """Refused when read, or (env ids and their options) where the run is assembled."""
    with pytest.raises(C.ConfigError) as err:
        C.check_parts(C.load(CARTPOLE, override))
    for name in names:
        assert name in str(err.value), (name, str(err.value))


def test_reset_ratio_must_divide_num_envs():
    with pytest.raises(C.ConfigError, match=r"env.reset_ratio: 5 does not divide env.num_envs"):
        C.load("configs/ppo-craftax-classic-symbolic.yaml", ["env.reset_ratio=5"])


def test_missing_file_and_bad_override_syntax():
    with pytest.raises(C.ConfigError, match="does not exist"):
        C.load("configs/nope.yaml")
    with pytest.raises(C.ConfigError, match="KEY=VALUE"):
        C.load(CARTPOLE, ["ppo.learning_rate"])


def test_resolved_config_round_trips(tmp_path):
    cfg = C.load(CARTPOLE, ["ppo.ent_coef=0.02"])
    (tmp_path / "config.yaml").write_text(C.saved_yaml(cfg))
    assert C.load(tmp_path / "config.yaml") == cfg


def test_every_key_is_documented():
    rows = C.describe()
    assert len(rows) > 20 and all(doc for _, _, doc in rows)
