"""CSV tables and figures: checked before any work, written whole, never over an input."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from schedopt.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "instances" / "small-heterogeneous.yaml"
ALLOX_40 = ROOT / "instances" / "allox-40.json"
LEASES = ROOT / "instances" / "chronus-leases.json"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def copy_of(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / source.name
    target.write_bytes(source.read_bytes())
    return target


def one_error_line(result, *words):
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]


COMMANDS = {
    "simulate": lambda trace, out: ["simulate", trace, "-p", "fifo", "--jobs-csv", out],
    "leases": lambda trace, out: ["leases", trace, "-p", "edf", "--jobs-csv", out],
    "allox": lambda trace, out: ["allox", trace, "-p", "sjf", "--jobs-csv", out],
    "compare": lambda trace, out: ["compare", trace, "-p", "fifo", "--plot", out],
    "allox sweep": lambda trace, out: ["allox", trace, "--sweep", "1", "--plot", out],
}
TRACES = {"simulate": SMALL, "leases": LEASES, "allox": ALLOX_40, "compare": SMALL,
          "allox sweep": ALLOX_40}
SUFFIX = {"simulate": ".csv", "leases": ".csv", "allox": ".csv", "compare": ".png",
          "allox sweep": ".png"}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_output_over_the_input_is_refused_and_the_input_kept(command, tmp_path):
    trace = copy_of(TRACES[command], tmp_path)
    before = trace.read_bytes()
    result = cli(*COMMANDS[command](trace, trace))
    one_error_line(result, str(trace), "over an input")
    assert trace.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [trace.name]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_missing_directory_is_one_line_before_any_work(command, tmp_path):
    target = tmp_path / "no" / f"out{SUFFIX[command]}"
    result = cli(*COMMANDS[command](TRACES[command], target))
    one_error_line(result, str(target), "does not exist")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("command", list(COMMANDS))
def test_outputs_land_whole_with_no_temporary_left(command, tmp_path):
    target = tmp_path / f"out{SUFFIX[command]}"
    target.write_text("an older file\n")
    result = cli(*COMMANDS[command](TRACES[command], target))
    assert result.exit_code == 0, result.output
    if SUFFIX[command] == ".csv":
        frame = pd.read_csv(target)
        assert len(frame) > 0 and frame.notna().any().all()
    else:
        assert target.read_bytes().startswith(PNG_MAGIC)
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_simulate_csv_equals_the_json_rows(tmp_path):
    csv = tmp_path / "jobs.csv"
    result = cli("simulate", SMALL, "-p", "fifo", "--json", "--jobs-csv", csv)
    assert result.exit_code == 0
    rows = json.loads(result.stdout)["jobs"]
    frame = pd.read_csv(csv)
    assert list(frame["job"]) == [row["job"] for row in rows]
    assert frame["jct_s"].tolist() == pytest.approx([row["jct_s"] for row in rows], rel=1e-12)


def test_a_figure_suffix_matplotlib_cannot_write_is_one_line(tmp_path):
    result = cli("compare", SMALL, "-p", "fifo", "--plot", tmp_path / "cdf.docx")
    one_error_line(result, "unknown image suffix '.docx'")
    assert not list(tmp_path.iterdir())
