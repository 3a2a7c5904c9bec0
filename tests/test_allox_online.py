"""Online AlloX and its baselines in the event-driven simulator (schedopt.simulation.allox_sim):
the worked example of docs/formulations.md §4, valid non-preemptive schedules, AlloX never
worse than SJF when every job is there at time 0, the alpha trade-off, and the CLI."""

from __future__ import annotations

import importlib.util
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from schedopt.cli.main import main
from schedopt.errors import SchedoptError
from schedopt.instance import instance_to_dict, load_instance, parse_instance
from schedopt.instance.model import Instance
from schedopt.plots import allox_alpha_tradeoff
from schedopt.simulation.allox_sim import (SCHEDULERS, AlloxTrace, alpha_sweep, jain_index,
                                           share_fairness, simulate_allox)

ROOT = Path(__file__).resolve().parents[1]
ALLOX_40 = ROOT / "instances" / "allox-40.json"


# ------------------------------------------------------------------ instances

def hybrid_instance(gpu_times, cpu_times, gpus=1, cpus=1, arrivals=None, users=None) -> Instance:
    """Jobs J0.. on `gpus` GPUs of one type (seconds = gpu_times, throughput 1 step/s) and
    `cpus` CPU machines (seconds = cpu_times; None = cannot run on a CPU)."""
    arrivals = arrivals or [0.0] * len(gpu_times)
    jobs = []
    for m, (g, a) in enumerate(zip(gpu_times, arrivals)):
        job = {"id": f"J{m}", "total_steps": float(g), "throughput": {"g": 1.0},
               "arrival_time": float(a)}
        if users is not None:
            job["user"] = users[m]
        jobs.append(job)
    cluster = {"gpu_types": {"g": {"count": gpus}}}
    if cpus:
        cluster["cpu_machines"] = [{"id": f"c{i}", "cores": 8} for i in range(cpus)]
    cpu_time = {f"J{m}": float(c) for m, c in enumerate(cpu_times) if c is not None}
    return parse_instance({"format": "schedopt-instance/1", "cluster": cluster, "jobs": jobs,
                           "performance": {"cpu_time": cpu_time} if cpu_time else {}})


# docs/formulations.md §4: p(GPU, CPU) of J0..J5, all at t=0, one GPU and one CPU machine
WORKED = [(2, 10), (3, 6), (4, 5), (1, 12), (6, 7), (5, 20)]


def worked_example():
    return hybrid_instance([g for g, _ in WORKED], [c for _, c in WORKED])


def run_order(result, device: str) -> list[str]:
    jobs = result.jobs[result.jobs["device"] == device]
    return list(jobs.sort_values("start_s").index)


def assert_valid_schedule(result, trace: AlloxTrace) -> None:
    """Every job runs exactly once, after its arrival, for exactly its processing time on its
    machine, and no machine runs two jobs at once."""
    jobs = result.jobs
    assert list(jobs.index) == list(trace.ids)
    assert np.isfinite(jobs["start_s"]).all() and np.isfinite(jobs["completion_s"]).all()
    column = np.array([trace.machines.index(name) for name in jobs["machine"]])
    expected = trace.processing[np.arange(len(jobs)), column]
    np.testing.assert_allclose(jobs["completion_s"] - jobs["start_s"], expected, rtol=1e-12)
    assert (jobs["start_s"] >= jobs["arrival_s"] - 1e-9).all()
    np.testing.assert_allclose(jobs["jct_s"], jobs["completion_s"] - jobs["arrival_s"])
    for _, runs in jobs.groupby("machine"):
        runs = runs.sort_values("start_s")
        assert (runs["start_s"].to_numpy()[1:] >= runs["completion_s"].to_numpy()[:-1] - 1e-9).all()


def brute_force_total_completion(processing: np.ndarray) -> float:
    """All jobs at t=0, every machine free: the minimum total completion time over all
    assignments of jobs to machines, each machine running its jobs shortest first."""
    n, K = processing.shape
    best = np.inf
    for assignment in itertools.product(range(K), repeat=n):
        total = 0.0
        for k in range(K):
            times = np.sort(processing[[m for m in range(n) if assignment[m] == k], k])
            total += np.cumsum(times).sum()
        best = min(best, total)
    return best


@st.composite
def small_hybrid(draw, all_at_zero: bool, max_jobs: int = 7):
    n = draw(st.integers(1, max_jobs))
    gpus = draw(st.integers(1, 2))
    cpus = draw(st.integers(0, 3 - gpus))
    gpu = draw(st.lists(st.integers(1, 20), min_size=n, max_size=n))
    cpu = draw(st.lists(st.one_of(st.none(), st.integers(1, 40)), min_size=n, max_size=n))
    arrivals = None if all_at_zero else draw(st.lists(st.integers(0, 30), min_size=n, max_size=n))
    users = draw(st.lists(st.sampled_from("abc"), min_size=n, max_size=n))
    return hybrid_instance(gpu, cpu, gpus, cpus, arrivals, users)


