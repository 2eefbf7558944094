"""The README and docs/ stay true: the config reference is what the schema generates,
every command and config group has its place in the README, and every local link
resolves."""

from __future__ import annotations

import dataclasses
import re
import shlex
import subprocess
import sys
import typing
from pathlib import Path

from nnxrl import config as config_lib
from nnxrl.cli.parser import build_parser
from nnxrl.config.reference import reference

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()


def test_the_committed_config_reference_is_what_the_schema_generates():
    """In a process of its own: other tests register algorithms and kinds of theirs."""
    generated = subprocess.run(
        [sys.executable, "-m", "nnxrl.config.reference"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    committed = (ROOT / "docs/config.md").read_text()
    assert committed == generated, (
        "docs/config.md is out of date: uv run python -m nnxrl.config.reference > docs/config.md"
    )


def test_the_reference_documents_every_key_of_every_registered_algorithm():
    text = reference()
    for key, _, _ in config_lib.describe():
        assert f"| `{key}` |" in text, key


def test_the_readme_is_short_and_shows_every_command():
    assert len(README.splitlines()) <= 200
    commands = build_parser()._subparsers._group_actions[0].choices
    for command in commands:
        assert re.search(rf"nnxrl (--plugin \S+ )?{command}\b", README), command


def test_the_readme_names_every_config_group():
    hints = typing.get_type_hints(config_lib.Config)
    for f in dataclasses.fields(config_lib.Config):
        if dataclasses.is_dataclass(hints[f.name]):
            assert f"| `{f.name}` |" in README, f.name
        elif "tag" not in f.metadata:
            assert f"`{f.name}`" in README, f.name


def test_every_local_link_resolves():
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#]+)\)", page.read_text()):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.name}: {target}"


def test_the_readmes_extend_it_section_shows_the_examples_as_they_are():
    """Each code line of the README's "Extend it" block (not a comment, not "...")
    is a line of the example file the block's comment above it names."""
    section = README.split("## Extend it", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    missing, source = [], None
    for line in block.splitlines():
        named = re.match(r"# (examples/\w+\.py):", line)
        if named:
            source = {x.strip() for x in (ROOT / named.group(1)).read_text().splitlines()}
        elif line.strip() not in ("", "...") and line.strip() not in (source or set()):
            missing.append(line)
    assert source is not None and missing == []


def test_the_readmes_python_api_block_runs_as_written(tmp_path, monkeypatch):
    """The block, executed as a newcomer pastes it, in a scratch folder: every file a
    line reads was written by a line before it."""
    section = README.split("## Python API", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md (Python API)", "exec"), {})
    assert (tmp_path / "runs/cartpole/policy/policy.yaml").is_file()
    assert (tmp_path / "episode.gif").stat().st_size > 0
    assert (tmp_path / "curves.png").stat().st_size > 0


# The tour's train commands at tiny sizes, by the config they name (appended to the
# line's own --set, so they win); a config the tour gains needs its line here.
TINY_WIDTH = ["network.width=16", "fast_compile=true", "logging.backends=[]"]
TOUR_TINY = {
    "ppo-cartpole": ["total_env_steps=2048", "ppo.num_steps=16", *TINY_WIDTH],
    "pqn-cartpole": ["total_env_steps=2048", "pqn.num_steps=16", *TINY_WIDTH],
    "pbt-ppo-cartpole": ["total_env_steps=1280", "ppo.num_steps=16", "num_seeds=2", *TINY_WIDTH],
    "runs/pbt/best_schedule.yaml": [],  # the PBT run's own (tiny) settings
    "ppo-craftax-classic-symbolic": [
        *["total_env_steps=768", "env.num_envs=8", "env.reset_ratio=4", "ppo.num_steps=8"],
        *["ppo.num_minibatches=2", "ppo.num_epochs=1", *TINY_WIDTH],
    ],
    "examples/a2c-cartpole.yaml": ["total_env_steps=1024", *TINY_WIDTH],
}


def tour_commands() -> list[list[str]]:
    """The README tour's commands, each as nnxrl's arguments."""
    section = README.split("## A tour of the command line", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    commands = []
    for line in block.splitlines():
        code = "" if line.startswith("#") else line.split(" #", 1)[0].strip()
        for command in re.split(r"\s*(?:&&|;)\s*(?=uv run)", code) if code else ():
            words = shlex.split(command)
            assert words[:3] == ["uv", "run", "nnxrl"], line
            commands.append(words[3:])
    return commands


def test_the_readmes_tour_runs_as_written_at_tiny_sizes(tmp_path, monkeypatch, capsys):
    """Every command of the tour, in order, in a scratch folder beside the checkout's
    examples: each path a command reads was written by one before it."""
    from nnxrl.cli import main

    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    for args in tour_commands():
        if "train" in args and "--resume" not in args:
            config = args[args.index("train") + 1]
            args = args + [x for o in TOUR_TINY[config] for x in ("--set", o)]
        if "--episodes" in args:  # a tiny policy plays few episodes
            args[args.index("--episodes") + 1] = "2"
        if args[0] in ("eval", "render"):  # compiled as the tiny runs' programs are
            args = [*args, "--fast-compile"]
        status = 130 if "--stop-after" in args else 0
        assert main(args) == status, (args, capsys.readouterr())
    for made in ("runs/craftax/policy", "policies/ppo", "episode.gif", "curves.png", "compare"):
        assert (tmp_path / made).exists(), made
