"""MLflow backend, the default tracker.

Unless ``logging.mlflow_tracking_uri`` names another, every run uses one SQLite
store shared with the runs beside it: ``<out>/../mlflow.db`` (``runs/mlflow.db`` for
the default ``runs/<config>-<time>``), so ``mlflow ui --backend-store-uri
sqlite:///runs/mlflow.db`` lists and compares them all; artifacts go to
``<out>/../mlartifacts/<run id>``. The experiment is marked as model training (MLflow
3 would otherwise open it as a GenAI experiment) and shares a view of its runs table
with the return among the columns (``ui_url`` opens it); each run is tagged with
``nnxrl.algo``, ``nnxrl.env``, ``nnxrl.version``, ``nnxrl.run.run_dir`` and ``git.commit``.

Metrics, at step ``env_steps`` (per seed), every k-th update and the last
(``logging.tracker_points``): each metric's mean across seeds as ``<name>``, and with
more than one seed its spread as ``<name>/std``, ``/min``, ``/max`` (one chart
section per metric) and each seed's series as ``seed_<i>/<name>``; ``perf/sps``. The
resolved config is logged as flattened params and as an artifact. The run ends
FINISHED, KILLED or FAILED.

A sweep is a parent run (the config, ``perf/sps``) with one child run per setting
(``mlflow.parentRunId``; named ``<run>/setting_<k>``, tagged ``nnxrl.setting``, the
setting's values as params) holding that setting's series as above; the UI nests
them and compares the children. A PBT sweep, whose settings are only where its
members started, has a child run per member instead (``<run>/seed_<i>/member_<k>``,
tagged ``nnxrl.seed`` and ``nnxrl.setting``, its starting values as params) holding
that member's own series, ``hp/<key>`` (the values it trained with, changing as it
copies and explores) and ``pbt/donor`` among them. Their ids are kept in
``<out>/mlflow_child_runs.json``.

The run id is written to ``<out>/mlflow_run_id``; a resumed run continues that run
and skips the steps it already holds (a resumed run recomputes them exactly).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from nnxrl.hints import command
from nnxrl.logging.jsonl import batches_through
from nnxrl.logging.logger import brief
from nnxrl.logging.records import LogBatch, metric_items
from nnxrl.logging.run_info import is_logged, logged_updates
from nnxrl.store import own_files

_STATUS = {"finished": "FINISHED", "killed": "KILLED", "failed": "FAILED"}
# The runs table's columns on the page ``ui_url`` opens: the return, the rate and what
# tells runs apart. MLflow keeps a person's own columns in their browser, so a default
# can only come as a view the experiment shares (the UI's "Share" does the same).
VIEW_KEY = "nnxrl"
VIEW_COLUMNS = [
    "metrics.`episode_return_window`",
    "metrics.`episode_return`",
    "metrics.`perf/sps`",
    "params.`algo`",
    "params.`env.id`",
    "params.`num_seeds`",
    "params.`total_env_steps`",
]
EXPERIMENT_TAGS = {
    # MLflow 3's UI opens an experiment without this tag as a GenAI one (traces, tokens)
    "mlflow.experimentKind": "custom_model_development",
    f"mlflow.sharedViewState.{VIEW_KEY}": json.dumps({"selectedColumns": VIEW_COLUMNS}),
}
CHILDREN_FILE = "mlflow_child_runs.json"  # a sweep's setting -> child run id
LOCK_RETRY_SECONDS = 60.0  # runs sharing a SQLite store wait for each other's writes


def local_store_path(out_dir: str | Path) -> Path:
    """The SQLite store shared by the runs in ``out_dir``'s parent folder."""
    return Path(out_dir).resolve().parent / "mlflow.db"


def local_store_uri(out_dir: str | Path) -> str:
    """The URI of ``local_store_path(out_dir)``."""
    return local_store_uri_of(local_store_path(out_dir))


def ui_url(experiment_id: str, port: int = 5000, host: str = "127.0.0.1") -> str:
    """The MLflow UI's table of an experiment's runs, with the return as a column (the
    experiment's shared view ``VIEW_KEY``). ``workflowType=machine_learning`` opens it
    as model training: MLflow 3's UI starts in its GenAI mode (traces, an "Overview" of
    LLM usage) whatever the experiment's ``mlflow.experimentKind`` tag."""
    query = f"viewStateShareKey={VIEW_KEY}&workflowType=machine_learning"
    return f"http://{host}:{port}/#/experiments/{experiment_id}/runs?{query}"