def at_time_zero(instance):
    doc = instance_to_dict(instance)
    for job in doc["jobs"]:
        job["arrival_time"] = 0.0
    return parse_instance(doc)


# ------------------------------------------------------------------ the worked example

def test_worked_example_online_gives_total_jct_38_and_the_stated_queues():
    result = simulate_allox(worked_example(), "allox")
    assert result.jobs["jct_s"].sum() == pytest.approx(38.0)
    assert result.summary["average_jct_s"] == pytest.approx(38.0 / 6)
    assert run_order(result, "gpu") == ["J3", "J0", "J1", "J5"]
    assert run_order(result, "cpu") == ["J2", "J4"]
    np.testing.assert_allclose(result.jobs.loc[["J3", "J0", "J1", "J5", "J2", "J4"], "completion_s"],
                               [1, 3, 6, 11, 5, 12])
    assert result.summary["makespan_s"] == pytest.approx(12.0)
    assert result.summary["utilization_gpu"] == pytest.approx(11 / 12)
    assert result.summary["utilization_cpu"] == pytest.approx(1.0)


def test_worked_example_baselines_follow_their_definitions():
    instance = worked_example()
    sjf = simulate_allox(instance, "sjf")  # every job is faster on the GPU: SPT there, CPU idle
    assert run_order(sjf, "gpu") == ["J3", "J0", "J1", "J2", "J5", "J4"]
    assert sjf.jobs["jct_s"].sum() == pytest.approx(1 + 3 + 6 + 10 + 15 + 21)
    fifo = simulate_allox(instance, "fifo_queue")  # arrival order, fastest free machine
    assert run_order(fifo, "gpu") == ["J0", "J2", "J3", "J5"]
    assert run_order(fifo, "cpu") == ["J1", "J4"]
    assert fifo.jobs["jct_s"].sum() == pytest.approx(2 + 6 + 6 + 7 + 13 + 12)


def test_drf_gives_the_free_machine_to_the_lowest_dominant_share_and_its_shortest_job():
    # 1 GPU + 1 CPU; alice: a0 (long), a1 (short); bob: b0. At t=0 both shares are 0: the GPU
    # goes to alice (tie: less received, then user order), her shortest job a1; the CPU then goes
    # to bob (alice holds the only GPU). At t=1 alice holds nothing and gets the GPU: a0.
    instance = hybrid_instance([50, 1, 4], [60, 2, 8], users=["alice", "alice", "bob"])
    result = simulate_allox(instance, "drf")
    jobs = result.jobs
    assert (jobs.loc["J1", "device"], jobs.loc["J1", "start_s"]) == ("gpu", 0.0)
    assert (jobs.loc["J2", "device"], jobs.loc["J2", "start_s"]) == ("cpu", 0.0)
    assert (jobs.loc["J0", "device"], jobs.loc["J0", "start_s"]) == ("gpu", 1.0)


def test_fairness_filter_lets_only_the_lowest_share_user_into_the_matching():
    # One GPU. alice's a0 runs 0..10; at t=1 alice's short a1 and bob's longer b0 arrive. At
    # t=10 alice has 10 machine-seconds, bob 0: with alpha = 1/2 only bob's job enters.
    instance = hybrid_instance([10, 1, 5], [None] * 3, cpus=0, arrivals=[0, 1, 1],
                               users=["alice", "alice", "bob"])
    fair = simulate_allox(instance, "allox", alpha=0.5)
    assert fair.jobs.loc["J2", "start_s"] == 10.0 and fair.jobs.loc["J1", "start_s"] == 15.0
    assert fair.decisions["candidates"].tolist() == [1, 1, 1]
    fast = simulate_allox(instance, "allox", alpha=1.0)
    assert fast.jobs.loc["J1", "start_s"] == 10.0 and fast.jobs.loc["J2", "start_s"] == 11.0
    assert fast.summary["average_jct_s"] < fair.summary["average_jct_s"]


# ------------------------------------------------------------------ properties

@settings(max_examples=60, deadline=None)
@given(small_hybrid(all_at_zero=True))
def test_allox_at_time_zero_is_the_offline_optimum_and_never_worse_than_sjf(instance):
    trace = AlloxTrace.from_instance(instance)
    allox = simulate_allox(trace, "allox")
    assert_valid_schedule(allox, trace)
    total = allox.jobs["jct_s"].sum()
    assert total == pytest.approx(brute_force_total_completion(trace.processing), rel=1e-9)
    for baseline in ("sjf", "fifo_queue", "drf"):
        assert total <= simulate_allox(trace, baseline).jobs["jct_s"].sum() * (1 + 1e-9)


