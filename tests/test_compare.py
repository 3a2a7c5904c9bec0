"""Comparing policies: compare() is simulate() per policy, load_sweep() shares one seeded trace
among the policies at each rate, the plots draw what they say, and the CLI end to end."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import schedopt.compare as compare_module
from schedopt.cli.main import main
from schedopt.compare import compare, load_sweep, summary_row, window_jct
from schedopt.errors import SchedoptError
from schedopt.instance import save_instance
from schedopt.simulation import SimulationConfig, simulate
from schedopt.traces import gavel_cluster, load_performance, synthetic_trace

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "instances" / "large-2000.json"  # Gavel's measured throughputs, bundled
PERF = load_performance(BUNDLED, ["v100", "p100", "k80"], colocation=False)
CLUSTER = gavel_cluster({"v100": 2, "p100": 2, "k80": 2})
POLICIES = ["max_min_fairness", "max_min_fairness_agnostic", "fifo"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def small_trace(rate: float = 4.0, seed: int = 0, num_jobs: int = 12):
    return synthetic_trace(PERF, CLUSTER, num_jobs, rate, seed, single_gpu=True, colocation=False)


@pytest.fixture(scope="module")
def trace():
    return small_trace()


@pytest.fixture(scope="module")
def comparison(trace):
    return compare(trace, POLICIES)


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory, trace):
    path = tmp_path_factory.mktemp("traces") / "trace.json"
    save_instance(trace, path)
    return path


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_compare_rows_equal_each_policys_own_simulation(trace, comparison):
    table, jobs, _ = comparison
    assert list(table.index) == POLICIES and table.index.name == "policy"
    counts = {t: g.count for t, g in trace.cluster.gpu_types.items()}
    for policy in POLICIES:
        alone = simulate(trace, policy)
        expected = summary_row(alone.summary, counts)
        row = table.loc[policy]
        for key, value in expected.items():
            if key.startswith("solve_seconds"):
                continue  # wall-clock times of the solver differ between runs
            if value is None:
                assert pd.isna(row[key]), key
            else:
                assert row[key] == pytest.approx(value, rel=1e-12), (policy, key)
        pd.testing.assert_frame_equal(jobs[policy], alone.jobs)
    # heterogeneity-aware max-min fairness beats the agnostic one on this trace
    assert table.loc["max_min_fairness", "average_jct_s"] < table.loc["max_min_fairness_agnostic",
                                                                      "average_jct_s"]


def test_overall_utilization_is_busy_gpu_time_over_all_gpus():
    summary = {"utilization": {"a": 1.0, "b": 0.25}, "jobs": 3}
    row = summary_row(summary, {"a": 1, "b": 3})
    assert row["utilization"] == pytest.approx((1 * 1.0 + 3 * 0.25) / 4)
    assert row["utilization_a"] == 1.0 and row["utilization_b"] == 0.25 and row["jobs"] == 3


def test_compare_refuses_unknown_and_repeated_policies_before_simulating(trace):
    with pytest.raises(SchedoptError, match="unknown policy 'nope'"):
        compare(trace, ["max_min_fairness", "nope"])
    with pytest.raises(SchedoptError, match="more than once: fifo"):
        compare(trace, ["fifo", "fifo"])
    with pytest.raises(SchedoptError, match="at least one policy"):
        compare(trace, [])


def test_load_sweep_simulates_every_policy_on_one_seeded_trace_per_rate(monkeypatch):
    seen = []  # (arrival rate in the trace's name, policy, id of the trace object)
    real = compare_module.simulate

    def spy(trace, policy, config=SimulationConfig(), progress=False):
        seen.append((trace.name, policy, id(trace)))
        return real(trace, policy, config, progress)

    monkeypatch.setattr(compare_module, "simulate", spy)
    rates, policies = [2.0, 8.0], ["max_min_fairness", "fifo"]
    sweep = load_sweep(PERF, CLUSTER, rates, policies, num_jobs=12, seed=5, single_gpu=True)
    assert [(r["rate_jobs_per_hour"], r["policy"]) for _, r in sweep.iterrows()] == [
        (rate, policy) for rate in rates for policy in policies]
    assert len(seen) == 4
    for rate_index in range(2):
        at_rate = seen[2 * rate_index: 2 * rate_index + 2]
        assert at_rate[0][2] == at_rate[1][2]  # the same Instance for both policies
        assert at_rate[0][0] == at_rate[1][0]
    monkeypatch.setattr(compare_module, "simulate", real)
    # ... and that trace is synthetic_trace(seed) at that rate: same numbers from scratch
    for rate in rates:
        table = compare(small_trace(rate, seed=5), policies).table
        got = sweep.set_index(["rate_jobs_per_hour", "policy"])
        for policy in policies:
            assert got.loc[(rate, policy), "average_jct_s"] == pytest.approx(
                table.loc[policy, "average_jct_s"], rel=1e-12)
            assert got.loc[(rate, policy), "average_jct_h"] == pytest.approx(
                table.loc[policy, "average_jct_s"] / 3600, rel=1e-12)
            assert got.loc[(rate, policy), "jobs_measured"] == 12


def test_load_sweep_window_averages_jobs_start_to_end_by_arrival():
    sweep = load_sweep(PERF, CLUSTER, [4.0], ["max_min_fairness"], num_jobs=12, seed=0,
                       window=(2, 10), single_gpu=True)
    jobs = compare(small_trace(4.0), ["max_min_fairness"]).jobs["max_min_fairness"]
    by_arrival = jobs.sort_values("arrival_s", kind="stable")["jct_s"].to_numpy()
    assert sweep.loc[0, "jobs_measured"] == 8
    assert sweep.loc[0, "average_jct_s"] == pytest.approx(by_arrival[2:10].mean(), rel=1e-12)
    np.testing.assert_array_equal(window_jct(jobs, (2, 10)), by_arrival[2:10])
    with pytest.raises(SchedoptError, match="window 5:13"):
        load_sweep(PERF, CLUSTER, [4.0], ["fifo"], num_jobs=12, window=(5, 13), single_gpu=True)


def test_jct_cdf_draws_one_step_line_per_policy(comparison):
    from schedopt.plots import jct_cdf

    fig = jct_cdf(comparison.jobs)
    ax = fig.axes[0]
    assert len(ax.get_lines()) == len(POLICIES)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == POLICIES
    assert "hours" in ax.get_xlabel() and "Fraction of jobs" == ax.get_ylabel()
    for line, policy in zip(ax.get_lines(), POLICIES):
        y = np.asarray(line.get_ydata())
        assert y[-1] == pytest.approx(1.0) and np.all(np.diff(y) >= 0)
        x = np.sort(comparison.jobs[policy]["jct_s"].to_numpy()) / 3600
        np.testing.assert_allclose(line.get_xdata(), x)


def test_jct_vs_load_draws_one_marked_line_per_policy_in_hours():
    from matplotlib.figure import Figure

    from schedopt.plots import jct_vs_load

    sweep = pd.DataFrame({"rate_jobs_per_hour": [1, 2, 1, 2], "policy": ["a", "a", "b", "b"],
                          "average_jct_s": [3600, 7200, 5400, 10800]})
    fig = jct_vs_load(sweep)
    ax = fig.axes[0]
    assert isinstance(fig, Figure) and len(ax.get_lines()) == 2
    assert ax.get_xlabel() == "Input job rate (jobs/hour)"
    assert ax.get_ylabel() == "Average JCT (hours)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]
    assert all(line.get_marker() not in (None, "None", "") for line in ax.get_lines())
    np.testing.assert_allclose(ax.get_lines()[1].get_ydata(), [1.5, 3.0])
    # into an axes of the caller's own
    other = Figure().add_subplot()
    assert jct_vs_load(sweep, ax=other) is other.figure


def test_plots_without_matplotlib_say_how_to_install_it(monkeypatch):
    from schedopt.plots import jct_vs_load

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(SchedoptError, match=r"pip install 'schedopt\[plot\]'"):
        jct_vs_load(pd.DataFrame({"rate_jobs_per_hour": [1], "policy": ["a"],
                                  "average_jct_s": [1.0]}))


def test_cli_compare_prints_a_table_and_draws_the_cdf(trace_file, comparison, tmp_path):
    out = tmp_path / "cdf.png"
    result = cli("compare", trace_file, "--policies", ",".join(POLICIES), "--plot", out)
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == PNG_MAGIC
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("policy"))
    assert "avg JCT (h)" in header and "rho max" in header and "utilization" in header
    row = next(line for line in lines if line.startswith("max_min_fairness "))
    assert f"{comparison.table.loc['max_min_fairness', 'average_jct_s'] / 3600:.4g}" in row


def test_cli_compare_json_has_every_metric_in_seconds(trace_file, comparison):
    result = cli("compare", trace_file, "-p", ",".join(POLICIES), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["mode"] == "default" and doc["jobs"] == 12
    assert [row["policy"] for row in doc["policies"]] == POLICIES
    for row in doc["policies"]:
        expected = comparison.table.loc[row["policy"]]
        assert row["average_jct_s"] == pytest.approx(expected["average_jct_s"], rel=1e-12)
        assert row["utilization"] == pytest.approx(expected["utilization"], rel=1e-12)


def test_cli_compare_gavel_mode_matches_the_gavel_compatible_config(trace_file, trace):
    result = cli("compare", trace_file, "-p", "max_min_fairness", "--mode", "gavel", "--json")
    doc = json.loads(result.stdout)
    alone = simulate(trace, "max_min_fairness", SimulationConfig.gavel_compatible())
    assert doc["policies"][0]["average_jct_s"] == pytest.approx(alone.summary["average_jct_s"])


def test_cli_sweep_table_json_and_plot(tmp_path):
    out = tmp_path / "load.png"
    args = ["sweep", "--throughputs", BUNDLED, "--rates", "2,8", "--jobs", 12,
            "--cluster", "v100=2,p100=2,k80=2", "--single-gpu", "-p", "max_min_fairness,fifo"]
    result = cli(*args, "--plot", out)
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert "rate (jobs/h)  max_min_fairness  fifo" in result.stdout
    doc = json.loads(cli(*args, "--json", "--window", "2:10").stdout)
    assert doc["cluster"] == {"v100": 2, "p100": 2, "k80": 2} and doc["window"] == [2, 10]
    assert [(r["rate_jobs_per_hour"], r["policy"]) for r in doc["rows"]] == [
        (2.0, "max_min_fairness"), (2.0, "fifo"), (8.0, "max_min_fairness"), (8.0, "fifo")]
    direct = load_sweep(PERF, CLUSTER, [2.0, 8.0], ["max_min_fairness", "fifo"], 12, 0,
                        window=(2, 10), single_gpu=True)
    np.testing.assert_allclose([r["average_jct_s"] for r in doc["rows"]], direct["average_jct_s"],
                               rtol=1e-12)


@pytest.mark.parametrize("args, message", [
    (["compare", "{trace}", "-p", "max_min_fairness,nope"], "unknown policy 'nope'"),
    (["compare", "missing.json"], "missing.json: cannot read the file"),
    (["compare", "{trace}", "--plot", "{tmp}/cdf.bmpx"], "unknown image suffix '.bmpx'"),
    (["sweep", "--throughputs", str(BUNDLED), "--rates", "1,x"], "--rates: expected jobs/hour"),
    (["sweep", "--throughputs", str(BUNDLED), "--rates", "1", "--jobs", "5", "--window", "3:9"],
     "window 3:9"),
    (["sweep", "--throughputs", str(BUNDLED), "--rates", "1", "--cluster", "v100=x"], "--cluster"),
])
def test_cli_errors_are_one_line_and_exit_2(args, message, trace_file, tmp_path):
    args = [a.format(trace=trace_file, tmp=tmp_path) for a in args]
    result = cli(*args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    assert not list(tmp_path.iterdir())  # nothing simulated, nothing drawn
