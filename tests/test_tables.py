"""Jobs as tables (CSV, Parquet, DataFrames) and results as tables and JSON text."""

from __future__ import annotations

import json

import numpy as np
import pytest

from schedopt.backends import Status
from schedopt.core.outcome import Termination
from schedopt.result import Result


def _result(ids, types, X, details=None, termination=None) -> Result:
    M = len(ids)
    return Result("max_min_fairness", Status.OPTIMAL, 0.5, float("inf"), "highs", 0.1234567,
                  tuple(ids), tuple(types), X, np.arange(M * len(types), dtype=float)
                  .reshape(M, len(types)), details or {}, termination)


@pytest.mark.parametrize("ids", [
    ["a", "b"], ["", "x"], ["only"], [], ['q"uote', "com,ma", '","', "back\\", "é\n", "\x00"],
])
def test_result_json_text_is_the_document_of_to_dict(ids):
    types = ("v100", "k,80", 'p"100')
    rng = np.random.default_rng(len(ids))
    X = rng.random((len(ids), 3)) * [1, 1e-300, 1e300]
    result = _result(ids, types, X, {"pop": {"parts": {"a": 0}}, "count": np.int64(3)},
                     Termination.TIME_LIMIT)
    text = result.to_json()
    expected = json.loads(json.dumps(result.to_dict(), default=int))
    assert json.loads(text) == expected and list(json.loads(text)) == list(expected)
    assert json.loads(text)["termination"] == "time_limit"
    for job, row in zip(ids, X):  # every number round-trips exactly
        assert [json.loads(text)["allocation"][job][t] for t in types] == row.tolist()


def test_result_json_text_without_an_allocation_or_with_given_rates():
    none = Result("p", Status.INFEASIBLE, None, None, "highs", 0.0, ("a",), ("v100",), None,
                  np.ones((1, 1)))
    assert json.loads(none.to_json()) == json.loads(json.dumps(none.to_dict()))
    given = _result(["a"], ["v100"], np.ones((1, 1)), {"effective_throughput": {"a": 7.0}})
    assert json.loads(given.to_json())["effective_throughput"] == {"a": 7.0}


# --- jobs and throughput matrices as tables ---------------------------------------------------

import copy
import subprocess
import sys
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

from schedopt.api import solve
from schedopt.cli.main import main
from schedopt.core.problem import ThroughputProblem
from schedopt.errors import InstanceError
from schedopt.instance import load_instance, parse_instance
from schedopt.instance.model import Instance
from schedopt.instance.tables import JOB_COLUMNS, read_table

INSTANCES = Path(__file__).resolve().parents[1] / "instances"
CLUSTER = {"gpu_types": {"v100": {"count": 4}, "k80": {"count": 8, "gpus_per_node": 4}}}
JOBS = [
    {"id": "a", "type": "resnet", "weight": 2.0, "arrival_time": 5.0, "total_steps": 1000.0,
     "steps_done": 10.0},
    {"id": "b", "throughput": {"v100": 4.0, "k80": 0.0}, "scale_factor": 2, "deadline": 3600.0,
     "user": "alice"},
    {"id": "007", "throughput": {"v100": 1.5, "k80": 0.25}, "isolated_time": 7.0},
]
THROUGHPUT = {"resnet": {"v100": 3.5, "k80": 1.0}, "bert": {"v100": 2.0, "k80": 0.5}}


def _document(jobs=JOBS, throughput=THROUGHPUT) -> dict:
    return {"format": "schedopt-instance/1", "cluster": CLUSTER, "jobs": jobs,
            "performance": {"throughput": throughput}}


def _jobs_frame() -> pd.DataFrame:
    rows = [{**{k: v for k, v in j.items() if k != "throughput"}, **j.get("throughput", {})}
            for j in JOBS]
    return pd.DataFrame(rows)


def _throughput_frame() -> pd.DataFrame:
    return pd.DataFrame([{"type": k, **row} for k, row in THROUGHPUT.items()])


def _write(frame: pd.DataFrame, path: Path) -> str:
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    return path.name