@settings(max_examples=40, deadline=None)
@given(small_hybrid(all_at_zero=False, max_jobs=8), st.sampled_from([0.3, 0.5, 1.0]))
def test_every_scheduler_runs_each_job_once_for_its_time_without_overlap(instance, alpha):
    trace = AlloxTrace.from_instance(instance)
    for scheduler in SCHEDULERS:
        assert_valid_schedule(simulate_allox(trace, scheduler, alpha), trace)


@settings(max_examples=30, deadline=None)
@given(small_hybrid(all_at_zero=False, max_jobs=8))
def test_fifo_and_drf_never_leave_a_machine_idle_while_a_job_it_can_run_waits(instance):
    trace = AlloxTrace.from_instance(instance)
    for scheduler in ("fifo_queue", "drf"):
        jobs = simulate_allox(trace, scheduler).jobs
        for k, name in enumerate(trace.machines):
            runs = jobs[jobs["machine"] == name].sort_values("start_s")
            idle_from = np.concatenate([[-np.inf], runs["completion_s"]])
            idle_to = np.concatenate([runs["start_s"], [np.inf]])
            can = np.isfinite(trace.processing[:, k])
            for lo, hi in zip(idle_from, idle_to):  # machine k idle on (lo, hi)
                waiting = can & (np.maximum(trace.arrival, lo) < np.minimum(jobs["start_s"], hi))
                assert not waiting.any(), (scheduler, name, lo, hi)


# ------------------------------------------------------------------ the bundled trace

