"""JAX's persistent compilation cache: a second run of a config compiles nothing, trains
identically, and the cache can be moved or switched off."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from nnxrl import config as config_lib
from nnxrl.run.compile_cache import default_cache_dir

ROOT = Path(__file__).resolve().parent.parent
CARTPOLE = str(ROOT / "configs/ppo-cartpole.yaml")
TINY = ["total_env_steps=2048", "ppo.num_steps=16", "network.width=16", "logging.backends=[]"]
PROGRAMS = ("jit_init_seeds", "jit_train_chunk")


def train(out: Path, overrides: list[str]) -> str:
    """``nnxrl train`` in a fresh process with JAX's compile log on; its stderr."""
    sets = sum((["--set", s] for s in TINY + overrides), [])
    cmd = [sys.executable, "-m", "nnxrl.cli", "train", CARTPOLE, "--out", str(out), *sets]
    env = {**os.environ, "JAX_LOG_COMPILES": "1", "JAX_EXPLAIN_CACHE_MISSES": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr


def compiled(log: str) -> list[str]:
    """The programs XLA compiled, in order."""
    marker = "Finished XLA compilation of "
    return [line.split(marker)[1].split(" ")[0] for line in log.splitlines() if marker in line]


def test_a_second_run_reads_both_programs_from_the_cache_and_trains_identically(tmp_path):
    cache = tmp_path / "cache"
    cold = train(tmp_path / "cold", [f"compile_cache.dir={cache}"])
    # nothing but init and the chunk compiles before training (no small eager ops;
    # importing gymnax converts one constant array, which is its own)
    programs = compiled(cold)
    before_training = programs[: programs.index("jit(train_chunk)") + 1]
    assert [p for p in before_training if p != "jit(convert_element_type)"] == [
        "jit(init_seeds)",
        "jit(train_chunk)",
    ], programs
    assert before_training.count("jit(convert_element_type)") <= 1, programs
    entries = sorted(p.name.split("-")[0] for p in cache.iterdir())
    assert entries == list(PROGRAMS)
    warm = train(tmp_path / "warm", [f"compile_cache.dir={cache}"])
    for name in PROGRAMS:
        assert f"PERSISTENT COMPILATION CACHE MISS for '{name}'" in cold
        assert f"Persistent compilation cache hit for '{name}'" in warm
        assert f"MISS for '{name}'" not in warm
    metrics = [(tmp_path / run / "metrics.jsonl").read_bytes() for run in ("cold", "warm")]
    assert metrics[0] == metrics[1]


def test_switched_off_it_writes_nothing_and_an_unwritable_folder_is_skipped(tmp_path):
    cache = tmp_path / "cache"
    log = train(tmp_path / "off", [f"compile_cache.dir={cache}", "compile_cache.enabled=false"])
    assert not cache.exists() and "cache hit" not in log
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    log = train(tmp_path / "blocked", [f"compile_cache.dir={blocker / 'cache'}"])
    assert f"compile cache {blocker / 'cache'} cannot be used" in log
    assert "compile_cache.enabled=false" in log  # says what to do
    assert (tmp_path / "blocked" / "metrics.jsonl").exists()


def test_the_default_folder_is_per_user_and_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "nnxrl" / "jax"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "nnxrl" / "jax"


def test_its_keys_are_validated_and_may_change_on_resume():
    config = config_lib.load(CARTPOLE, ["compile_cache.min_compile_seconds=0.5"])
    assert config.compile_cache.min_compile_seconds == 0.5
    try:
        config_lib.load(CARTPOLE, ["compile_cache.enable=false"])
    except config_lib.ConfigError as e:
        assert "compile_cache.enable" in str(e) and "enabled" in str(e)
    else:
        raise AssertionError("a misspelt key was accepted")