def _instance_file(tmp_path: Path, jobs_suffix: str | None, throughput_suffix: str | None,
                   folder: str = ".") -> Path:
    doc = _document()
    (tmp_path / folder).mkdir(exist_ok=True)
    if jobs_suffix:
        name = _write(_jobs_frame(), tmp_path / folder / f"jobs{jobs_suffix}")
        doc["jobs"] = {"table": f"{folder}/{name}"}
    if throughput_suffix:
        name = _write(_throughput_frame(), tmp_path / folder / f"rows{throughput_suffix}")
        doc["performance"] = {"throughput": {"table": f"{folder}/{name}"}}
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("jobs_suffix, throughput_suffix", [
    (".csv", None), (".parquet", None), (".csv", ".csv"), (".parquet", ".parquet"),
    (None, ".csv"), (".csv", ".parquet"),
])
def test_tables_give_the_instance_of_the_same_document_with_lists(tmp_path, jobs_suffix,
                                                                  throughput_suffix):
    path = _instance_file(tmp_path, jobs_suffix, throughput_suffix, folder="data")
    expected = parse_instance(copy.deepcopy(_document()))
    loaded = load_instance(path)
    assert loaded == expected and loaded.now == expected.now == 5.0
    a, b = ThroughputProblem.from_instance(loaded), ThroughputProblem.from_instance(expected)
    assert a.job_ids == ("a", "b", "007")  # an id that looks like a number stays text
    for name in ("throughput", "scale_factor", "weight", "remaining_steps",
                 "time_since_arrival", "isolated_time", "time_to_deadline"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.throughput, [[3.5, 1.0], [4.0, 0.0], [1.5, 0.25]])


def test_yaml_instance_reads_tables_relative_to_its_folder(tmp_path):
    _write(_jobs_frame(), tmp_path / "jobs.csv")
    doc = _document(jobs={"table": "jobs.csv"})
    (tmp_path / "instance.yaml").write_text(json.dumps(doc))  # JSON is YAML
    assert load_instance(tmp_path / "instance.yaml") == parse_instance(_document())


def test_from_frames_builds_the_instance_and_solves_like_the_document():
    instance = Instance.from_frames(_jobs_frame(), CLUSTER, _throughput_frame())
    expected = parse_instance(_document())
    assert instance == expected
    got, want = solve(instance, "max_min_fairness"), solve(expected, "max_min_fairness")
    assert got.objective == pytest.approx(want.objective, rel=1e-9)
    frame = got.to_frame()
    assert list(frame.index) == ["a", "b", "007"] and list(frame.columns) == [
        "v100", "k80", "effective_throughput"]
    np.testing.assert_allclose(frame[["v100", "k80"]].to_numpy(), got.X)
    np.testing.assert_allclose(frame["effective_throughput"],
                               (got.X * got.throughput).sum(axis=1))


def test_bundled_table_example_is_small_heterogeneous():
    tables, lists = (load_instance(INSTANCES / "small-tables.json"),
                     load_instance(INSTANCES / "small-heterogeneous.yaml"))
    assert tables == lists and tables.now == lists.now and len(tables.jobs) == 30
    assert sum(p.stat().st_size for p in INSTANCES.glob("small-tables*")) < 1_000_000


def _bad_jobs(tmp_path: Path, frame: pd.DataFrame, suffix: str = ".csv") -> Path:
    _write(frame, tmp_path / f"jobs{suffix}")
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(_document(jobs={"table": f"jobs{suffix}"})))
    return path


def _first_problem(path: Path) -> str:
    with pytest.raises(InstanceError) as caught:
        load_instance(path)
    return str(caught.value.problems[0])


BAD_CELLS = [
    (lambda f: f.assign(k80=[None, -0.5, 0.25]), "row 2, column k80: expected a finite number >= 0, got -0.5"),
    (lambda f: f.assign(weight=[2, "heavy", None]), "row 2, column weight: expected a finite number > 0, got 'heavy'"),
    (lambda f: f.assign(scale_factor=[None, 2.5, None]), "row 2, column scale_factor: expected an integer >= 1, got 2.5"),
    (lambda f: f.assign(deadline=[None, -60, None]), "row 2, column deadline: expected a finite number >= 0 or null, got -60"),
    (lambda f: f.assign(id=["a", "a", "c"]), "row 2, column id: duplicate job id 'a' (first used at row 1)"),
    (lambda f: f.assign(id=["a", None, "c"]), "row 2, column id: required key is missing (expected a non-empty string)"),
    (lambda f: f.drop(columns="id"), "column id: required column is missing"),
    (lambda f: f.assign(a100=1.0), "column a100: unknown column 'a100'; expected a job key"),
    (lambda f: f.assign(k80=[None, None, 0.25]), "row 2, column k80: missing; job 'b' needs steps/s on every GPU type"),
    (lambda f: f.assign(type=["bert2", None, None]), "row 1, column type: job 'a' has no own throughput row and its type 'bert2' is not in performance.throughput"),
    (lambda f: f.assign(type=[None, None, None]), "row 1: job 'a' has neither throughput columns nor a type"),
    (lambda f: f.assign(steps_done=[2000, None, None]), "row 1, column steps_done: expected at most total_steps (1000.0), got 2000.0"),
    (lambda f: f.assign(scale_factor=[16, None, None]), "row 1, column scale_factor: scale_factor 16 is larger than any GPU type's count (max 8)"),
    (lambda f: f.assign(v100=[None, 0, 1.5], k80=[None, 0, 0.25]), "row 2: job 'b' can run nowhere"),
]