def ui_instructions(out_dir: str | Path) -> str:
    """How to see a run in the MLflow UI: the command and the page to open."""
    store = local_store_path(out_dir)
    command = (
        f"uv run --extra ui mlflow ui --workers 1 --backend-store-uri {local_store_uri_of(store)}"
    )
    try:
        import mlflow

        run_id = (Path(out_dir) / "mlflow_run_id").read_text().strip()
        client = mlflow.MlflowClient(tracking_uri=local_store_uri_of(store))
        page = ui_url(client.get_run(run_id).info.experiment_id)
    except Exception:  # no run logged (the tracker failed): the command alone
        return f"see the runs in MLflow: {command}"
    return f"see the runs in MLflow: {command}, then open {page}"


def local_store_uri_of(path: Path) -> str:
    return f"sqlite:///{path.resolve().as_posix()}"


def store_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the store file, None when it is missing: a store deleted or
    replaced under a run shows as a change."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def check_sqlite_store(uri: str) -> None:
    """Fail at once when a SQLite store cannot be written (MLflow itself retries the
    connection 10 times with doubling waits, about 100 s, before it gives up)."""
    if not uri.startswith("sqlite:///"):
        return
    path = Path(uri[len("sqlite:///") :])
    try:
        if path.exists():
            with path.open("r+b"):
                pass
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            probe = path.parent / f".nnxrl-write-check-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
    except OSError as e:
        raise RuntimeError(
            f"the MLflow store {path} cannot be written ({e.strerror}); point "
            "logging.mlflow_tracking_uri at a writable place, or leave it unset"
        ) from None


