"""What nnxrl tells a person to type next (nnxrl.hints): the close names of a mistyped
one, from every lookup, a few at a time, and commands that paste into the shell
nnxrl was started from."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from nnxrl.cli import main
from nnxrl.hints import bytecode_tip, command, did_you_mean


def test_a_hint_pastes_into_the_shell_nnxrl_was_started_from(monkeypatch):
    """`uv run` starts nnxrl from a shell without it on PATH; an activated environment
    has it."""
    monkeypatch.setenv("UV_RUN_RECURSION_DEPTH", "1")
    assert command("eval runs/x") == "uv run nnxrl eval runs/x"
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH")
    assert command("eval runs/x") == "nnxrl eval runs/x"
    assert did_you_mean("trian", ["train", "eval"]) == "did you mean train?"
    assert did_you_mean("cartpol", ["cartpole", "cartpole-v1", "ant"], n=3) == (
        "did you mean cartpole or cartpole-v1?"
    )
    assert did_you_mean("zzz", ["train"]) == ""


def test_where_python_writes_no_bytecode_the_tip_pastes_and_then_goes(tmp_path, monkeypatch):
    """PYTHONDONTWRITEBYTECODE and a package without bytecode: the tip's command (pip's
    environment: compileall on the packages' folder; under uv: uv sync) gives the
    package its bytecode, after which there is no tip; none where Python writes it."""
    package = tmp_path / "site packages" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("x = 1\n")
    module = str(package / "__init__.py")
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH", raising=False)
    assert bytecode_tip(False, module) is None
    tip = bytecode_tip(True, module)
    assert tip is not None and "PYTHONDONTWRITEBYTECODE" in tip
    fix = shlex.split(tip.split("once: ")[1])
    assert fix[:4] == ["python", "-m", "compileall", "-q"], fix
    subprocess.run([sys.executable, *fix[1:]], check=True)
    assert bytecode_tip(True, module) is None
    (package / "__pycache__").rename(tmp_path / "gone")
    monkeypatch.setenv("UV_RUN_RECURSION_DEPTH", "1")
    assert bytecode_tip(True, module).endswith("once: uv sync --inexact --compile-bytecode")


def refused(capsys, args: list[str]) -> str:
    """stderr of a command that must be refused with exit status 2."""
    try:
        status = main(args)
    except SystemExit as e:  # argparse's own refusals
        status = e.code
    assert status == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["trian", "ppo-cartpole"], "invalid choice: 'trian' (choose from"),
        (["plot", "runs/x", "--statistic", "meen"], "did you mean mean?"),
        (["train", "ppo-cartpol"], "did you mean ppo-cartpole, "),
        (["train", "ppo-cartpole", "--set", "env.id=CartPol-v1"], "did you mean CartPole-v1"),
        (["train", "ppo-cartpole", "--set", "env.id=navix:Navix-Empty-5x5"], "Navix-Empty-5x5-v0"),
        (["envs", "--suite", "navx"], "--suite: no suite 'navx'; did you mean navix?"),
    ],
)
def test_a_mistyped_name_gets_the_close_ones_and_where_to_list_them(
    capsys, monkeypatch, args, said
):
    """Commands, choices, shipped configs, env ids and suites: the closest few and the
    command that lists all of them, never hundreds of names."""
    monkeypatch.setenv("UV_RUN_RECURSION_DEPTH", "1")
    err = refused(capsys, args)
    assert said in err, err
    assert "did you mean" in err and len(err) < 400, err
    if args[0] == "train":  # a name lookup says which command lists the names
        assert "`uv run nnxrl configs` lists" in err or "`uv run nnxrl envs" in err, err


def test_envs_lists_the_ids_by_suite_with_the_extra_each_needs(capsys):
    assert main(["envs"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("gymnax (26 ids)\n  CartPole-v1, ")
    assert "\nbrax (extra brax, " in said and "brax:inverted_pendulum" in said
    assert "\nmemory (2 ids)\n  RepeatPrevious-v0, StatelessCartPole-v1" in said
    assert main(["envs", "--suite", "navix"]) == 0
    navix = capsys.readouterr().out
    assert navix.startswith("navix (extra navix, ") and "navix:Navix-Empty-5x5-v0" in navix
    assert "gymnax" not in navix


def test_importing_brax_prints_nothing_of_its_dependencies():
    """MuJoCo's optional GPU backend prints `Failed to import warp` on import."""
    pytest.importorskip("brax")
    code = "from nnxrl.envs.brax_env import brax_ids; print(len(brax_ids()))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().isdigit() and "warp" not in done.stdout + done.stderr, done


def test_an_abbreviation_finds_the_name_it_stands_for_first():
    from nnxrl.hints import closest

    keys = ["learning_rate", "anneal_lr", "ent_coef", "gamma"]
    assert closest("lr", keys)[0] == "learning_rate"  # its initials
    assert closest("ent", keys)[0] == "ent_coef"  # its start
    assert closest("gamma", keys) == ["gamma"] and closest("xyz", keys) == []


def test_a_value_pasted_whole_is_cut_in_a_message():
    from nnxrl.hints import cut_long_words

    said = cut_long_words(f"unknown id 'x{'y' * 100_000}z'; did you mean CartPole-v1?", 200)
    assert said.startswith("unknown id 'xyy") and said.endswith("yyz'; did you mean CartPole-v1?")
    assert "...(99,805 characters)..." in said and len(said) < 300
