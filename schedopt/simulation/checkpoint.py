"""Checkpoints of a simulation run, so that an interrupted run can continue where it stopped.

A checkpoint is one JSON document (written atomically, `schedopt.files.write_atomically`):

    {"format": "schedopt-checkpoint/1", "loop": "rounds/default" | "rounds/gavel" | "queues",
     "trace_sha256": ..., "options_sha256": ..., "events": rounds done, "state": {...}}

`state` holds the loop's variables at the start of a round: numpy arrays as
{"__array__": [dtype, shape, base64 of the raw little-endian bytes]} (float64, int64 and bool
only), tuples as {"__tuple__": [...]}, dicts with non-string keys as {"__pairs__": [[k, v], ...]},
everything else plain JSON values. Floats keep every bit (arrays as raw bytes; plain floats
through Python's shortest round-trip repr), so a resumed run equals an uninterrupted one exactly.
Loading it runs no code: nothing is unpickled, and a document of another format, trace or set of
options is refused in one line (`CheckpointError`).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from schedopt.errors import SchedoptError

FORMAT = "schedopt-checkpoint/1"
DEFAULT_SECONDS = 60.0  # wall seconds between checkpoints when no cadence is given
_DTYPES = {"<f8": np.float64, "<i8": np.int64, "|b1": np.bool_}


class CheckpointError(SchedoptError):
    """A checkpoint file is missing, corrupt, or belongs to another trace or set of options."""


@dataclass(frozen=True)
class CheckpointPlan:
    """Where and how often a run writes its checkpoint. path: the file; every_events: write
    after that many rounds; every_seconds: write when that many wall seconds passed since the
    last write (DEFAULT_SECONDS when neither is given). The state is also written when the run
    is interrupted (KeyboardInterrupt, SIGTERM). on_write(path, events) is told of each write;
    on_event(events), called after each round's state is taken, is a hook for tests."""

    path: Path
    every_events: int | None = None
    every_seconds: float | None = None
    on_write: Callable[[Path, int], None] | None = None
    on_event: Callable[[int], None] | None = None

    def __post_init__(self):
        if self.every_events is not None and self.every_seconds is not None:
            raise CheckpointError("give a checkpoint cadence in events or in seconds, not both")
        if self.every_events is not None and self.every_events < 1:
            raise CheckpointError(f"checkpoint every N events needs N >= 1, "
                                  f"got {self.every_events}")
        if self.every_seconds is not None and not self.every_seconds > 0:
            raise CheckpointError(f"checkpoint every S seconds needs S > 0, "
                                  f"got {self.every_seconds}")


def fingerprint(value: Any) -> str:
    """sha256 of `value` as canonical JSON (sorted keys; other objects by their repr)."""
    text = json.dumps(value, sort_keys=True, default=repr, allow_nan=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def trace_fingerprint(trace) -> str:
    """sha256 of the trace's instance document (`instance_to_dict`)."""
    from schedopt.instance.save import instance_to_dict

    return fingerprint(instance_to_dict(trace))


def options_fingerprint(policy_name: str, fixed: dict, config) -> str:
    """sha256 of what decides a run's numbers: the policy, its fixed options and every field of
    the SimulationConfig except the executor (any executor gives the same result)."""
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)
              if f.name != "executor"}
    return fingerprint({"policy": policy_name, "fixed": fixed, "config": fields})