def allox_40_generator():
    """benchmarks/allox_40.py as a module (it draws instances/allox-40.json)."""
    spec = importlib.util.spec_from_file_location("allox_40", ROOT / "benchmarks" / "allox_40.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    return generator


def test_bundled_allox_40_is_what_its_generator_writes():
    generator = allox_40_generator()
    assert ALLOX_40.read_text() == json.dumps(generator.allox_40_document(), indent=2) + "\n"
    instance = load_instance(ALLOX_40)
    assert len(instance.jobs) == 40 and len(instance.cluster.cpu_machines) == 8
    assert sum(t.count for t in instance.cluster.gpu_types.values()) == 4
    assert len({job.user for job in instance.jobs}) == 4
    trace = AlloxTrace.from_instance(instance)
    speedup = trace.processing[:, ~trace.is_gpu].min(axis=1) / trace.processing[:, trace.is_gpu].min(axis=1)
    assert speedup.max() > 6 and speedup.min() < 1  # some jobs 6-12x faster on a GPU, some not


def test_on_allox_40_every_scheduler_is_valid_and_allox_has_the_lowest_average_jct():
    trace = AlloxTrace.from_instance(load_instance(ALLOX_40))
    average = {}
    for scheduler in SCHEDULERS:
        result = simulate_allox(trace, scheduler)
        assert_valid_schedule(result, trace)
        average[scheduler] = result.summary["average_jct_s"]
    assert average["allox"] == min(average.values())
    assert average["sjf"] < min(average["fifo_queue"], average["drf"])


def test_on_allox_40_with_every_job_at_time_zero_allox_beats_sjf():
    instance = at_time_zero(load_instance(ALLOX_40))
    allox = simulate_allox(instance, "allox").summary["average_jct_s"]
    assert allox <= simulate_allox(instance, "sjf").summary["average_jct_s"]


def test_alpha_sweep_trades_average_jct_for_fairness_and_plots_it(tmp_path):
    sweep = alpha_sweep(load_instance(ALLOX_40), [0.25, 0.5, 0.75, 1.0])
    assert list(sweep["alpha"]) == [0.25, 0.5, 0.75, 1.0]
    jct, fair = sweep["average_jct_s"].to_numpy(), sweep["jain_share"].to_numpy()
    assert jct[-1] == jct.min() and jct[0] > jct[-1] * 1.1  # pure JCT at alpha = 1
    assert fair[0] > fair[-1]  # fairer shares when fewer users enter each matching
    assert ((0 < sweep[["jain_share", "jain_user_jct"]]) & (sweep[["jain_share", "jain_user_jct"]] <= 1)).all().all()
    fig = allox_alpha_tradeoff(sweep)
    left, right = fig.axes
    assert left.get_ylabel() == "Average JCT (s)" and "Jain" in right.get_ylabel()
    np.testing.assert_allclose(left.lines[0].get_ydata(), jct)
    fig.savefig(tmp_path / "tradeoff.png")
    assert (tmp_path / "tradeoff.png").stat().st_size > 0


def test_alpha_trade_off_holds_on_average_over_five_drawn_traces():
    # one 40-job trace is noisy (alpha = 0.75 rarely filters anyone with 4 users); the mean is not
    generator = allox_40_generator()
    sweeps = [alpha_sweep(parse_instance(generator.allox_40_document(seed)), [0.25, 0.5, 1.0])
              for seed in range(5)]
    mean = sum(sweep.set_index("alpha") for sweep in sweeps) / len(sweeps)
    assert mean.loc[1.0, "average_jct_s"] < mean.loc[0.5, "average_jct_s"] < mean.loc[0.25, "average_jct_s"]
    assert mean.loc[1.0, "jain_share"] < mean.loc[0.5, "jain_share"] < mean.loc[0.25, "jain_share"]


# ------------------------------------------------------------------ metrics and errors

def test_jain_index_and_share_fairness_on_hand_cases():
    assert jain_index([3, 3, 3]) == pytest.approx(1.0)
    assert jain_index([1, 0, 0, 0]) == pytest.approx(0.25)
    assert jain_index([1, 3]) == pytest.approx(16 / 20)
    assert jain_index([]) is None
    # two users each running one job on its own machine from t=0: equal shares all the time
    equal = simulate_allox(hybrid_instance([4, 4], [4, 4], users=["a", "b"]), "fifo_queue")
    assert share_fairness(equal.jobs) == pytest.approx(1.0)
    # one machine: a runs 0..4 while b waits with share 0 (Jain 1/2), then b alone (1)
    serial = simulate_allox(hybrid_instance([4, 4], [None, None], cpus=0, users=["a", "b"]), "fifo_queue")
    assert share_fairness(serial.jobs) == pytest.approx((4 * 0.5 + 4 * 1.0) / 8)


def test_empty_trace_and_unknown_names():
    empty = simulate_allox(hybrid_instance([], []), "allox")
    assert empty.summary["jobs"] == 0 and empty.summary["jain_share"] is None
    with pytest.raises(SchedoptError, match="unknown AlloX scheduler 'srpt'"):
        simulate_allox(worked_example(), "srpt")
    for alpha in (0.0, 1.5):
        with pytest.raises(SchedoptError, match=r"alpha must be in \(0, 1\]"):
            simulate_allox(worked_example(), "allox", alpha)
    with pytest.warns(DeprecationWarning, match="'fifo' is now the policy 'fifo_queue'"):
        renamed = simulate_allox(worked_example(), "fifo")
    assert renamed.scheduler == "fifo_queue"
    assert renamed.summary == simulate_allox(worked_example(), "fifo_queue").summary
    trace = AlloxTrace.from_instance(worked_example())
    with pytest.raises(SchedoptError, match="J1 can run on no machine"):
        AlloxTrace(trace.ids, trace.arrival, np.where(np.arange(6)[:, None] == 1, np.inf, trace.processing),
                   trace.machines, trace.is_gpu, trace.users, trace.user)


# ------------------------------------------------------------------ CLI

def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_cli_table_and_json_match_the_python_api():
    expected = simulate_allox(load_instance(ALLOX_40), "drf").summary
    table = run("allox", ALLOX_40, "-p", "drf")
    assert table.exit_code == 0 and "scheduler drf" in table.output
    assert f"{expected['average_jct_s']:.6g}" in table.output and "utilization_cpu" in table.output
    doc = json.loads(run("allox", ALLOX_40, "-p", "drf", "--json").output)
    assert doc["summary"]["average_jct_s"] == pytest.approx(expected["average_jct_s"])
    assert len(doc["jobs"]) == 40 and {"start_s", "machine", "user"} <= set(doc["jobs"][0])


def test_cli_sweep_prints_the_tradeoff_and_writes_the_plot(tmp_path):
    png = tmp_path / "alpha.png"
    result = run("allox", ALLOX_40, "--sweep", "0.5,1", "--plot", png)
    assert result.exit_code == 0 and png.stat().st_size > 0
    lines = result.output.splitlines()
    assert "Jain (shares)" in lines[2] and len(lines) == 8 and lines[-1] == f"wrote {png}"
    doc = json.loads(run("allox", ALLOX_40, "--sweep", "0.5,1", "--json").output)
    assert [row["alpha"] for row in doc["rows"]] == [0.5, 1.0]


@pytest.mark.parametrize("args, message", [
    (["--alpha", "0"], "--alpha must be in (0, 1]"),
    (["--sweep", "0.5,x"], "--sweep expects comma-separated numbers"),
    (["--sweep", "1.5"], "--sweep expects comma-separated numbers"),
    (["--plot", "x.png"], "--plot draws the alpha sweep: give --sweep too"),
])
def test_cli_errors_are_one_line_with_exit_code_2(args, message):
    result = run("allox", ALLOX_40, *args)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr
