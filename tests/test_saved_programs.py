"""store/saved_programs.py: compiled programs kept on disk under a key of the config, the
code and the devices. A hit loads without compiling and computes the same; a missing,
stale or corrupt entry compiles again, says so in one line and never runs what is
stale; JAX's persistent cache stays the second level."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cli_runs import train_logged
from disks import fill, mount_tmpfs, unmount

from nnxrl import config as config_lib
from nnxrl.store import saved_programs
from nnxrl.store.saved_programs import SavedPrograms

ROOT = Path(__file__).resolve().parent.parent
CARTPOLE = str(ROOT / "configs/ppo-cartpole.yaml")
X = jnp.arange(8.0)


def store(tmp_path: Path) -> SavedPrograms:
    """Where a config's programs would be kept, keyed by the code as it is now."""
    return SavedPrograms(tmp_path / "programs", saved_programs.digest(saved_programs.code_facts()))


def never() -> None:
    raise AssertionError("compiled although the program was saved")


def test_a_saved_program_is_loaded_without_compiling_and_computes_the_same(tmp_path):
    fresh = store(tmp_path).compiled(
        "f", lambda: jax.jit(lambda x: jnp.sin(x) * 3).lower(X).compile()
    )
    loaded = store(tmp_path).compiled("f", never)
    np.testing.assert_array_equal(np.asarray(loaded(X)), np.asarray(fresh(X)))
    assert store(tmp_path).need("f") is None and loaded is not fresh


def test_a_corrupt_entry_is_said_compiled_again_and_rewritten(tmp_path, capsys):
    program = jax.jit(lambda x: x * 2 + 1).lower(X).compile()
    store(tmp_path).compiled("f", lambda: program)
    (entry,) = (tmp_path / "programs").glob("*-f")
    entry.write_bytes(entry.read_bytes()[:1000])  # truncated, as by a full disk
    again = store(tmp_path).compiled("f", lambda: jax.jit(lambda x: x * 2 + 1).lower(X).compile())
    err = capsys.readouterr().err
    assert f"the saved f program {entry} could not be loaded" in err and "compiling it" in err
    np.testing.assert_array_equal(np.asarray(again(X)), np.asarray(X * 2 + 1))
    np.testing.assert_array_equal(np.asarray(store(tmp_path).compiled("f", never)(X)), X * 2 + 1)


def test_another_jax_version_or_device_set_is_another_key(tmp_path, monkeypatch, capsys):
    store(tmp_path).compiled("f", lambda: jax.jit(lambda x: x + 1).lower(X).compile())
    facts = saved_programs.code_facts()
    for change in ({"jax": "0.0.1"}, {"devices": facts["devices"][:1] + [[9, "cpu", "x"]]}):
        monkeypatch.setattr(saved_programs, "code_facts", lambda change=change: {**facts, **change})
        program = store(tmp_path).compiled("f", lambda: jax.jit(lambda x: x + 2).lower(X).compile())
        assert "saved by other code" in capsys.readouterr().err
        np.testing.assert_array_equal(np.asarray(program(X)), np.asarray(X + 2))


def test_an_edited_user_module_is_a_recompile_never_the_stale_program(tmp_path, monkeypatch):
    """A registered component lives in the user's own module: its source is in the key."""
    module = tmp_path / "user_scale.py"
    monkeypatch.syspath_prepend(str(tmp_path))
    module.write_text("SCALE = 3.0\n")
    import user_scale

    def compile_scaled():
        return jax.jit(lambda x: x * user_scale.SCALE).lower(X).compile()

    assert float(store(tmp_path).compiled("f", compile_scaled)(X)[1]) == 3.0
    assert float(store(tmp_path).compiled("f", never)(X)[1]) == 3.0
    module.write_text("SCALE = 5.0\n")
    importlib.reload(user_scale)
    assert float(store(tmp_path).compiled("f", compile_scaled)(X)[1]) == 5.0


