"""Resumable simulations: a run interrupted at a random round (or in the middle of a solve, or by
SIGINT/SIGTERM to the CLI) and resumed from its checkpoint ends with exactly the result of an
uninterrupted run (every per-job number and every round bit for bit; the summary too, except the
measured wall seconds of the solver calls, which differ between any two runs). A checkpoint of
another trace or options, or a corrupt one, is one line and exit code 2."""

from __future__ import annotations

import base64
import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from schedopt.cli.main import main
from schedopt.instance import load_instance
from schedopt.simulation import CheckpointError, CheckpointPlan, SimulationConfig, simulate
from schedopt.simulation.checkpoint import decode, encode, prefix
from test_interrupts import default_ctrl_c

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "instances" / "small-heterogeneous.yaml"
SMALL = load_instance(TRACE)
WALL_SECONDS = {"solve_seconds_mean", "solve_seconds_max"}  # measured, differ run to run


class Stop(KeyboardInterrupt):
    """The interrupt the tests raise."""


def assert_same_run(a, b) -> None:
    pd.testing.assert_frame_equal(a.jobs, b.jobs, check_exact=True)
    pd.testing.assert_frame_equal(a.rounds, b.rounds, check_exact=True)
    differ = {k for k in a.summary if k not in WALL_SECONDS
              and json.dumps(a.summary[k]) != json.dumps(b.summary[k])}
    assert not differ, {k: (a.summary[k], b.summary[k]) for k in differ}
    assert set(a.summary) == set(b.summary)


def interrupted_then_resumed(policy, config, path: Path, at: list[int], every: int = 3,
                             trace=SMALL):
    """Run `trace` with checkpoints, interrupted at event (round or lease boundary) at[0];
    resume and interrupt at at[1] (counted from the start of the run), ...; the last resume
    runs to the end."""
    for stop in at:
        def hook(events, stop=stop):
            if events == stop:
                raise Stop()
        plan = CheckpointPlan(path, every_events=every, on_event=hook)
        with pytest.raises(Stop):
            simulate(trace, policy, config, checkpoint=plan,
                     resume=path if path.exists() else None)
        assert json.loads(path.read_text())["events"] == stop
    return simulate(trace, policy, config, resume=path)


CASES = [
    ("max_min_fairness", SimulationConfig(round_seconds=1800)),
    ("finish_time_fairness", SimulationConfig(round_seconds=1800)),
    ("max_min_fairness", SimulationConfig.gavel_compatible(round_seconds=1800)),
    ("max_min_fairness_agnostic", SimulationConfig.gavel_compatible(round_seconds=1800, seed=7)),
    ("max_min_fairness", SimulationConfig(round_seconds=1800, partitions=2, seed=3)),
    ("max_min_fairness", SimulationConfig.gavel_compatible(round_seconds=1800, partitions=3)),
    ("finish_time_fairness", SimulationConfig(round_seconds=1800, perf_error=0.2, seed=4)),
]


@pytest.mark.parametrize("policy,config", CASES,
                         ids=[f"{p}-{c.mode}-pop{c.partitions}-e{c.perf_error}" for p, c in CASES])
