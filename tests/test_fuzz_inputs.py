"""Fuzzing the command line with damaged input files: instances, Gavel traces and throughput
tables, Philly CSVs, Pollux profiles, measurement streams and performance models.

Whatever the bytes, a command ends with exit code 0, 1 or 2, never a traceback, writes nothing
when it exits with 2, and stays within a time and memory budget. CI runs a small number of
examples per input kind; set SCHEDOPT_FUZZ_EXAMPLES (e.g. 500) for a longer campaign.
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedopt.cli.main import main

EXAMPLES = int(os.environ.get("SCHEDOPT_FUZZ_EXAMPLES", "12"))
SECONDS_PER_RUN = 30.0
EXTRA_MEMORY_MB = 1500

GAVEL_THROUGHPUTS = {
    gpu: {
        "('ResNet-18 (batch size 64)', 1)": {
            "null": rate, "('ResNet-18 (batch size 64)', 1)": [rate / 2, rate / 2],
            "('LM (batch size 20)', 1)": [rate * 0.6, 0.0]},
        "('LM (batch size 20)', 1)": {
            "null": rate / 3, "('ResNet-18 (batch size 64)', 1)": [0.0, rate * 0.6],
            "('LM (batch size 20)', 1)": [rate / 7, rate / 7]},
        "('ResNet-18 (batch size 64)', 2)": {"null": rate * 1.8},
    }
    for gpu, rate in (("v100", 30.0), ("p100", 20.0), ("k80", 8.0))
}
GAVEL_TRACE = "\n".join([
    "ResNet-18 (batch size 64)\tpython3 main.py\timage_classification/cifar10\t--num_steps\t1\t5000\t1\t1\t-1.000000\t0",
    "LM (batch size 20)\tpython3 main.py\tlanguage_modeling\t--steps\t1\t2000\t1\t1\t-1.000000\t30",
    "ResNet-18 (batch size 64)\tpython3 main.py\timage_classification/cifar10\t--num_steps\t1\t9000\t2\t1\t-1.000000\t60",
]) + "\n"
PHILLY = ("timestamp,duration,num_gpus,gpu_time,cluster\n"
          "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
          "2017-10-09 06:13:03,2951.0,1,2951.0,6214e9\n"
          "2017-10-09 08:00:00,600.0,2,1200.0,6214e9\n")
POLLUX = ("placement,local_bsz,step_time,sync_time\n"
          "1,32,0.0427,0.0005\n1,64,0.0700,0.0005\n2,32,0.0450,0.0100\n11,32,0.0460,0.0150\n")
MEASUREMENTS = ("job,gpu_type,steps_per_s\nresnet,v100,30\nresnet,k80,8\nlm,v100,10\nlm,k80,2.5\n"
                "resnet,v100,29\n")
INSTANCE = {
    "format": "schedopt-instance/1",
    "cluster": {"gpu_types": {"v100": {"count": 4, "gpus_per_node": 4},
                              "k80": {"count": 4, "gpus_per_node": 4}}},
    "jobs": [
        {"id": "a", "type": "resnet", "total_steps": 1000, "arrival_time": 0},
        {"id": "b", "type": "lm", "scale_factor": 2, "total_steps": 500, "arrival_time": 10},
        {"id": "c", "throughput": {"v100": 3.0, "k80": 1.0}, "weight": 2, "total_steps": 300,
         "arrival_time": 20},
    ],
    "performance": {"throughput": {"resnet": {"v100": 30.0, "k80": 8.0},
                                   "lm": {"v100": 10.0, "k80": 2.5}}},
}


def mutations(text: str) -> st.SearchStrategy[bytes]:
    """Damaged versions of `text`: truncated, lines dropped or repeated, fields retyped,
    numbers made extreme, random bytes spliced in."""
    data = text.encode()
    lines = text.splitlines(keepends=True)
    extreme = st.sampled_from(["0", "-1", "1e308", "-1e308", "NaN", "Infinity", "1e-320",
                               "99999999999999999999", "\"x\"", "null", "true", "[]", "{}", "\x00",
                               "\u202e", ""])
    truncated = st.integers(0, len(data)).map(lambda n: data[:n])
    dropped = st.lists(st.integers(0, max(len(lines) - 1, 0)), max_size=3).map(
        lambda drop: "".join(l for i, l in enumerate(lines) if i not in drop).encode())
    repeated = st.integers(0, max(len(lines) - 1, 0)).map(
        lambda i: "".join(lines[:i + 1] + lines[i:]).encode())
    tokens = text.replace(",", " , ").replace("\t", " \t ").replace(":", " : ").split(" ")
    retyped = st.tuples(st.integers(0, max(len(tokens) - 1, 0)), extreme).map(
        lambda pair: " ".join(tokens[:pair[0]] + [pair[1]] + tokens[pair[0] + 1:])
        .replace(" , ", ",").replace(" \t ", "\t").replace(" : ", ":").encode("utf-8", "replace"))
    spliced = st.tuples(st.integers(0, len(data)), st.binary(min_size=1, max_size=12)).map(
        lambda pair: data[:pair[0]] + pair[1] + data[pair[0]:])
    return st.one_of(truncated, dropped, repeated, retyped, spliced, st.binary(max_size=64))


def run_cli(args: list[str], output: Path | None):
    """Run the CLI in-process and check the contract; returns the exit code."""
    before = output.stat().st_mtime_ns if output is not None and output.exists() else None
    memory = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    result = CliRunner().invoke(main, args, catch_exceptions=True)
    elapsed = time.perf_counter() - start
    assert result.exit_code in (0, 1, 2), (args, result.exit_code, result.output)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"traceback from {args}: {result.exception!r}\n{result.output}")
    assert "Traceback" not in result.output
    if result.exit_code == 2 and output is not None:
        after = output.stat().st_mtime_ns if output.exists() else None
        assert after == before, f"{args} exited with 2 but wrote {output}"
    if result.exit_code == 2:
        lines = [line for line in result.output.splitlines() if line.startswith("error:")]
        assert len(lines) <= 1 or not lines, result.output
    assert elapsed < SECONDS_PER_RUN, (args, elapsed)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - memory
    assert grown < EXTRA_MEMORY_MB, (args, grown)
    return result.exit_code


FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])


def scratch(tmp_path_factory, name: str, data: bytes) -> Path:
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / name
    path.write_bytes(data)
    return path


@FUZZ
@given(data=mutations(json.dumps(INSTANCE, indent=1)))
def test_damaged_instances(tmp_path_factory, data):
    path = scratch(tmp_path_factory, "instance.json", data)
    out = path.with_name("result.json")
    run_cli(["validate", str(path)], None)
    run_cli(["solve", str(path), "--output", str(out), "--time-limit", "5"], out)
    run_cli(["simulate", str(path), "--round-seconds", "360"], None)


@FUZZ
@given(data=mutations(json.dumps(INSTANCE)).map(lambda b: b.replace(b"{", b"{\n", 3)))
def test_damaged_yaml_instances(tmp_path_factory, data):
    path = scratch(tmp_path_factory, "instance.yaml", data)
    run_cli(["validate", str(path)], None)


@FUZZ
@given(trace=mutations(GAVEL_TRACE), table=st.just(None) | mutations(json.dumps(GAVEL_THROUGHPUTS)))
def test_damaged_gavel_traces_and_tables(tmp_path_factory, trace, table):
    folder = tmp_path_factory.mktemp("fuzz")
    trace_path = folder / "t.trace"
    trace_path.write_bytes(trace)
    table_path = folder / "throughputs.json"
    table_path.write_bytes(json.dumps(GAVEL_THROUGHPUTS).encode() if table is None else table)
    out = folder / "trace.json"
    run_cli(["import", "gavel-trace", str(trace_path), "--throughputs", str(table_path),
             "--output", str(out)], out)
    model = folder / "model.json"
    run_cli(["perf", "build", "--gavel", str(table_path), "--output", str(model)], model)


@FUZZ
@given(data=mutations(PHILLY))
def test_damaged_philly_csvs(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("fuzz")
    csv = folder / "philly.csv"
    csv.write_bytes(data)
    table = folder / "throughputs.json"
    table.write_text(json.dumps(GAVEL_THROUGHPUTS))
    out = folder / "trace.json"
    run_cli(["import", "philly", str(csv), "--throughputs", str(table), "--output", str(out)], out)
    out2 = folder / "deadlines.json"
    run_cli(["import", "philly-deadlines", str(csv), "--output", str(out2)], out2)


@FUZZ
@given(pollux=mutations(POLLUX), measurements=mutations(MEASUREMENTS))
def test_damaged_profiles_and_measurements(tmp_path_factory, pollux, measurements):
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "cifar10-placements.csv").write_bytes(pollux)
    (folder / "rounds.csv").write_bytes(measurements)
    out = folder / "model.json"
    run_cli(["perf", "build", "--pollux", str(folder / "cifar10-placements.csv"),
             "--output", str(out)], out)
    out2 = folder / "online.json"
    run_cli(["perf", "build", "--measurements", str(folder / "rounds.csv"), "--output",
             str(out2)], out2)


@pytest.fixture(scope="module")
def model_text(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("model")
    (folder / "t.json").write_text(json.dumps(GAVEL_THROUGHPUTS))
    result = CliRunner().invoke(main, ["perf", "build", "--gavel", str(folder / "t.json"),
                                       "--output", str(folder / "m.json")])
    assert result.exit_code == 0, result.output
    return (folder / "m.json").read_text()


def test_damaged_performance_models(tmp_path_factory, model_text):
    @FUZZ
    @given(data=mutations(model_text))
    def check(data):
        folder = tmp_path_factory.mktemp("fuzz")
        path = folder / "model.json"
        path.write_bytes(data)
        out = folder / "completed.json"
        run_cli(["perf", "complete", str(path), "--output", str(out)], out)

    check()


def test_the_undamaged_inputs_succeed(tmp_path, model_text):
    """The seeds of every mutation run cleanly, so the fuzz tests above exercise real work."""
    files = {"i.json": json.dumps(INSTANCE), "t.trace": GAVEL_TRACE,
             "g.json": json.dumps(GAVEL_THROUGHPUTS), "p.csv": PHILLY,
             "cifar10-placements.csv": POLLUX, "m.csv": MEASUREMENTS, "model.json": model_text}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    p = {name: str(tmp_path / name) for name in files}
    commands = [
        ["validate", p["i.json"]],
        ["solve", p["i.json"], "--output", str(tmp_path / "r.json")],
        ["simulate", p["i.json"], "--round-seconds", "360"],
        ["import", "gavel-trace", p["t.trace"], "--throughputs", p["g.json"], "--output",
         str(tmp_path / "o1.json")],
        ["import", "philly", p["p.csv"], "--throughputs", p["g.json"], "--output",
         str(tmp_path / "o2.json")],
        ["import", "philly-deadlines", p["p.csv"], "--output", str(tmp_path / "o3.json")],
        ["perf", "build", "--gavel", p["g.json"], "--output", str(tmp_path / "m1.json")],
        ["perf", "build", "--pollux", p["cifar10-placements.csv"], "--output",
         str(tmp_path / "m2.json")],
        ["perf", "build", "--measurements", p["m.csv"], "--output", str(tmp_path / "m3.json")],
        ["perf", "complete", p["model.json"], "--output", str(tmp_path / "m4.json")],
    ]
    for args in commands:
        assert run_cli(args, None) == 0, args


def test_a_philly_duration_whose_steps_overflow_is_one_line(tmp_path):
    """Found by the fuzz campaign: 1e308 s times 30 steps/s is not a number of steps."""
    csv = tmp_path / "philly.csv"
    csv.write_text(PHILLY.replace("2951.0,1,", "1e308,1,"))
    table = tmp_path / "throughputs.json"
    table.write_text(json.dumps(GAVEL_THROUGHPUTS))
    out = tmp_path / "trace.json"
    result = CliRunner().invoke(main, ["import", "philly", str(csv), "--throughputs", str(table),
                                       "--output", str(out)])
    assert result.exit_code == 2 and not out.exists()
    assert result.output.strip() == (
        f"error: {csv}:3: duration: expected seconds whose steps at 30 steps/s "
        f"(ResNet-18 (batch size 64) on v100) are finite, got 1e+308")