def test_the_same_code_in_another_folder_is_the_same_key_and_an_edit_is_not(tmp_path):
    """A fresh clone of the same commit loads what another clone saved: the key holds
    the source's text and its path within the package, not the folder it lies in."""
    package = Path(saved_programs.__file__).resolve().parents[1]
    one, two = tmp_path / "one" / "nnxrl", tmp_path / "two" / "nnxrl"
    for copy in (one, two):
        shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    same = saved_programs.source_digest(one)
    assert saved_programs.source_digest(two) == same
    edited = two / "ops" / "gae.py"
    edited.write_text(edited.read_text() + "\n# an edit\n")
    assert saved_programs.source_digest(two) != same
    moved = one / "ops" / "gae.py"
    moved.rename(moved.with_name("gae_renamed.py"))  # the same text as another module
    assert saved_programs.source_digest(one) != same


def test_the_key_ignores_traced_values_and_host_settings_but_not_shapes():
    def key(*overrides):
        config = config_lib.load(CARTPOLE, list(overrides))
        return saved_programs.digest(saved_programs.program_config(config))

    base = key()
    assert key("ppo.learning_rate=1e-3", "seed=7", "logging.backends=[]") == base
    assert key("checkpoint.keep=9", "evaluation.every_updates=0") == base
    assert key("env.num_envs=8") != base and key("num_seeds=2") != base
    assert key("logging.updates_per_chunk=8") != base


def test_off_where_jaxs_cache_is_off_or_asked_or_in_a_notebook(tmp_path, monkeypatch):
    config = config_lib.load(CARTPOLE, ["compile_cache.save_programs=false"])
    assert saved_programs.saved_programs(config, tmp_path).folder is None
    assert saved_programs.saved_programs(config_lib.load(CARTPOLE), None).folder is None
    # a script (a test worker's main module may be a string run with -c)
    monkeypatch.setattr(sys.modules["__main__"], "__file__", "train.py", raising=False)
    assert saved_programs.saved_programs(config_lib.load(CARTPOLE), tmp_path).folder is not None
    monkeypatch.delattr(sys.modules["__main__"], "__file__")  # cells are in no file
    assert saved_programs.saved_programs(config_lib.load(CARTPOLE), tmp_path).folder is None


def traced(log: str) -> list[str]:
    """The run's own programs JAX traced (init and the chunk)."""
    return [
        name for name in ("init_seeds", "train_chunk") if f"Finished tracing {name} for jit" in log
    ]


@pytest.mark.parametrize("level", ["saved programs", "jax's cache"])
def test_a_repeated_run_starts_from_the_cache_and_trains_identically(tmp_path, level):
    """First level: the executables themselves, nothing traced. Second (saving off):
    JAX's persistent cache, traced but not compiled."""
    cache = [f"compile_cache.dir={tmp_path / 'cache'}"]
    if level == "jax's cache":
        cache.append("compile_cache.save_programs=false")
    cold = train_logged(tmp_path / "cold", cache)
    warm = train_logged(tmp_path / "warm", cache)
    assert traced(cold) == ["init_seeds", "train_chunk"]
    if level == "saved programs":
        entries = sorted(
            p.name.split("-", 1)[1] for p in (tmp_path / "cache/programs").rglob("*-*")
        )
        assert entries == ["chunk-1", "init"], entries
        assert traced(warm) == []
        assert "\ncompiled in " in cold and "\nloaded the compiled programs in " in warm
        assert "\ncompiled in " not in warm
    else:
        assert not (tmp_path / "cache/programs").exists()
        assert traced(warm) == ["init_seeds", "train_chunk"]
        for name in ("jit_init_seeds", "jit_train_chunk"):
            assert f"Persistent compilation cache hit for '{name}'" in warm
    metrics = [(tmp_path / run / "metrics.jsonl").read_bytes() for run in ("cold", "warm")]
    assert metrics[0] == metrics[1]
    assert json.loads(metrics[1].splitlines()[-1])["update"] == 32


