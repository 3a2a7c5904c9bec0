"""Resumable lease runs: chronus, edf and srtf interrupted at random lease boundaries and resumed
from their checkpoints end with exactly the uninterrupted run (every per-job number, each job's
admission, every lease's decision; only the measured decision seconds differ, as between any two
runs). Chronus's memory (admitted jobs, reservations) travels in the checkpoint: dropping it on
resume changes the run."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from schedopt.cli.main import main
from schedopt.instance import load_instance
from schedopt.simulation import CheckpointError, CheckpointPlan, SimulationConfig, simulate
from schedopt.simulation.checkpoint import decode
from test_resume import interrupted_then_resumed as resumed_run

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "instances" / "chronus-leases.json"
LEASES = load_instance(TRACE)
WALL = {"decide_seconds_mean", "decide_seconds_max"}  # measured, differ run to run
CONFIG = SimulationConfig()  # 20-min leases: 73 boundaries on the bundled trace


def assert_same_lease_run(a, b) -> None:
    pd.testing.assert_frame_equal(a.jobs, b.jobs, check_exact=True)
    pd.testing.assert_frame_equal(a.leases.drop(columns="decide_s"),
                                  b.leases.drop(columns="decide_s"), check_exact=True)
    differ = {k for k in a.summary if k not in WALL
              and json.dumps(a.summary[k]) != json.dumps(b.summary[k])}
    assert not differ, {k: (a.summary[k], b.summary[k]) for k in differ}
    assert set(a.summary) == set(b.summary)


def interrupted_then_resumed(policy: str, path: Path, at: list[int], every: int = 3):
    """The bundled lease trace interrupted at boundaries `at` and resumed (test_resume's)."""
    return resumed_run(policy, CONFIG, path, at, every, trace=LEASES)


@pytest.fixture(scope="module")
def full_runs():
    return {p: simulate(LEASES, p, CONFIG) for p in ("chronus", "edf", "srtf")}


@pytest.mark.parametrize("policy", ["chronus", "edf", "srtf"])
def test_lease_runs_resumed_at_random_boundaries_equal_the_uninterrupted_run(tmp_path, policy,
                                                                             full_runs):
    full = full_runs[policy]
    boundaries = len(full.leases)
    assert boundaries >= 10
    rng = random.Random(policy)
    for trial in range(2):
        at = sorted(rng.sample(range(1, boundaries), 2))
        path = tmp_path / f"{trial}.ckpt"
        resumed = interrupted_then_resumed(policy, path, at)
        assert_same_lease_run(full, resumed)
    if policy == "chronus":
        assert full.jobs["admitted"].any()  # admissions are part of what is compared
        admitted = full.jobs[full.jobs["admitted"]]
        assert (admitted["value_earned"] > 0).all()  # each met one of its deadline options


def test_the_checkpoint_holds_chronus_admissions_and_reservations(tmp_path, full_runs):
    path = tmp_path / "run.ckpt"
    full = full_runs["chronus"]
    # the boundary after the first admission: the memory holds it and its reservation
    first = int(full.jobs.loc[full.jobs["admitted"], "arrival_s"].min() // 1200) + 2
    interrupted_then_resumed("chronus", path, [first], every=1)
    memory = decode(json.loads(path.read_text())["state"]["memory"])
    assert memory["admitted"].any()
    reserved = memory["reserved"]
    assert all(isinstance(k, int) and isinstance(v, tuple) for k, v in reserved.items())
    # the memory decides the run: resumed without it, chronus forgets what it admitted
    doc = json.loads(path.read_text())
    doc["state"]["memory"] = {}
    path.write_text(json.dumps(doc))
    forgetful = simulate(LEASES, "chronus", CONFIG, resume=path)
    assert not forgetful.jobs["admitted"].equals(full.jobs["admitted"]) or \
        not forgetful.jobs["completion_s"].equals(full.jobs["completion_s"])


def test_a_lease_checkpoint_of_other_options_or_another_kind_is_refused(tmp_path):
    path = tmp_path / "run.ckpt"
    interrupted_then_resumed("edf", path, [4])
    with pytest.raises(CheckpointError, match="other options"):
        simulate(LEASES, "srtf", CONFIG, resume=path)
    with pytest.raises(CheckpointError, match="other options"):
        simulate(LEASES, "edf", SimulationConfig(policy_options={"lease_seconds": 300.0}),
                 resume=path)
    queues = load_instance(ROOT / "instances" / "allox-40.json")
    plan = CheckpointPlan(tmp_path / "q.ckpt", every_events=1)
    simulate(queues, "sjf", checkpoint=plan)
    with pytest.raises(CheckpointError):
        simulate(LEASES, "edf", CONFIG, resume=tmp_path / "q.ckpt")


# --------------------------------------------------------------------------------- the CLI


def run_cli(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


def test_cli_simulate_chronus_checkpoints_and_resumes_to_the_same_json(tmp_path, monkeypatch):
    import schedopt.simulation.leases_loop as loop

    base = ["simulate", TRACE, "-p", "chronus", "--json", "--no-progress"]
    code, out = run_cli(*base)
    assert code == 0, out
    full = json.loads(out)
    path = tmp_path / "run.ckpt"
    real, calls = loop._boundary, [0]

    def boundary_then_stop(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 7:
            raise KeyboardInterrupt()
        return real(*args, **kwargs)

    monkeypatch.setattr(loop, "_boundary", boundary_then_stop)
    code, out = run_cli(*base, "--checkpoint", path, "--checkpoint-every", "2")
    assert code == 130 and path.exists(), out
    assert json.loads(path.read_text())["loop"] == "leases"
    monkeypatch.setattr(loop, "_boundary", real)
    code, out = run_cli(*base, "--resume", path)
    assert code == 0, out
    resumed = json.loads(out)
    assert resumed["jobs"] == full["jobs"]
    assert {k: v for k, v in resumed["summary"].items() if k not in WALL} == \
        {k: v for k, v in full["summary"].items() if k not in WALL}
    code, out = run_cli(*base, "-o", "lease_seconds=300", "--resume", path)
    assert code == 2 and out.count("\n") == 1 and "other options" in out, out
