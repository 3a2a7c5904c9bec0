"""The CLI over the one engine: `simulate` replays any policy kind, `leases` and `allox` are its
aliases (same numbers), `-s` is the solver everywhere, policy options go through -o (old
options still work, with a deprecation line), `compare` takes any kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from schedopt.cli.main import main
from schedopt.instance import load_instance
from schedopt.simulation import SimulationConfig, simulate

ROOT = Path(__file__).resolve().parents[1]
LEASES = ROOT / "instances" / "chronus-leases.json"
ALLOX_40 = ROOT / "instances" / "allox-40.json"
TINY = ROOT / "instances" / "tiny.json"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def untimed(summary: dict) -> dict:
    """The summary without wall-clock timings (they differ from run to run)."""
    return {key: value for key, value in summary.items() if "seconds" not in key}


def test_simulate_replays_lease_and_queue_policies():
    doc = json.loads(run("simulate", LEASES, "-p", "srtf", "-o", "lease_seconds=600",
                         "--json").stdout)
    expected = simulate(load_instance(LEASES), "srtf",
                        SimulationConfig(policy_options={"lease_seconds": 600})).summary
    assert doc["kind"] == "leases" and untimed(doc["summary"]) == pytest.approx(untimed(expected))
    doc = json.loads(run("simulate", ALLOX_40, "-p", "allox", "-o", "alpha=0.5", "--json").stdout)
    assert doc["kind"] == "queues"
    assert doc["summary"]["average_jct_s"] == pytest.approx(2401.4412649036767, rel=1e-12)
    table = run("simulate", ALLOX_40, "-p", "drf")
    assert table.exit_code == 0 and "jain_share" in table.output


def test_leases_is_simulate_side_by_side():
    leases = json.loads(run("leases", LEASES, "-p", "edf", "-p", "srtf", "--json").stdout)
    assert [r["scheduler"] for r in leases["results"]] == ["edf", "srtf"]
    for row in leases["results"]:
        alone = json.loads(run("simulate", LEASES, "-p", row["scheduler"], "--json").stdout)
        assert untimed(row["summary"]) == untimed(alone["summary"])


def test_old_lease_options_map_onto_policy_options_with_a_deprecation_line():
    new = run("leases", LEASES, "-p", "edf", "-o", "lease_seconds=600",
              "-o", "resume_overhead_s=0", "--json")
    old = run("leases", LEASES, "--scheduler", "edf", "--lease-seconds", "600",
              "--resume-overhead", "0", "--json")
    assert old.exit_code == 0, old.output
    assert "--scheduler is deprecated" in old.stderr
    assert "--lease-seconds is deprecated; use -o lease_seconds=600" in old.stderr
    assert [untimed(r["summary"]) for r in json.loads(old.stdout)["results"]] == \
        [untimed(r["summary"]) for r in json.loads(new.stdout)["results"]]
    assert json.loads(new.stdout)["results"][0]["summary"]["leases"] > 74  # 1200 s leases: 74


def test_s_is_the_solver_on_leases_and_options_no_policy_takes_are_one_line_errors():
    bad = run("leases", LEASES, "-p", "chronus", "-s", "no_such_backend")
    assert bad.exit_code == 2 and bad.stderr.count("\n") == 1
    assert "no_such_backend" in bad.stderr
    bad = run("leases", LEASES, "-p", "edf", "-o", "horizon_leases=4")
    assert bad.exit_code == 2 and "no policy among edf takes option(s) horizon_leases" in bad.stderr
    bad = run("leases", LEASES, "-p", "max_min_fairness")
    assert bad.exit_code == 2 and "decides allocation" in bad.stderr


def test_allox_fifo_maps_to_fifo_queue_or_says_why_not():
    old = run("allox", ALLOX_40, "--scheduler", "fifo", "--json")
    assert old.exit_code == 0 and "'fifo' is now the policy 'fifo_queue'" in old.stderr
    new = run("allox", ALLOX_40, "-p", "fifo_queue", "--json")
    assert untimed(json.loads(old.stdout)["summary"]) == untimed(json.loads(new.stdout)["summary"])
    bad = run("allox", ALLOX_40, "-p", "fifo")
    assert bad.exit_code == 2 and bad.stderr.count("\n") == 1
    assert "fifo_queue" in bad.stderr
    alpha = run("allox", ALLOX_40, "--alpha", "0.5", "--json")
    assert "--alpha is deprecated; use -o alpha=0.5" in alpha.stderr
    assert untimed(json.loads(alpha.stdout)["summary"]) == \
        untimed(json.loads(run("allox", ALLOX_40, "-o", "alpha=0.5", "--json").stdout)["summary"])


def test_compare_takes_any_kind_and_module_references(monkeypatch):
    monkeypatch.chdir(ROOT)
    doc = json.loads(run("compare", LEASES, "-p", "edf,srtf,chronus", "--json").stdout)
    assert [r["policy"] for r in doc["policies"]] == ["edf", "srtf", "chronus"]
    # the same run as simulate's (whose numbers test_engine_baselines checks by hand and pins)
    alone = simulate(load_instance(LEASES), "edf").summary["slo_miss_ratio"]
    assert doc["policies"][0]["slo_miss_ratio"] == pytest.approx(alone, rel=1e-12)
    assert 0 < alone < 1
    table = run("compare", ALLOX_40, "-p", "allox,sjf")
    assert table.exit_code == 0 and "sjf" in table.output
    custom = run("simulate", TINY, "-p", "examples.custom_policy:raw_max_min", "--json")
    assert custom.exit_code == 0, custom.output
