"""`schedopt simulate` and `schedopt place` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from schedopt.cli.main import main
from schedopt.instance import load_instance
from schedopt.simulation import SimulationConfig, simulate

ROOT = Path(__file__).resolve().parents[1]
SMALL = str(ROOT / "instances" / "small-heterogeneous.yaml")
TINY = str(ROOT / "instances" / "tiny.json")


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_simulate_json_matches_the_python_api(tmp_path):
    csv = tmp_path / "jobs.csv"
    result = run("simulate", SMALL, "-p", "max_min_fairness", "--mode", "gavel", "--json",
                 "--jobs-csv", str(csv))
    assert result.exit_code == 0
    doc = json.loads(result.output)
    expected = simulate(load_instance(SMALL), "max_min_fairness", SimulationConfig.gavel_compatible())
    assert doc["summary"]["average_jct_s"] == pytest.approx(expected.summary["average_jct_s"])
    assert len(doc["jobs"]) == 30 and doc["jobs"][0]["job"] == "j00"
    frame = pd.read_csv(csv, index_col="job")
    assert frame["jct_s"].mean() == pytest.approx(expected.summary["average_jct_s"])


def test_simulate_table_reports_hours():
    result = run("simulate", SMALL, "-p", "fifo")
    assert result.exit_code == 0
    assert "average_jct (h)" in result.output and "utilization v100" in result.output


def test_simulate_a_trace_without_total_steps_is_a_one_line_error(tmp_path):
    doc = json.loads(Path(TINY).read_text())
    del doc["jobs"][0]["total_steps"]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    result = run("simulate", str(path))
    assert result.exit_code == 2 and "need total_steps" in result.stderr


def test_place_prints_rounds_and_a_shrinking_error():
    result = run("place", SMALL, "-n", "100", "--show", "2", "--json")
    doc = json.loads(result.output)
    assert len(doc["rounds"]) == 2
    errors = {int(k): v for k, v in doc["error_after_rounds"].items()}
    assert errors[100] < errors[10] < errors[1]
    gpus = [g for placement in doc["rounds"] for gs in placement.values() for g in gs]
    assert all("/" in g for g in gpus)


COLOCATION = str(ROOT / "instances" / "colocation.json")


@pytest.mark.parametrize("mode", ["default", "gavel"])
def test_simulate_runs_a_packed_policy_with_space_sharing(mode):
    result = run("simulate", COLOCATION, "-p", "max_min_fairness_packed", "--mode", mode,
                 "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.output)
    make = SimulationConfig.gavel_compatible if mode == "gavel" else SimulationConfig
    expected = simulate(load_instance(COLOCATION), "max_min_fairness_packed", make())
    assert doc["summary"]["average_jct_s"] == pytest.approx(expected.summary["average_jct_s"])
    assert "learning" not in doc


def test_simulate_learns_throughputs_and_plots_how_the_error_fell(tmp_path):
    pytest.importorskip("matplotlib")
    plot = tmp_path / "learning.png"
    result = run("simulate", COLOCATION, "-p", "max_min_fairness_packed", "--json",
                 "--learn-throughputs", "--hide-pairs", "0.5", "--seed", "3",
                 "--learning-plot", str(plot))
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    config = SimulationConfig(learn_throughputs=True, hide_pairs=0.5, seed=3)
    expected = simulate(load_instance(COLOCATION), "max_min_fairness_packed", config)
    assert doc["summary"]["average_jct_s"] == pytest.approx(expected.summary["average_jct_s"])
    rows = doc["learning"]
    assert len(rows) == len(expected.learning) and rows[0]["time_s"] == 0.0
    assert rows[-1]["hidden_mre"] == pytest.approx(expected.learning["hidden_mre"].iloc[-1])
    assert plot.stat().st_size > 0


def test_learning_throughputs_with_a_policy_that_does_not_share_is_a_one_line_error(tmp_path):
    plot = tmp_path / "learning.png"
    result = run("simulate", COLOCATION, "-p", "max_min_fairness", "--learn-throughputs",
                 "--learning-plot", str(plot))
    assert result.exit_code == 2 and "max_min_fairness does not share GPUs" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not plot.exists()
    result = run("simulate", COLOCATION, "-p", "max_min_fairness_packed", "--learning-plot",
                 str(plot))
    assert result.exit_code == 2 and "--learning-plot needs --learn-throughputs" in result.stderr
