"""TensorBoard backend: event files under ``<out>/tensorboard`` written with
TensorBoard's own event-file writer and protocol buffers (no TensorFlow or PyTorch).

``tensorboard --logdir runs`` then shows every run. Scalars are written at step
``env_steps`` (per seed), every k-th update and the last (``logging.tracker_points``):
each metric's mean across seeds as ``<name>`` in ``<out>/tensorboard``; with more
than one seed also its ``<name>/std``, ``/min`` and ``/max`` there, and each seed's
series under the same name in ``<out>/tensorboard/seed_<i>``, so TensorBoard draws the
seeds and their mean in one chart. A sweep writes each setting as a run of its own,
``<out>/tensorboard/setting_<k>`` (its seeds under ``setting_<k>/seed_<i>``), with its
values as a text summary; ``perf/sps`` stays in ``<out>/tensorboard``. The config and
the run's tags are a text summary; the end-of-run episode GIF an image summary
(TensorBoard plays GIFs).

A resumed run appends new event files; if the run had none (TensorBoard switched on at
resume), the records of metrics.jsonl up to the resume point are written first.
"""

from __future__ import annotations

import time
from pathlib import Path

import yaml

from nnxrl.logging.jsonl import batches_through
from nnxrl.logging.records import LogBatch, metric_items, series_prefix
from nnxrl.logging.run_info import is_logged, logged_updates


class TensorboardBackend:
    name = "tensorboard"
    merges = True  # a backlog of chunks is one write and one flush

    def __init__(
        self,
        out_dir: str | Path,
        config_dict: dict,
        *,
        tags: dict[str, str] | None = None,
        num_seeds: int = 1,
        num_updates: int = 1,
        points: int = 200,
        start_update: int = 0,
    ):
        self.out_dir = Path(out_dir)
        self.logdir = self.out_dir / "tensorboard"
        self.config_dict = config_dict
        self.tags = tags or {}
        self.num_seeds = num_seeds
        self.num_updates = num_updates
        self.stride = logged_updates(num_updates, points)
        self.start_update = start_update
        self.writers: dict[str, object] = {}
        self.described: set[str] = set()  # sweep settings whose values are written

    def open(self) -> None:
        try:
            from tensorboard.summary.writer.event_file_writer import EventFileWriter
        except ImportError as e:
            raise RuntimeError(
                "the tensorboard package is not installed; reinstall nnxrl's dependencies (uv sync)"
            ) from e
        self._writer_class = EventFileWriter
        had_events = self.logdir.is_dir() and any(self.logdir.rglob("events.out.tfevents.*"))
        if self.start_update == 0 or not had_events:
            self._text("config", yaml.safe_dump(self.config_dict, sort_keys=False), step=0)
            self._text("tags", "\n".join(f"{k}: {v}" for k, v in self.tags.items()), step=0)
        if self.start_update > 0 and not had_events:
            for batch in batches_through(self.out_dir, self.start_update):
                self.write(batch)

    def write(self, batch: LogBatch) -> None:
        per_seed = self.num_seeds > 1
        for a in batch.aggregates:
            if not is_logged(a["update"], self.num_updates, self.stride):
                continue
            folder = series_prefix(a, per_seed=False)
            if "hparams" in a and folder not in self.described:
                self.described.add(folder)
                values = yaml.safe_dump(a["hparams"], sort_keys=False)
                self._text("setting", f"setting {a['setting']}\n{values}", 0, folder)
            values = {}
            for key, value in metric_items(a):
                stem, _, stat = key.rpartition("/")
                if stat == "mean":
                    values[stem] = value
                elif per_seed and stat in ("std", "min", "max"):
                    values[key] = value
            self._scalars(folder, values, a["env_steps"])
        for r in batch.records if per_seed else ():
            if not is_logged(r["update"], self.num_updates, self.stride):
                continue
            self._scalars(series_prefix(r, per_seed=True), dict(metric_items(r)), r["env_steps"])
        if batch.sps is not None:
            self._scalars("", {"perf/sps": batch.sps}, batch.aggregates[-1]["env_steps"])
        for writer in self.writers.values():
            writer.flush()

    def attach(self, path: Path) -> None:
        """The end-of-run episode GIF as an image summary."""
        from PIL import Image
        from tensorboard.compat.proto.summary_pb2 import Summary

        with Image.open(path) as image:
            width, height = image.size
        picture = Summary.Image(
            height=height, width=width, colorspace=3, encoded_image_string=path.read_bytes()
        )
        summary = Summary(value=[Summary.Value(tag="episode", image=picture)])
        self._event("", summary, step=self.num_updates)

    def close(self, status: str) -> None:
        for writer in self.writers.values():
            writer.close()

    def _scalars(self, folder: str, values: dict[str, float], step: int) -> None:
        from tensorboard.compat.proto.summary_pb2 import Summary

        summary = Summary(
            value=[Summary.Value(tag=k, simple_value=float(v)) for k, v in values.items()]
        )
        self._event(folder, summary, step)

    def _text(self, tag: str, text: str, step: int, folder: str = "") -> None:
        from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
        from tensorboard.compat.proto.tensor_pb2 import TensorProto
        from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
        from tensorboard.compat.proto.types_pb2 import DT_STRING

        metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text"))
        # shown as Markdown: indented lines are a code block
        tensor = TensorProto(
            dtype=DT_STRING,
            string_val=["\n".join("    " + line for line in text.splitlines()).encode()],
            tensor_shape=TensorShapeProto(),
        )
        summary = Summary(value=[Summary.Value(tag=tag, metadata=metadata, tensor=tensor)])
        self._event(folder, summary, step)

    def _event(self, folder: str, summary, step: int) -> None:
        from tensorboard.compat.proto.event_pb2 import Event

        if folder not in self.writers:  # one folder per run TensorBoard lists
            path = self.logdir / folder if folder else self.logdir
            path.mkdir(parents=True, exist_ok=True)
            self.writers[folder] = self._writer_class(str(path))
        self.writers[folder].add_event(Event(wall_time=time.time(), step=step, summary=summary))