@pytest.mark.parametrize("change, expected", BAD_CELLS, ids=[e.split(":")[0] for _, e in BAD_CELLS])
def test_a_bad_cell_is_one_problem_naming_file_row_column_and_expectation(tmp_path, change, expected):
    path = _bad_jobs(tmp_path, change(_jobs_frame()))
    assert _first_problem(path).startswith(f"{tmp_path / 'jobs.csv'}: {expected}")


def test_bad_cells_in_a_parquet_file_and_in_a_frame_name_their_source(tmp_path):
    frame = _jobs_frame().assign(k80=[None, -0.5, 0.25])
    assert _first_problem(_bad_jobs(tmp_path, frame, ".parquet")) == (
        f"{tmp_path / 'jobs.parquet'}: row 2, column k80: expected a finite number >= 0, got -0.5")
    with pytest.raises(InstanceError) as caught:
        Instance.from_frames(frame, CLUSTER, _throughput_frame())
    assert str(caught.value.problems[0]) == (
        "<jobs frame>: row 2, column k80: expected a finite number >= 0, got -0.5")


@pytest.mark.parametrize("suffix, content, expected", [
    (".csv", None, "cannot read the table"),
    (".csv", b"", "the table is empty"),
    (".parquet", b"PAR1 not really", "not a readable"),
])
def test_unreadable_table_files_are_one_problem(tmp_path, suffix, content, expected):
    table = tmp_path / f"jobs{suffix}"
    if content is not None:
        table.write_bytes(content)
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(_document(jobs={"table": table.name})))
    assert _first_problem(path).startswith(f"{table}: ") and expected in _first_problem(path)


def test_table_suffix_and_throughput_table_problems(tmp_path):
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(_document(jobs={"table": "jobs.xlsx"})))
    assert "unknown table suffix '.xlsx'; expected .csv or .parquet" in _first_problem(path)
    _write(_throughput_frame().drop(columns="k80"), tmp_path / "rows.csv")
    path.write_text(json.dumps(_document(throughput={"table": "rows.csv"})))
    assert _first_problem(path) == (f"{tmp_path / 'rows.csv'}: column k80: missing; the table "
                                    f"needs a column 'type' and one per GPU type (v100, k80)")
    path.write_text(json.dumps(_document(jobs={"table": 5})))
    assert _first_problem(path) == f"{path}: jobs.table: expected a non-empty string, got 5"


def test_cli_reports_a_bad_table_in_one_line_with_exit_code_2(tmp_path):
    path = _bad_jobs(tmp_path, _jobs_frame().assign(weight=[2, -1, None]))
    run = CliRunner().invoke(main, ["solve", str(path)])
    assert run.exit_code == 2
    assert run.output.strip().splitlines() == [
        f"error: {tmp_path / 'jobs.csv'}: row 2, column weight: expected a finite number > 0, "
        f"got -1"] or run.output.count("\n") == 1, run.output


def test_reading_a_table_never_runs_code(tmp_path):
    marker = tmp_path / "ran"
    evil = f'=cmd|\' /C touch {marker}\'!A0'
    frame = _jobs_frame().assign(user=["alice", evil, "__import__('os').system('x')"])
    path = _bad_jobs(tmp_path, frame)
    assert load_instance(path).jobs[1].user == evil and not marker.exists()
    assert set(JOB_COLUMNS) >= {"id", "type", "user"}
    assert list(read_table(tmp_path / "jobs.csv").columns)[:2] == ["id", "type"]


def test_csv_reads_the_same_through_pandas_parser_without_pyarrow(tmp_path, monkeypatch):
    from schedopt.instance import tables

    path = _instance_file(tmp_path, ".csv", ".csv")
    with_arrow = load_instance(path)
    monkeypatch.setattr(tables, "_pyarrow", lambda: None)
    assert load_instance(path) == with_arrow == parse_instance(_document())
    frame = _jobs_frame().assign(weight=[2, "heavy", None])
    assert _first_problem(_bad_jobs(tmp_path, frame)).endswith(
        "row 2, column weight: expected a finite number > 0, got 'heavy'")
    _write(_jobs_frame(), tmp_path / "jobs.parquet")
    path.write_text(json.dumps(_document(jobs={"table": "jobs.parquet"})))
    assert "reading Parquet needs pyarrow: pip install 'schedopt[tables]'" in _first_problem(path)