def forget_engine(uri: str) -> None:
    """Drop what MLflow caches for ``uri`` for the life of the process (a database
    engine per URI, a store object per URI), so that a store replaced on disk is
    opened afresh. Both caches are private to MLflow: if they move, this does nothing."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
    from mlflow.tracking._tracking_service import utils

    engine = getattr(SqlAlchemyStore, "_engine_map", {}).pop(uri, None)
    if engine is not None:
        engine.dispose()
    cached = getattr(
        getattr(utils, "_tracking_store_registry", None), "_get_store_with_resolved_uri", None
    )
    if hasattr(cached, "cache_clear"):
        cached.cache_clear()


def flatten(data: dict, prefix: str = "") -> dict[str, Any]:
    """{"ppo": {"gamma": 0.99}} -> {"ppo.gamma": 0.99}"""
    out = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


# An unreachable tracking server is reported within seconds instead of minutes
# (MLflow's defaults retry 7 times with doubling waits); explicit settings win.
HTTP_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
}


class MlflowBackend:
    name = "mlflow"
    merges = True  # a backlog of chunks is written in as few log_batch calls as it takes

    def __init__(
        self,
        out_dir: str | Path,
        config_dict: dict,
        tracking_uri: str | None,
        experiment: str,
        run_name: str,
        run_id: str | None = None,
        start_update: int = 0,
        *,
        tags: dict[str, str] | None = None,
        num_seeds: int = 1,
        num_updates: int = 1,
        points: int = 200,
        sweep: bool = False,
        pbt: bool = False,
    ):
        self.out_dir = Path(out_dir).resolve()
        self.sweep = sweep  # one child run per setting
        self.pbt = pbt  # one child run per member instead
        self.num_seeds = num_seeds
        self.children: dict[int, str] = {}  # setting (PBT: member) -> child run id
        self.experiment_id: str | None = None
        self.local = tracking_uri is None  # the store shared by the runs beside this one
        self.store = local_store_path(out_dir)
        self.tracking_uri = tracking_uri or local_store_uri(out_dir)
        self.config_dict = config_dict
        self.experiment = experiment
        self.run_name = run_name
        self.run_id = run_id
        self.tags = tags or {}
        self.per_seed = num_seeds > 1  # one seed: its series is the mean
        self.num_updates = num_updates
        self.stride = logged_updates(num_updates, points)
        self.start_update = start_update  # a resumed run's records up to here exist
        self.skip_through = -1  # env_steps already in the run
        self.started = int(time.time() * 1000)  # the run's start (ms), before it compiles
        # a tracking server's: batches not yet sent, the first one's points by run as
        # far as sent, and since when it is unreachable (None: it answers)
        self.waiting: list[LogBatch] = []
        self.sending: dict[str, list] | None = None
        self.unreachable: float | None = None

    def open(self) -> None:
        import mlflow
        from mlflow.entities import Metric

        logging.getLogger("mlflow").setLevel(logging.WARNING)
        logging.getLogger("alembic").setLevel(logging.WARNING)
        # its tracebacks of a failed query: nnxrl says what failed in one line instead
        logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)
        logging.getLogger("urllib3").setLevel(logging.ERROR)
        for name, value in HTTP_DEFAULTS.items():
            os.environ.setdefault(name, value)
        self._metric_cls = Metric
        self._mlflow = mlflow
        check_sqlite_store(self.tracking_uri)
        if self.local:
            self._open_local_store()
        else:
            self.client = mlflow.MlflowClient(tracking_uri=self.tracking_uri)
        if self.local:
            self.store_id = store_identity(self.store)
        if not (self.run_id is not None and self._continue_run()):
            self._create_run()
        if self.start_update > 0:
            self._resend_records()  # all of them to a new run; to an old one what it lacks

    def _continue_run(self) -> bool:
        """Continue the run ``run_id`` (on resume); False when the store does not hold
        it (a run moved to another folder, or made before the store was shared)."""
        from mlflow.exceptions import MlflowException

        try:
            self._locked_retry(self.client.update_run, self.run_id, status="RUNNING")
        except MlflowException as e:
            if e.error_code != "RESOURCE_DOES_NOT_EXIST":
                raise
            print(
                f"nnxrl: the MLflow run {self.run_id} is not in {self.tracking_uri}; "
                "starting a new run there with the records of metrics.jsonl",
                file=sys.stderr,
                flush=True,
            )
            return False
        self.experiment_id = self.client.get_run(self.run_id).info.experiment_id
        logged_run = self.run_id
        if self.sweep:
            children_file = self.out_dir / CHILDREN_FILE
            if children_file.exists():
                saved = json.loads(children_file.read_text())
                self.children = {int(k): v for k, v in saved.items()}
            for child in self.children.values():
                self._locked_retry(self.client.update_run, child, status="RUNNING")
            logged_run = next(iter(self.children.values()), None)
        history = self.client.get_metric_history(logged_run, "episode_count") if logged_run else []
        self.skip_through = max((m.step for m in history), default=-1)
        return True

    def _open_local_store(self) -> None:
        """Use the shared store, or make it: a new store is initialised under a name of
        this process's own and linked into place only if none appeared meanwhile, so
        neither a kill nor a second run starting at the same moment leaves a half-made
        store. A store that cannot be opened is moved aside and made afresh."""
        if self.store.exists():
            try:
                self.client = self._mlflow.MlflowClient(tracking_uri=self.tracking_uri)
                self._locked_retry(self.client.search_experiments, max_results=1)
                return
            except Exception as e:
                self._move_aside(e)
        partial = self.store.with_name(f"mlflow.db.partial-{os.getpid()}")
        partial.unlink(missing_ok=True)
        partial_uri = local_store_uri_of(partial)
        self._mlflow.MlflowClient(tracking_uri=partial_uri).search_experiments(max_results=1)
        forget_engine(partial_uri)  # its connections would follow the file's new name
        try:
            os.link(partial, self.store)
        except FileExistsError:  # another run made it first: use theirs
            pass
        finally:
            partial.unlink(missing_ok=True)
        self.client = self._mlflow.MlflowClient(tracking_uri=self.tracking_uri)

    def _move_aside(self, error: Exception) -> None:
        forget_engine(self.tracking_uri)
        if self.store.exists():
            broken = self.store.with_name(f"mlflow.db.broken-{int(time.time())}")
            self.store.rename(broken)
            print(
                f"nnxrl: the MLflow store {self.store} could not be used ({brief(error)}); "
                f"moved it to {broken.name} and made a new one, re-sending the records of "
                "metrics.jsonl",
                file=sys.stderr,
                flush=True,
            )

    def _create_run(self) -> None:
        from mlflow.entities import Param

        self.experiment_id = experiment_id = self._experiment_id()
        run = self._locked_retry(
            self.client.create_run,
            experiment_id,
            start_time=self.started,
            run_name=self.run_name,
            tags=self.tags,
        )
        self.run_id = run.info.run_id
        self.children = {}  # a new parent has children of its own
        params = [Param(k, str(v)) for k, v in flatten(self.config_dict).items()]
        for i in range(0, len(params), 100):
            self._locked_retry(self.client.log_batch, self.run_id, params=params[i : i + 100])
        config_file = self.out_dir / "config.yaml"
        if config_file.exists():
            self._locked_retry(self.client.log_artifact, self.run_id, str(config_file))
        own_files.write_text(self.out_dir / "mlflow_run_id", self.run_id + "\n")

    def _experiment_id(self) -> str:
        """The experiment's id, made (as a model-training experiment) if it is new; its
        tags (``EXPERIMENT_TAGS``) set where they are missing or old."""
        from mlflow.exceptions import MlflowException

        found = self.client.get_experiment_by_name(self.experiment)
        if found is None:
            location = None
            if self.local:
                location = (self.store.parent / "mlartifacts").as_uri()
            try:
                return self._locked_retry(
                    self.client.create_experiment,
                    self.experiment,
                    artifact_location=location,
                    tags=EXPERIMENT_TAGS,
                )
            except MlflowException:  # another run made it at the same moment
                found = self.client.get_experiment_by_name(self.experiment)
                if found is None:
                    raise
        if not all(found.tags.get(k) == v for k, v in EXPERIMENT_TAGS.items()):
            for key, value in EXPERIMENT_TAGS.items():
                self._locked_retry(self.client.set_experiment_tag, found.experiment_id, key, value)
        return found.experiment_id

    def _resend_records(self) -> None:
        """Send what metrics.jsonl holds up to the start and the run lacks: all of it
        to a new run, the tail a stop during the flush left unsent to a continued one."""
        for batch in batches_through(self.out_dir, self.start_update):
            self.write(batch)
            self.skip_through = max(self.skip_through, batch.aggregates[-1]["env_steps"])

    def write(self, batch: LogBatch) -> None:
        if not self.local:
            return self._write_to_server(batch)
        try:
            self._write(batch)
        except Exception:
            if not (self.local and store_identity(self.store) != self.store_id):
                raise
            self._store_lost()  # the store went away under the run: make it again
            self._write(batch)

    def _write_to_server(self, batch: LogBatch | None) -> None:
        """Send ``batch`` after those kept while the server was unreachable, in order;
        while it is unreachable keep them all (said once), and say when it is back."""
        if batch is not None:
            self.waiting.append(batch)
        try:
            while self.waiting:
                if self.sending is None:  # its points by run, each sent chunk dropped
                    self.sending = self._metrics_by_run(self.waiting[0])
                self._send(self.sending)
                self.waiting.pop(0)
                self.sending = None
        except Exception as e:
            if not server_unreachable(e):
                raise
            if self.unreachable is None:
                self.unreachable = time.monotonic()
                say(
                    f"the MLflow server {self.tracking_uri} is unreachable ({brief(e)}); "
                    "training goes on, and its points are kept and sent when it is back "
                    "(metrics.jsonl holds them all)"
                )
            return
        if self.unreachable is not None:
            gone, self.unreachable = time.monotonic() - self.unreachable, None
            say(f"the MLflow server is back after {gone:.0f} s; sent it the points kept")

    def _write(self, batch: LogBatch) -> None:
        self._send(self._metrics_by_run(batch))

    def _send(self, by_run: dict[str, list]) -> None:
        """Log each run's metrics, 1,000 a call; what was sent is dropped from
        ``by_run`` as it goes, so that a call that fails resends only the rest."""
        for run in list(by_run):
            metrics = by_run[run]
            while metrics:
                self._locked_retry(self.client.log_batch, run, metrics=metrics[:1000])
                del metrics[:1000]
            del by_run[run]

    def _metrics_by_run(self, batch: LogBatch) -> dict[str, list]:
        """The batch's points as MLflow metrics, by the run (or child run) they go to."""
        now = int(time.time() * 1000)
        by_run: dict[str, list] = {}  # run id -> its metrics
        for a in () if self.pbt else batch.aggregates:  # a PBT slot's seeds are unrelated
            if a["env_steps"] <= self.skip_through or not self._logged(a["update"]):
                continue
            run = self._run_of(a)
            for key, value in metric_items(a):
                name = series_name(key, self.per_seed)
                if name is not None:
                    by_run.setdefault(run, []).append(
                        self._metric_cls(name, value, now, a["env_steps"])
                    )
        for r in batch.records if self.per_seed or self.pbt else ():
            if r["env_steps"] <= self.skip_through or not self._logged(r["update"]):
                continue
            run = self._run_of(r)
            for key, value in metric_items(r):
                name = key if self.pbt else f"seed_{r['seed']}/{key}"
                by_run.setdefault(run, []).append(
                    self._metric_cls(name, value, now, r["env_steps"])
                )
        step = batch.aggregates[-1]["env_steps"]
        if batch.sps is not None and step > self.skip_through:
            by_run.setdefault(self.run_id, []).append(
                self._metric_cls("perf/sps", batch.sps, now, step)
            )
        return by_run

    def _run_of(self, record: dict) -> str:
        """The run a record's series go to: the run itself, or its setting's child
        (PBT: its member's)."""
        if not self.sweep:
            return self.run_id
        setting = record["setting"]
        index = setting * self.num_seeds + record["seed"] if self.pbt else setting
        if index not in self.children:
            self.children[index] = self._create_child(index, record)
        return self.children[index]

    def _create_child(self, index: int, record: dict) -> str:
        from mlflow.entities import Param

        setting, seed = record["setting"], record.get("seed")
        tags = {**self.tags, "mlflow.parentRunId": self.run_id, "nnxrl.setting": str(setting)}
        name, params = f"{self.run_name}/setting_{setting}", [Param("setting", str(setting))]
        if self.pbt:
            tags["nnxrl.seed"] = str(seed)
            name = f"{self.run_name}/seed_{seed}/member_{setting}"
            params.append(Param("seed", str(seed)))
        run = self._locked_retry(
            self.client.create_run,
            self.experiment_id,
            start_time=self.started,
            run_name=name,
            tags=tags,
        )
        child = run.info.run_id
        params += [Param(k, str(v)) for k, v in record["hparams"].items()]
        self._locked_retry(self.client.log_batch, child, params=params)
        saved = {**self.children, index: child}
        own_files.write_text(
            self.out_dir / CHILDREN_FILE, json.dumps({str(k): v for k, v in saved.items()})
        )
        return child

    def _logged(self, update: int) -> bool:
        return is_logged(update, self.num_updates, self.stride)

    def attach(self, path: Path) -> None:
        """Attach a file (the end-of-run episode GIF) to the run's artifacts."""
        self._locked_retry(self.client.log_artifact, self.run_id, str(path), "media")

    def close(self, status: str) -> None:
        if self.local and store_identity(self.store) != self.store_id:
            self._store_lost()
        if not self.local and self.waiting:
            self._write_to_server(None)  # one more try for what was kept
        if self.unreachable is not None:
            count = sum(len(b.aggregates) for b in self.waiting)
            say(
                f"the MLflow server {self.tracking_uri} did not come back: {count} updates' "
                f"points were not sent (metrics.jsonl holds them); send them with "
                f"`{command(f'train --resume {self.out_dir}')}` once it is up"
            )
            return
        for child in self.children.values():
            self._locked_retry(self.client.set_terminated, child, status=_STATUS[status])
        self._locked_retry(self.client.set_terminated, self.run_id, status=_STATUS[status])

    def _store_lost(self) -> None:
        """The shared store was deleted or replaced while the run wrote to it: make or
        open the store at its path again and send it the run from metrics.jsonl, as for
        a broken store (at the next write that fails, or at the end)."""
        print(
            f"nnxrl: the MLflow store {self.store} was deleted or replaced during the run; "
            "making it again and sending it the run's records of metrics.jsonl",
            file=sys.stderr,
            flush=True,
        )
        forget_engine(self.tracking_uri)
        self._open_local_store()
        self.store_id = store_identity(self.store)
        self._create_run()
        self.skip_through, self.start_update = -1, self.num_updates
        self._resend_records()  # what metrics.jsonl holds so far

    def _locked_retry(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        """``call``, retried while another process holds the SQLite store's write lock."""
        deadline, delay = time.monotonic() + LOCK_RETRY_SECONDS, 0.05
        while True:
            try:
                return call(*args, **kwargs)
            except Exception as e:
                if "database is locked" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(2 * delay, 1.0)


def server_unreachable(error: Exception) -> bool:
    """Whether ``error`` says a tracking server did not answer (no connection, a time
    out, a 5xx), as opposed to refusing what was sent."""
    text = str(error)
    failed = "failed with exception" in text or "error code 5" in text
    return "API request to" in text and failed


def say(message: str) -> None:
    print(f"nnxrl: {message}", file=sys.stderr, flush=True)


def series_name(aggregate_key: str, per_seed: bool) -> str | None:
    """MLflow's name for an aggregate column: 'x/mean' -> 'x'; 'x/std', '/min' and
    '/max' kept with more than one seed; None for what is not logged."""
    if aggregate_key in ("update", "env_steps", "num_seeds"):
        return None
    stem, _, stat = aggregate_key.rpartition("/")
    if stat == "mean":
        return stem
    return aggregate_key if per_seed and stat in ("std", "min", "max") else None