class Checkpoints:
    """One run's checkpointing: the state it resumes from (`resumed`, None for a fresh run) and
    the plan for writing (None: write nothing). The loop calls `tick(snapshot)` at the start of
    every round, with a function returning its state; `interrupted()` writes the state taken at
    the start of the round the interrupt hit."""

    def __init__(self, loop: str, trace_sha: str, options_sha: str,
                 plan: CheckpointPlan | None = None, resume: str | os.PathLike | None = None):
        self.loop, self.trace_sha, self.options_sha, self.plan = loop, trace_sha, options_sha, plan
        self.events, self.resumed = 0, None
        if resume is not None:
            document = read_checkpoint(resume)
            check_checkpoint(document, resume, loop, trace_sha, options_sha)
            self.events = int(document["events"])
            self.resumed = _State(decode(document["state"]))
        self._last: dict | None = None
        self._written_events = self.events
        self._written_at = time.monotonic()

    def tick(self, snapshot: Callable[[], dict]) -> None:
        """Take the state at the start of a round; write it when the cadence says so."""
        if self.plan is None:
            return
        self._last = snapshot()
        plan = self.plan
        if plan.every_events is not None:
            due = self.events - self._written_events >= plan.every_events
        else:
            seconds = DEFAULT_SECONDS if plan.every_seconds is None else plan.every_seconds
            due = time.monotonic() - self._written_at >= seconds
        if due:
            self.write()
        if plan.on_event is not None:
            plan.on_event(self.events)
        self.events += 1

    def interrupted(self) -> None:
        """Write the last state taken (called while a KeyboardInterrupt propagates)."""
        if self.plan is not None and self._last is not None:
            self.write()

    def write(self) -> None:
        events = self._last["events"] = self.events
        document = {"format": FORMAT, "loop": self.loop, "trace_sha256": self.trace_sha,
                    "options_sha256": self.options_sha, "events": events,
                    "state": encode(self._last)}
        text = json.dumps(document, allow_nan=True, separators=(",", ":"))
        from schedopt.files import write_atomically

        write_atomically(self.plan.path, text, what="checkpoint")
        self._written_events, self._written_at = events, time.monotonic()
        if self.plan.on_write is not None:
            self.plan.on_write(self.plan.path, events)


@contextmanager
def checkpointing(checkpoints: Checkpoints | None):
    """Around a loop: an interrupt (KeyboardInterrupt, SIGTERM as the CLI raises it) writes the
    state of the round it hit before it goes on."""
    try:
        yield
    except KeyboardInterrupt:
        if checkpoints is not None:
            checkpoints.interrupted()
        raise


class prefix:
    """The first len(items) entries of an append-only list, as they are now: a snapshot that
    costs nothing per round (the entries are copied only when a checkpoint is written)."""

    __slots__ = ("items", "length")

    def __init__(self, items: list):
        self.items, self.length = items, len(items)


def copy_memory(memory: dict) -> dict:
    """A copy of a loop's re-solve memory (POP parts, warm-start prices) that the next solve
    cannot change."""
    return {key: dict(value) if isinstance(value, dict) else value
            for key, value in memory.items()}


def restore(saved: dict, **fresh: np.ndarray) -> tuple[np.ndarray, ...]:
    """The arrays named in `fresh` as `saved` holds them, in that order; CheckpointError when one
    is missing or its shape or dtype differs from the fresh array's."""
    arrays = []
    for name, array in fresh.items():
        value = saved.get(name)
        if not isinstance(value, np.ndarray) or value.shape != array.shape \
                or value.dtype != array.dtype:
            raise CheckpointError(f"corrupt checkpoint (state {name!r} is not a "
                                  f"{array.dtype} array of shape {array.shape})")
        arrays.append(value)
    return tuple(arrays)


def saved_shape(saved: dict, name: str, fresh: np.ndarray) -> np.ndarray:
    """A template for `restore` of a 1-D array whose length varies during a run: `fresh`'s
    dtype with the saved array's length."""
    value = saved[name]
    if isinstance(value, np.ndarray) and value.ndim == 1:
        return np.zeros(value.shape, dtype=fresh.dtype)
    return fresh


def set_random_state(generator, state) -> None:
    """`generator.setstate(state)` (a random.Random), or CheckpointError when `state` is not a
    state it could have had."""
    try:
        if not (isinstance(state, tuple) and len(state) == 3 and isinstance(state[1], tuple)
                and all(type(n) is int for n in state[1])):
            raise TypeError
        generator.setstate(state)
    except (TypeError, ValueError, OverflowError):
        raise CheckpointError("corrupt checkpoint (the random state of the run)") from None


class _State(dict):
    def __missing__(self, key):
        raise CheckpointError(f"corrupt checkpoint (state {key!r} missing)")