def test_entries_of_other_code_are_pruned_to_the_newest_two(tmp_path):
    folder = tmp_path / "programs"
    folder.mkdir()
    for age, code in enumerate(["old", "older", "newer", "newest"]):
        (folder / f"{code}-f").write_bytes(b"x")
        os.utime(folder / f"{code}-f", (1000 + age, 1000 + age))
    store(tmp_path).compiled("f", lambda: jax.jit(lambda x: x + 1).lower(X).compile())
    left = sorted(p.name for p in folder.glob("*-f"))
    assert left == sorted([f"{store(tmp_path).code}-f", "newer-f", "newest-f"]), left


def test_a_folder_that_cannot_be_written_is_said_and_the_run_goes_on(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    saved = SavedPrograms(blocker / "programs", "code")
    program = saved.compiled("f", lambda: jax.jit(lambda x: x * 4).lower(X).compile())
    np.testing.assert_array_equal(np.asarray(program(X)), np.asarray(X * 4))
    assert f"the f program could not be saved in {blocker / 'programs'}" in capsys.readouterr().err


def test_a_full_disk_is_said_leaves_no_part_file_and_the_run_goes_on(tmp_path, capsys):
    disk = tmp_path / "disk"
    mount_tmpfs(disk, "size=1m")
    try:
        fill(disk)
        saved = SavedPrograms(disk / "programs", "code")
        program = saved.compiled("f", lambda: jax.jit(lambda x: x * 5).lower(X).compile())
        np.testing.assert_array_equal(np.asarray(program(X)), np.asarray(X * 5))
        err = capsys.readouterr().err
        assert "the f program could not be saved" in err and "No space left" in err
        assert list((disk / "programs").iterdir()) == []
    finally:
        unmount(disk)


def test_the_key_holds_the_distributions_a_program_imports_not_every_installed_extra():
    """Installing an extra (uv sync --extra suites) keeps CartPole's saved programs;
    an env of that extra keys on it."""
    from nnxrl.store.saved_programs import env_distributions, used_distributions

    def names(env_id: str) -> set[str]:
        return {d.split("==")[0] for d in used_distributions(env_distributions(env_id))}

    cartpole = names("CartPole-v1")
    assert {"nnxrl", "jax", "jaxlib", "flax", "optax", "flashbax", "gymnax", "craftax"} <= cartpole
    assert not cartpole & {"brax", "jumanji", "xminigrid", "navix", "pgx", "mlflow", "pytest"}
    for env_id, extra in [("brax:ant", "brax"), ("navix:Navix-Empty-5x5-v0", "navix")]:
        if importlib.util.find_spec(extra) is not None:
            assert extra in names(env_id) and cartpole < names(env_id)


def test_a_save_killed_mid_write_leaves_no_entry_and_its_part_is_cleared(tmp_path):
    """A save writes a part file and renames it when whole, so a SIGKILL mid-write
    leaves only the part: the next run compiles (no entry to load), saves, and deletes
    a part untouched for 10 minutes, keeping a younger one (another process's save
    under way)."""
    folder = tmp_path / "programs"
    folder.mkdir()
    name = f"{saved_programs.digest(saved_programs.code_facts())}-f"
    killed, writing = folder / f".{name}.123.part", folder / f".{name}.456.part"
    for part in (killed, writing):
        part.write_bytes(b"\x80\x04 half a program")
    old = killed.stat().st_mtime - 3600
    os.utime(killed, (old, old))
    compiled = []
    program = store(tmp_path).compiled(
        "f", lambda: compiled.append(1) or jax.jit(lambda x: x - 1).lower(X).compile()
    )
    assert compiled and (folder / name).is_file()
    np.testing.assert_array_equal(np.asarray(program(X)), np.asarray(X - 1))
    assert not killed.exists() and writing.exists()
