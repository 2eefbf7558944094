"""The README's `mlflow ui` command works after the two set-up commands: the UI serves
its front page and lists two runs of the shared store through its REST API; where a
headless Chromium is installed, it draws the two runs compared in one chart."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from nnxrl import config as C
from nnxrl.logging.jsonl import read_records
from nnxrl.run.training import run_training

ROOT = Path(__file__).resolve().parents[1]
TINY = [
    "total_env_steps=2048",
    "ppo.num_steps=32",
    "num_seeds=2",
    "logging.backends=[mlflow]",
    "fast_compile=true",
]
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url: str, body: dict | None = None) -> tuple[int, str]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if body is not None else {}
    request = urllib.request.Request(url, data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, response.read().decode()


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    """Two runs in runs/, and the UI the README starts on them."""
    runs = tmp_path_factory.mktemp("ui") / "runs"
    for name, lr in (("lr-2.5e-4", "0.00025"), ("lr-1e-3", "0.001")):
        config = C.load("configs/ppo-cartpole.yaml", [*TINY, f"ppo.learning_rate={lr}"])
        run_training(config, runs / name, quiet=True)
    port = free_port()
    uv = shutil.which("uv")
    ui_args = ["ui", "--workers", "1", "--backend-store-uri", f"sqlite:///{runs}/mlflow.db"]
    ui_args += ["--host", "127.0.0.1", "--port", str(port)]
    if uv is not None:  # the README's command
        command = [uv, "run", "--extra", "ui", "mlflow", *ui_args]
    else:
        command = [sys.executable, "-m", "mlflow", *ui_args]
    log = runs.parent / "ui.log"
    server = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 180
    try:
        while True:
            try:
                fetch(base + "/health")
                break
            except OSError:
                if server.poll() is not None or time.time() > deadline:
                    said = log.read_text()[-3000:]
                    raise AssertionError(f"the MLflow UI did not start: {said}") from None
                time.sleep(1.0)
        yield base, runs
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def test_the_ui_serves_its_page_and_both_runs(ui):
    base, runs = ui
    status, page = fetch(base + "/")
    assert status == 200 and "<title>MLflow</title>" in page
    status, text = fetch(
        base + "/api/2.0/mlflow/experiments/get-by-name?experiment_name=nnxrl-CartPole-v1"
    )
    experiment = json.loads(text)["experiment"]
    tags = {t["key"]: t["value"] for t in experiment["tags"]}
    assert tags["mlflow.experimentKind"] == "custom_model_development"
    view = json.loads(tags["mlflow.sharedViewState.nnxrl"])  # the page ui_url opens
    assert view["selectedColumns"][:2] == [
        "metrics.`episode_return_window`",
        "metrics.`episode_return`",
    ]
    status, text = fetch(
        base + "/api/2.0/mlflow/runs/search", {"experiment_ids": [experiment["experiment_id"]]}
    )
    found = json.loads(text)["runs"]
    assert sorted(r["info"]["run_name"] for r in found) == ["lr-1e-3", "lr-2.5e-4"]
    for run in found:
        run_tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
        assert run_tags["nnxrl.algo"] == "ppo" and run_tags["nnxrl.env"] == "CartPole-v1"
        query = urllib.parse.urlencode(
            {"run_id": run["info"]["run_id"], "metric_key": "loss/total"}
        )
        _, text = fetch(base + "/api/2.0/mlflow/metrics/get-history?" + query)
        served = sorted((m["step"], m["value"]) for m in json.loads(text)["metrics"])
        aggregates = [
            json.loads(line)
            for line in (runs / run["info"]["run_name"] / "metrics_aggregate.jsonl")
            .read_text()
            .splitlines()
        ]
        expected = [(a["env_steps"], a["loss/total/mean"]) for a in aggregates]
        np.testing.assert_allclose(served, expected, rtol=1e-6)


def test_a_browser_draws_the_two_runs_compared(ui, tmp_path):
    browser = next((b for b in map(shutil.which, BROWSERS) if b), None)
    if browser is None:
        pytest.skip("no headless Chromium installed (the HTTP checks above still ran)")
    from PIL import Image

    base, runs = ui
    run_ids = [(runs / n / "mlflow_run_id").read_text().strip() for n in ("lr-2.5e-4", "lr-1e-3")]
    shot = tmp_path / "compare.png"
    _, text = fetch(
        base + "/api/2.0/mlflow/experiments/get-by-name?experiment_name=nnxrl-CartPole-v1"
    )
    experiment_id = json.loads(text)["experiment"]["experiment_id"]
    url = compare_url(base, experiment_id, run_ids, "episode_return_window")
    subprocess.run(
        [browser, "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1300,760"]
        + ["--virtual-time-budget=20000", f"--screenshot={shot}", url],
        capture_output=True,
        timeout=120,
        check=True,
    )
    with Image.open(shot) as image:
        assert image.size == (1300, 760)
        colors = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert len(colors) > 500  # a drawn page (text, chart lines), not a blank one


def test_the_page_a_run_points_to_opens_on_its_runs_as_model_training(ui):
    """MLflow 3's UI opens an experiment in its GenAI mode (an LLM-usage "Overview",
    a "Detect Issues" pop-up) whatever its tag; the page nnxrl prints opens its runs."""
    browser = next((b for b in map(shutil.which, BROWSERS) if b), None)
    if browser is None:
        pytest.skip("no headless Chromium installed (the HTTP checks above still ran)")
    from nnxrl.logging.mlflow_tracker import ui_instructions, ui_url

    base, runs = ui
    said = ui_instructions(runs / "lr-1e-3")
    _, text = fetch(
        base + "/api/2.0/mlflow/experiments/get-by-name?experiment_name=nnxrl-CartPole-v1"
    )
    experiment_id = json.loads(text)["experiment"]["experiment_id"]
    assert said.endswith(f"then open {ui_url(experiment_id)}") and "sqlite:///" in said
    port = int(base.rsplit(":", 1)[1])
    page = rendered_text(browser, ui_url(experiment_id, port=port))
    assert "Runs" in page and "lr-1e-3" in page and "lr-2.5e-4" in page, page[:600]
    assert "2 matching runs" in page and "Detect Issues" not in page and "Overview" not in page
    # the return, the rate and what tells runs apart are columns, each run's value shown
    for column in ("episode_return_window", "episode_return", "perf/sps", "env.id", "algo"):
        assert f" {column} " in page, page[:1500]
    for name in ("lr-1e-3", "lr-2.5e-4"):
        last = read_records(runs / name / "metrics_aggregate.jsonl")[-1]
        assert repr(last["episode_return_window/mean"]) in page, (name, last, page[:1500])


def rendered_text(browser: str, url: str) -> str:
    """The page's text once its scripts have run (styles and tags dropped)."""
    import re

    done = subprocess.run(
        [
            browser,
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=20000",
            "--window-size=1900,900",  # wide enough for the table's columns to be drawn
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    html = re.sub(r"<style.*?</style>", " ", done.stdout, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def compare_url(base: str, experiment_id: str, run_ids: list[str], metric: str) -> str:
    """MLflow's page plotting ``metric`` and its across-seed range for several runs."""
    keys = [metric, f"{metric}/min", f"{metric}/max"]
    query = "&".join(
        [
            f"runs={json.dumps(run_ids)}",
            f"metric={urllib.parse.quote(json.dumps(metric))}",
            f"experiments={json.dumps([experiment_id])}",
            f"plot_metric_keys={urllib.parse.quote(json.dumps(keys))}",
            "plot_layout={}&x_axis=step&y_axis_scale=linear&line_smoothness=1",
            "show_point=false&deselected_curves=[]&last_linear_y_axis_range=[]",
            "workflowType=machine_learning",
        ]
    ).replace(" ", "")
    return f"{base}/#/metric/{urllib.parse.quote(metric, safe='')}?{query}"