def read_checkpoint(path: str | os.PathLike, format: str = FORMAT) -> dict:
    """The checkpoint document (of `format`) at `path`, or CheckpointError (one line) when it is
    missing or not such a checkpoint."""
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read the checkpoint "
                              f"({exc.strerror or exc})") from None
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        raise CheckpointError(f"{path}: not a checkpoint (not a JSON document; corrupt or "
                              f"truncated)") from None
    if not isinstance(document, dict) or document.get("format") != format:
        found = document.get("format") if isinstance(document, dict) else None
        raise CheckpointError(f"{path}: not a checkpoint (format {found!r}, expected {format!r})")
    return document


def check_checkpoint(document: dict, path, loop: str, trace_sha: str, options_sha: str) -> None:
    """CheckpointError in one line when `document` belongs to another loop, trace or options."""
    if document.get("loop") != loop:
        raise CheckpointError(f"{path}: the checkpoint is of a {document.get('loop')!r} run; "
                              f"this run is {loop!r} (another mode or policy kind)")
    if document.get("trace_sha256") != trace_sha:
        raise CheckpointError(f"{path}: the checkpoint belongs to another trace (sha256 "
                              f"differs); resume with the trace it was written for")
    if document.get("options_sha256") != options_sha:
        raise CheckpointError(f"{path}: the checkpoint was written with other options (policy, "
                              f"seed, round length, ...); resume with the same options")
    events = document.get("events")
    if isinstance(events, bool) or not isinstance(events, int) or events < 0 \
            or not isinstance(document.get("state"), dict):
        raise CheckpointError(f"{path}: corrupt checkpoint (events or state missing)")


def encode(value: Any) -> Any:
    """`value` as plain JSON values (module docstring)."""
    if isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        dtype = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
        if dtype.str not in _DTYPES:
            array = array.astype(np.int64 if dtype.kind in "iu" else np.float64)
        array = array.astype(array.dtype.newbyteorder("<"), copy=False)
        return {"__array__": [array.dtype.str, list(array.shape),
                              base64.b64encode(array.tobytes()).decode("ascii")]}
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v) for v in value]}
    if isinstance(value, prefix):
        return _encode_rows(value.items[:value.length])
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"__pairs__": [[encode(k), encode(v)] for k, v in value.items()]}
    raise CheckpointError(f"cannot checkpoint a value of type {type(value).__name__}")


def _encode_rows(items: list) -> Any:
    """A list of numbers, or of equal tuples of numbers (the loops' per-round records), as one
    array per column (ints stay int64): one array instead of an object per entry."""
    if not items:
        return []
    rows = isinstance(items[0], tuple)
    columns = list(zip(*items)) if rows else [items]
    if any(len(row) != len(columns) for row in items) if rows else False:
        return encode(list(items))
    arrays = []
    for column in columns:
        integer = all(type(v) is int for v in column)
        if not integer and not all(type(v) is float for v in column):
            return encode(list(items))
        arrays.append(encode(np.array(column, dtype=np.int64 if integer else np.float64)))
    return {"__rows__" if rows else "__list__": arrays}


def decode(value: Any) -> Any:
    """The inverse of `encode`; CheckpointError on anything it did not write."""
    try:
        return _decode(value)
    except CheckpointError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):
        raise CheckpointError("corrupt checkpoint (a value of its state cannot be read)") from None


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "__array__" in value:
        dtype, shape, data = value["__array__"]
        if dtype not in _DTYPES:
            raise CheckpointError(f"corrupt checkpoint (array of dtype {dtype!r})")
        raw = base64.b64decode(data.encode("ascii"), validate=True)
        array = np.frombuffer(raw, dtype=np.dtype(dtype)).copy()
        return array.reshape([int(n) for n in shape]).astype(_DTYPES[dtype], copy=False)
    if "__tuple__" in value:
        return tuple(_decode(v) for v in value["__tuple__"])
    if "__rows__" in value:
        return list(zip(*(_decode(column).tolist() for column in value["__rows__"])))
    if "__list__" in value:
        return _decode(value["__list__"][0]).tolist()
    if "__pairs__" in value:
        return {_hashable(_decode(k)): _decode(v) for k, v in value["__pairs__"]}
    return {k: _decode(v) for k, v in value.items()}


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key
