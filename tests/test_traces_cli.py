"""`schedopt import ...` end to end through click's CliRunner; outputs load with load_instance."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from schedopt.cli.importers import import_group
from schedopt.cli.main import main
from schedopt.instance import load_instance

SHARED = Path(__file__).resolve().parents[2] / "shared" / "trace-samples"
TABLE = SHARED / "gavel" / "simulation_throughputs.json"
TRACE = SHARED / "gavel" / "max_min_fairness.trace"
CSV = SHARED / "pollux" / "philly-first1000.csv"
needs_samples = pytest.mark.skipif(not TABLE.exists(), reason="../shared/trace-samples not present")


def run(*args: str, group=import_group):
    result = CliRunner().invoke(group, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@needs_samples
def test_gavel_throughputs_writes_a_performance_only_instance(tmp_path):
    out = tmp_path / "perf.json"
    code, _, err = run("gavel-throughputs", TABLE, "-o", out)
    assert code == 0, err
    inst = load_instance(out)
    assert inst.jobs == () and len(inst.performance.throughput) == 83
    assert {t.name: (t.count, t.gpus_per_node) for t in inst.cluster.gpu_types.values()} == {
        "v100": (8, 4), "p100": (16, 4), "k80": (24, 8)}
    assert len(inst.performance.colocated) == 3 * 921  # every equal-scale-factor pair, [0, 0] kept
    assert err.strip() == f"wrote {out}: 0 jobs, 48 GPUs (8 v100, 16 p100, 24 k80), 83 job types"
    code, _, err = run("gavel-throughputs", TABLE, "-o", tmp_path / "two.yaml", "--gpu-types",
                       "v100,k80", "--gpus-per-node", "k80=4", "--no-colocation")
    inst = load_instance(tmp_path / "two.yaml")
    assert code == 0 and set(inst.cluster.gpu_types) == {"v100", "k80"}
    assert inst.cluster.gpu_types["k80"].gpus_per_node == 4 and inst.performance.colocated == ()


@needs_samples
def test_gavel_trace_through_the_main_command(tmp_path):
    out = tmp_path / "trace.yaml"
    code, _, err = run("import", "gavel-trace", TRACE, "--throughputs", TABLE, "-o", out, group=main)
    assert code == 0, err
    assert err.strip() == (f"wrote {out}: 96 jobs, 48 GPUs (8 v100, 16 p100, 24 k80), "
                           "arrivals 0 s to 46317 s (12.9 h)")
    inst = load_instance(out)
    assert len(inst.jobs) == 96 and inst.jobs[-1].arrival_time == 46317.0


@needs_samples
def test_philly_and_synthetic_from_a_performance_file(tmp_path):
    perf = tmp_path / "perf.json"
    assert run("gavel-throughputs", TABLE, "-o", perf)[0] == 0
    out = tmp_path / "philly.json"
    code, _, err = run("philly", CSV, "--throughputs", perf, "-o", out, "--limit", "100",
                       "--cluster", "v100=4,p100=4,k80=4", "--seed", "2")
    assert code == 0, err
    # Four of the earliest 104 rows ask for 8 GPUs, more than any type of this cluster has.
    assert err.strip().endswith("arrivals 0 s to 895722 s (248.8 h), 4 dropped, 0 clipped")
    inst = load_instance(out)
    assert len(inst.jobs) == 100 and inst.jobs[0].arrival_time == 0.0
    again = tmp_path / "again.json"
    assert run("philly", CSV, "--throughputs", TABLE, "-o", again, "--limit", "100",
               "--cluster", "v100=4,p100=4,k80=4", "--seed", "2")[0] == 0
    assert again.read_text() == out.read_text()  # Gavel file or perf.json: same trace

    out = tmp_path / "synthetic.json"
    code, _, err = run("synthetic", "--throughputs", perf, "--jobs", "40", "--rate", "12", "--seed", "5",
                       "--deadline-factor", "2", "-o", out)
    assert code == 0, err
    inst = load_instance(out)
    assert len(inst.jobs) == 40 and all(j.deadline is not None for j in inst.jobs)
    assert err.startswith(f"wrote {out}: 40 jobs, 48 GPUs")


@pytest.mark.parametrize("args, needle", [
    (["gavel-throughputs", "missing.json", "-o", "x.json"], "cannot read the file"),
    (["gavel-throughputs", TABLE, "-o", "x.txt"], "unknown suffix '.txt'"),
    (["gavel-throughputs", TABLE, "-o", "x.json", "--cluster", "v100=eight"],
     "--cluster: expected TYPE=COUNT"),
    (["gavel-throughputs", TABLE, "-o", "x.json", "--cluster", "a100=8"], "no worker type 'a100'"),
    (["gavel-trace", CSV, "--throughputs", TABLE, "-o", "x.json"], "expected 10 tab-separated fields"),
    (["synthetic", "--throughputs", TABLE, "--jobs", "5", "--rate", "1", "-o", "x.json",
      "--cluster", "v100=2,p100=2,k80=2"], "no job type in the performance model runs on 4 GPU"),
])
@needs_samples
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(*args)
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1 and needle in err
    assert not (tmp_path / "x.json").exists()


def test_help_explains_units():
    for command, words in (("gavel-trace", "deadline"), ("philly", "seconds after the earliest"),
                           ("synthetic", "jobs per hour")):
        code, out, _ = run(command, "--help")
        assert code == 0 and words in " ".join(out.split())