def test_resume_after_interrupts_at_random_rounds_equals_an_uninterrupted_run(tmp_path, policy,
                                                                              config):
    full = simulate(SMALL, policy, config)
    rng = random.Random(hash((policy, config.mode, config.partitions)) % 1000)
    first = rng.randrange(1, len(full.rounds) // 2)
    second = rng.randrange(first + 1, len(full.rounds))
    resumed = interrupted_then_resumed(policy, config, tmp_path / "run.ckpt", [first, second])
    assert_same_run(full, resumed)


def test_the_checkpoint_holds_the_warm_start_pop_parts_and_random_state(tmp_path):
    path = tmp_path / "run.ckpt"
    config = SimulationConfig.gavel_compatible(round_seconds=1800, partitions=2)
    interrupted_then_resumed("max_min_fairness_agnostic", config, path, [40])
    state = json.loads(path.read_text())["state"]
    assert "__tuple__" in state["shuffler"]  # random.Random's state
    parts = decode(state["memory"])["parts"]
    assert set(parts) <= set(SMALL.job_ids) and set(parts.values()) == {0, 1}
    path = tmp_path / "default.ckpt"
    interrupted_then_resumed("max_min_fairness", SimulationConfig(round_seconds=1800),
                             path, [30])
    start = decode(json.loads(path.read_text())["state"]["memory"])["start"]
    assert set(start) == {"prices", "level"}  # the decomposition's warm start


@pytest.mark.parametrize("config", [SimulationConfig(round_seconds=1800),
                                    SimulationConfig.gavel_compatible(round_seconds=1800)],
                         ids=lambda c: c.mode)
def test_an_interrupt_inside_a_solve_resumes_to_the_same_run(tmp_path, monkeypatch, config):
    import schedopt.api

    full = simulate(SMALL, "max_min_fairness", config)
    real, calls = schedopt.api.solve, [0]

    def solve_then_stop(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 9:
            raise Stop()
        return real(*args, **kwargs)

    path = tmp_path / "run.ckpt"
    monkeypatch.setattr(schedopt.api, "solve", solve_then_stop)
    with pytest.raises(Stop):  # a cadence that never comes: only the interrupt writes
        simulate(SMALL, "max_min_fairness", config,
                 checkpoint=CheckpointPlan(path, every_events=10**9))
    monkeypatch.setattr(schedopt.api, "solve", real)
    assert_same_run(full, simulate(SMALL, "max_min_fairness", config, resume=path))


def test_a_finished_checkpointed_run_equals_a_plain_one(tmp_path):
    config = SimulationConfig(round_seconds=1800)
    plain = simulate(SMALL, "max_min_fairness", config)
    path = tmp_path / "run.ckpt"
    checked = simulate(SMALL, "max_min_fairness", config,
                       checkpoint=CheckpointPlan(path, every_seconds=1e-9))
    assert_same_run(plain, checked)
    # written at the start of every pass (rounds and jumps to the next arrival)
    assert json.loads(path.read_text())["events"] >= len(plain.rounds) - 1


def test_encoding_keeps_every_bit():
    rng = np.random.default_rng(0)
    floats = np.concatenate([rng.standard_normal(50), [np.nan, np.inf, -np.inf, -0.0, 5e-324]])
    value = {"f": floats, "i": np.arange(-3, 3), "b": np.array([True, False]),
             "m": np.zeros((0, 3)), "t": (1, (2.5, None)), "p": {3: (4, 5)}, "s": {"x": [1.0]},
             "x": 0.1 + 0.2, "n": float("nan")}
    back = json.loads(json.dumps(encode(value)))
    back = decode(back)
    assert back["f"].tobytes() == floats.tobytes()
    assert back["i"].tolist() == list(range(-3, 3)) and back["i"].dtype == np.int64
    assert back["b"].dtype == np.bool_ and back["m"].shape == (0, 3)
    assert back["t"] == (1, (2.5, None)) and back["p"] == {3: (4, 5)} and back["s"] == {"x": [1.0]}
    assert back["x"] == 0.1 + 0.2 and np.isnan(back["n"])
    rounds = [(0.1 * k, 1 / 3 + k, k, 2 * k) for k in range(5)] + [(1e300, -0.0, -1, 2**62)]
    seconds = [0.1, 2 / 3, 1e-17]
    growing = list(rounds)
    taken = prefix(growing)
    growing.append((9.0, 9.0, 9, 9))  # appended after the snapshot: not in it
    back = decode(json.loads(json.dumps(encode({"r": taken, "s": prefix(seconds)}))))
    assert back["r"] == rounds and [tuple(map(type, r)) for r in back["r"]] == \
        [(float, float, int, int)] * len(rounds)
    assert back["s"] == seconds and all(type(v) is float for v in back["s"])


def test_resume_without_a_file_and_bad_cadence_are_one_line_errors(tmp_path):
    with pytest.raises(CheckpointError, match="cannot read"):
        simulate(SMALL, "max_min_fairness", resume=tmp_path / "missing.ckpt")
    with pytest.raises(CheckpointError, match="not both"):
        CheckpointPlan(tmp_path / "c", every_events=1, every_seconds=1.0)


# --------------------------------------------------------------------------------- the CLI


def run_cli(*args: str):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ckpt") / "run.ckpt"
    code, _ = run_cli("simulate", TRACE, "--round-seconds", "1800", "--checkpoint", path,
                      "--checkpoint-every", "50", "--json")
    assert code == 0 and path.exists()
    return path


def one_line_exit_2(args, expect: str) -> None:
    code, output = run_cli(*args)
    assert code == 2, output
    assert output.count("\n") == 1 and output.startswith("error: ") and expect in output, output


@pytest.mark.parametrize("change,expect", [
    (["--seed", "1"], "other options"),
    (["--round-seconds", "360"], "other options"),
    (["--policy", "finish_time_fairness"], "other options"),
    (["--mode", "gavel"], "'rounds/gavel'"),
])
def test_a_checkpoint_of_other_options_is_one_line_exit_2(checkpoint, change, expect):
    args = ["simulate", TRACE, "--round-seconds", "1800", "--resume", checkpoint]
    if "--round-seconds" in change:
        args = args[:2] + args[4:]
    one_line_exit_2(args + change, expect)


def test_a_checkpoint_of_another_trace_is_one_line_exit_2(checkpoint, tmp_path):
    other = tmp_path / "other.json"
    from schedopt.instance.save import instance_to_dict

    doc = instance_to_dict(SMALL)
    doc["jobs"][0]["total_steps"] += 1
    other.write_text(json.dumps(doc))
    one_line_exit_2(["simulate", other, "--round-seconds", "1800", "--resume", checkpoint],
                    "another trace")


def corrupted(checkpoint: Path, tmp_path: Path, how: str) -> Path:
    text = checkpoint.read_text()
    path = tmp_path / f"{how}.ckpt"
    if how == "truncated":
        path.write_text(text[: len(text) // 2])
    elif how == "bytes":
        path.write_bytes(bytes(range(256)) * 8)
    elif how == "format":
        path.write_text(text.replace("schedopt-checkpoint/1", "schedopt-checkpoint/9"))
    elif how == "pickle":
        doc = json.loads(text)
        payload = base64.b64encode(b"cos\nsystem\n").decode()  # a pickle would run os.system
        doc["state"]["steps"] = {"__array__": ["|O", [1], payload]}
        path.write_text(json.dumps(doc))
    elif how == "shape":
        doc = json.loads(text)
        doc["state"]["steps"]["__array__"][1] = [3]
        doc["state"]["steps"]["__array__"][2] = base64.b64encode(np.zeros(3).tobytes()).decode()
        path.write_text(json.dumps(doc))
    elif how == "missing":
        doc = json.loads(text)
        del doc["state"]["deficit"]
        path.write_text(json.dumps(doc))
    elif how == "base64":
        doc = json.loads(text)
        doc["state"]["X"]["__array__"][2] = "not base64!"
        path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("how,expect", [
    ("truncated", "not a checkpoint"), ("bytes", "not a checkpoint"),
    ("format", "not a checkpoint"), ("pickle", "corrupt checkpoint"),
    ("shape", "corrupt checkpoint"), ("missing", "corrupt checkpoint"),
    ("base64", "corrupt checkpoint"),
])
def test_a_corrupt_checkpoint_is_one_line_exit_2(checkpoint, tmp_path, how, expect):
    path = corrupted(checkpoint, tmp_path, how)
    one_line_exit_2(["simulate", TRACE, "--round-seconds", "1800", "--resume", path], expect)


def test_lease_policies_write_checkpoints_too(tmp_path):
    # (they used to refuse; tests/test_resume_leases.py resumes them at random boundaries)
    code, output = run_cli("simulate", ROOT / "instances" / "chronus-leases.json", "-p", "edf",
                           "--checkpoint", tmp_path / "c.ckpt", "--checkpoint-every", "5",
                           "--json")
    assert code == 0, output
    document = json.loads((tmp_path / "c.ckpt").read_text())
    assert document["loop"] == "leases" and document["events"] % 5 == 0 and document["events"]
    one_line_exit_2(["simulate", TRACE, "--round-seconds", "1800", "--resume",
                     tmp_path / "c.ckpt"], "'leases' run")


@pytest.mark.parametrize("policy", ["allox", "sjf", "drf"])
def test_queue_policies_resume_to_the_same_run(tmp_path, policy):
    trace = load_instance(ROOT / "instances" / "allox-40.json")
    full = simulate(trace, policy)
    rng = random.Random(policy)
    at = sorted(rng.sample(range(1, len(full.decisions)), 2))
    path = tmp_path / "queues.ckpt"
    for stop in at:
        def hook(events, stop=stop):
            if events == stop:
                raise Stop()
        with pytest.raises(Stop):
            simulate(trace, policy, checkpoint=CheckpointPlan(path, every_events=4, on_event=hook),
                     resume=path if path.exists() else None)
    resumed = simulate(trace, policy, resume=path)
    pd.testing.assert_frame_equal(full.jobs, resumed.jobs, check_exact=True)
    pd.testing.assert_frame_equal(full.decisions.drop(columns="solve_seconds"),
                                  resumed.decisions.drop(columns="solve_seconds"),
                                  check_exact=True)
    assert {k: v for k, v in full.summary.items() if k not in WALL_SECONDS} == \
        {k: v for k, v in resumed.summary.items() if k not in WALL_SECONDS}
    one_line_exit_2(["simulate", ROOT / "instances" / "allox-40.json", "-p", policy,
                     "--resume", path, "-o", "alpha=0.5"] if policy == "allox" else
                    ["simulate", TRACE, "-p", policy, "--resume", path], "checkpoint")


def test_checkpoint_over_the_trace_and_cadence_alone_are_refused(tmp_path):
    one_line_exit_2(["simulate", TRACE, "--checkpoint", TRACE], "over an input")
    one_line_exit_2(["simulate", TRACE, "--checkpoint-every", "3"], "need --checkpoint")
    one_line_exit_2(["simulate", TRACE, "--resume", tmp_path / "none.ckpt"], "no such checkpoint")


def handles_sigterm(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) >> (signal.SIGTERM - 1) & 1)


def written_since(path: Path, before: int | None) -> bool:
    try:
        return path.stat().st_mtime_ns != before
    except OSError:
        return False


@pytest.mark.parametrize("mode", ["default", "gavel"])
def test_cli_interrupted_by_a_signal_resumes_to_the_same_json(tmp_path, mode):
    args = [sys.executable, "-m", "schedopt.cli", "simulate", str(TRACE), "--mode", mode,
            "--json", "--no-progress"]
    began = time.monotonic()
    full = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    took = time.monotonic() - began  # seconds, start-up (~1 s) and the run
    rng = random.Random(mode)
    path = tmp_path / "run.ckpt"
    interrupted = 0
    for trial in range(2):
        before = path.stat().st_mtime_ns if path.exists() else None
        process = subprocess.Popen(args + ["--checkpoint", str(path), "--checkpoint-every", "10"]
                                   + (["--resume", str(path)] if path.exists() else []),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   preexec_fn=default_ctrl_c)
        deadline = time.monotonic() + 60
        while not written_since(path, before) and process.poll() is None \
                and time.monotonic() < deadline:  # the run is under way: it wrote a checkpoint
            time.sleep(0.002)
        sent = rng.choice([signal.SIGINT, signal.SIGTERM])
        time.sleep(rng.uniform(0.0, 0.2) * took)
        process.send_signal(sent)
        out, err = process.communicate(timeout=120)
        if process.returncode == 0:  # finished before the signal: nothing to resume
            break
        assert process.returncode == (130 if sent == signal.SIGINT else 143), err
        assert err.count("\n") == 1 and "interrupted" in err, err
        interrupted += 1
        if path.exists():
            assert f"--resume {path}" in err
    if path.exists():
        out = subprocess.run(args + ["--resume", str(path)], capture_output=True, text=True,
                             check=True).stdout
    elif not out:  # interrupted before its first round: nothing to resume from
        out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    assert interrupted  # the signal came before the end at least once
    resumed = json.loads(out)
    assert resumed["jobs"] == full["jobs"]
    assert {k: v for k, v in resumed["summary"].items() if k not in WALL_SECONDS} == \
        {k: v for k, v in full["summary"].items() if k not in WALL_SECONDS}


# ------------------------------------------------- compare and sweep: executors, finished runs

from schedopt.compare import compare, load_sweep  # noqa: E402
from schedopt.traces import gavel_cluster, load_performance, synthetic_trace  # noqa: E402

PERF = load_performance(ROOT / "instances" / "large-2000.json", ["v100", "p100", "k80"],
                        colocation=False)
CLUSTER = gavel_cluster({"v100": 2, "p100": 2, "k80": 2})
SWEEP_POLICIES = ["max_min_fairness", "max_min_fairness_agnostic", "fifo"]
SWEEP_CONFIG = SimulationConfig.gavel_compatible(round_seconds=1800, seed=2)
SWEEP_WALL = {"solve_seconds_mean"}


def sweep(**options):
    return load_sweep(PERF, CLUSTER, [2.0, 6.0], SWEEP_POLICIES, num_jobs=10, seed=3,
                      config=SWEEP_CONFIG, single_gpu=True, **options)


@pytest.fixture(scope="module")
def serial_sweep():
    return sweep()


def assert_same_sweep(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a.drop(columns=list(SWEEP_WALL)),
                                  b.drop(columns=list(SWEEP_WALL)), check_exact=True)


def test_a_sweep_in_worker_processes_equals_the_serial_sweep(serial_sweep):
    assert_same_sweep(serial_sweep, sweep(executor="process"))


def test_a_sweep_on_local_ray_equals_the_serial_sweep(serial_sweep, monkeypatch):
    ray = pytest.importorskip("ray")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    try:
        assert_same_sweep(serial_sweep, sweep(executor="ray"))
    finally:
        ray.shutdown()


def test_an_interrupted_sweep_resumes_without_redoing_finished_runs(serial_sweep, tmp_path,
                                                                    monkeypatch):
    import schedopt.compare as compare_module

    path, real, calls = tmp_path / "sweep.ckpt", compare_module.simulate, []

    def simulate_then_stop(trace, policy, config, *args, **kwargs):
        calls.append((trace.name, policy))
        if len(calls) == 4:
            raise Stop()
        return real(trace, policy, config, *args, **kwargs)

    monkeypatch.setattr(compare_module, "simulate", simulate_then_stop)
    with pytest.raises(Stop):
        sweep(checkpoint=path)
    assert len(json.loads(path.read_text())["runs"]) == 3
    calls.clear()
    resumed = sweep(resume=path)
    assert len(calls) == 3  # only the runs not yet finished
    assert_same_sweep(serial_sweep, resumed)
    calls.clear()
    assert_same_sweep(serial_sweep, sweep(resume=path))  # all done: nothing simulated
    assert not calls


def test_a_resumed_compare_equals_the_uninterrupted_one(tmp_path, monkeypatch):
    import schedopt.compare as compare_module

    trace = synthetic_trace(PERF, CLUSTER, 10, 4.0, 1, single_gpu=True, colocation=False)
    policies = ["max_min_fairness", "fifo", "finish_time_fairness"]
    full = compare(trace, policies, SWEEP_CONFIG)
    path, real = tmp_path / "compare.ckpt", compare_module.simulate

    def stop_at_fifo(trace, policy, config, *args, **kwargs):
        if policy == "fifo":
            raise Stop()
        return real(trace, policy, config, *args, **kwargs)

    monkeypatch.setattr(compare_module, "simulate", stop_at_fifo)
    with pytest.raises(Stop):
        compare(trace, policies, SWEEP_CONFIG, checkpoint=path)
    monkeypatch.setattr(compare_module, "simulate", real)
    resumed = compare(trace, policies, SWEEP_CONFIG, resume=path, executor="process")
    wall = ["solve_seconds_mean", "solve_seconds_max"]
    pd.testing.assert_frame_equal(full.table.drop(columns=wall), resumed.table.drop(columns=wall),
                                  check_exact=True)
    for policy in policies:
        pd.testing.assert_frame_equal(full.jobs[policy], resumed.jobs[policy], check_exact=True)
        pd.testing.assert_frame_equal(full.results[policy].rounds,
                                      resumed.results[policy].rounds, check_exact=True)
    with pytest.raises(CheckpointError, match="another compare"):
        compare(trace, policies[:2], SWEEP_CONFIG, resume=path)
    with pytest.raises(CheckpointError, match="another sweep"):
        sweep(resume=path)


def test_compare_and_sweep_cli_resume_and_refuse_a_foreign_checkpoint(tmp_path):
    trace = tmp_path / "trace.json"
    from schedopt.instance import save_instance

    save_instance(synthetic_trace(PERF, CLUSTER, 8, 4.0, 1, single_gpu=True, colocation=False),
                  trace)
    path = tmp_path / "runs.ckpt"
    base = ["compare", trace, "-p", "max_min_fairness,fifo", "--round-seconds", "1800", "--json"]
    code, first = run_cli(*base, "--checkpoint", path)
    assert code == 0 and path.exists()
    code, again = run_cli(*base, "--resume", path, "--executor", "process")
    assert code == 0
    rows = [json.loads(first)["policies"], json.loads(again)["policies"]]
    for row in (r for rs in rows for r in rs):
        row.pop("solve_seconds_mean"), row.pop("solve_seconds_max")
    assert rows[0] == rows[1]
    one_line_exit_2(["compare", trace, "-p", "fifo", "--resume", path], "another compare")
    one_line_exit_2(["compare", trace, "--resume", checkpoint_like(tmp_path)], "not a checkpoint")
    one_line_exit_2(["sweep", "--throughputs", ROOT / "instances" / "large-2000.json",
                     "--rates", "2", "--jobs", "5", "--resume", path], "another sweep")
    one_line_exit_2(["compare", trace, "--resume", tmp_path / "none"], "no such checkpoint")


def checkpoint_like(tmp_path: Path) -> Path:
    path = tmp_path / "garbage.ckpt"
    path.write_text('{"format": "schedopt-runs-checkpoint/1"')
    return path
