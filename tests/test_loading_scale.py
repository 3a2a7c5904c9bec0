"""Reading and writing at scale: the result document written from arrays is the document of
`to_dict` for any job ids (checked against the standard json module), and a solve's
`--json` output is the bytes written to `--output`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from schedopt.backends import Status
from schedopt.cli.main import main
from schedopt.result import Result

IDS = ['x",', '","y', "a\\", '\\"', "é", "日本", "\t", "", "j" * 300, ",", ":", "}", "{"]


def _result(ids, types, X) -> Result:
    M = len(ids)
    return Result("p", Status.OPTIMAL, 1.0, 1.0, "s", 0.5, tuple(ids), tuple(types), X,
                  np.ones((M, len(types))))


@pytest.mark.parametrize("seed", range(6))
def test_document_from_arrays_is_the_document_of_to_dict_for_awkward_ids(seed):
    rng = np.random.default_rng(seed)
    ids = list(rng.permutation(IDS + [f"job-{m}" for m in range(40)]))
    types = tuple(rng.permutation(["v100", 'p"100', "k,80", "é"])[:1 + seed % 4])
    X = rng.random((len(ids), len(types))) * rng.choice([1e-300, 1.0, 1e300], len(types))
    X[rng.random(X.shape) < 0.2] = 0.0
    result = _result(ids, types, X)
    text = result.to_json()
    assert json.loads(text) == json.loads(json.dumps(result.to_dict()))
    for job, row in zip(ids, X.tolist()):
        assert [json.loads(text)["allocation"][job][t] for t in types] == row


def test_document_spanning_many_blocks_of_jobs(monkeypatch):
    import schedopt.result as module

    monkeypatch.setattr(module, "_CHUNK_JOBS", 7)  # 100 jobs: 15 blocks, the last partial
    rng = np.random.default_rng(3)
    ids = [f"j{m}" * (1 + m % 5) for m in range(100)]
    result = _result(ids, ("a", "b"), rng.random((100, 2)))
    assert json.loads(result.to_json()) == json.loads(json.dumps(result.to_dict()))


def test_json_output_is_the_written_document(tmp_path):
    from pathlib import Path

    tiny = Path(__file__).resolve().parents[1] / "instances" / "tiny.json"
    out = tmp_path / "r.json"
    run = CliRunner().invoke(main, ["solve", str(tiny), "--json", "--output", str(out)])
    assert run.exit_code == 0, run.output
    assert run.stdout_bytes == out.read_bytes()
    assert json.loads(out.read_bytes())["status"] == "optimal"


# ---------------------------------------------------------------- Parquet without pandas

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")


def _parquet_instance(tmp_path, frame, types=("v100", "k80"), counts=(4, 2), doc_extra=None):
    frame.to_parquet(tmp_path / "jobs.parquet", index=False)
    doc = {"format": "schedopt-instance/1",
           "cluster": {"gpu_types": {t: {"count": c} for t, c in zip(types, counts)}},
           "jobs": {"table": "jobs.parquet"}, **(doc_extra or {})}
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(doc))
    return path, doc


def _random_frame(rng, M):
    return pd.DataFrame({
        "id": [f"job{m}" for m in rng.permutation(M)],
        "scale_factor": rng.choice([1, 2], M).astype(rng.choice([np.int64, np.int32])),
        "v100": rng.choice([0.0, 1.5, 3.0], M) + rng.random(M),
        "k80": rng.random(M) * rng.choice([0.0, 1.0], M),
        "total_steps": np.where(rng.random(M) < 0.3, np.nan, rng.random(M) * 1e4 + 1e4),
        "arrival_time": rng.random(M) * 100,
        "weight": rng.random(M) + 0.5,
        "steps_done": rng.random(M) * 1e3,
    }).sample(frac=1.0, axis=1, random_state=int(rng.integers(1 << 31)))


@pytest.mark.parametrize("seed", range(4))
def test_parquet_fast_path_builds_what_the_pandas_reader_builds(tmp_path, seed):
    from schedopt.instance.arrow import arrow_jobs
    from schedopt.instance.load import load_instance
    from schedopt.instance.tables import instance_with_tables

    rng = np.random.default_rng(seed)
    path, doc = _parquet_instance(tmp_path, _random_frame(rng, 50 + seed))
    assert arrow_jobs(doc, tmp_path) is not None  # the fast path takes it
    fast, slow = load_instance(path), instance_with_tables(doc, str(path), tmp_path)
    assert fast == slow
    for name in ("throughput", "scale_factor", "weight", "arrival_time", "total_steps",
                 "steps_done", "deadline", "isolated_time"):
        np.testing.assert_array_equal(getattr(fast.jobs, name), getattr(slow.jobs, name),
                                      err_msg=name)
    assert fast.jobs.ids == slow.jobs.ids


@pytest.mark.parametrize("change", [
    lambda f: f.assign(k80=f["k80"].where(f.index != 3)),          # a job takes its type's row
    lambda f: f.assign(type="a"),                                   # a type column
    lambda f: f.assign(weight=f["weight"].where(f.index != 2, 0.0)),  # weight must be > 0
    lambda f: f.assign(scale_factor=f["scale_factor"].astype(float) + 0.5),  # not an integer
    lambda f: f.assign(id=f["id"].where(f.index != 1, f["id"][0])),  # a duplicate id
    lambda f: f.assign(scale_factor=f["scale_factor"] * 0 + 9),     # larger than any count
    lambda f: f.assign(flag=True),                                  # an unknown column
    lambda f: f.assign(steps_done=f["total_steps"] + 1.0),          # past the total
])
def test_tables_outside_the_fast_path_go_to_the_pandas_reader(tmp_path, change):
    from schedopt.errors import InstanceError
    from schedopt.instance.arrow import arrow_jobs
    from schedopt.instance.load import load_instance
    from schedopt.instance.tables import instance_with_tables

    frame = change(_random_frame(np.random.default_rng(9), 20).assign(
        total_steps=2e9))
    path, doc = _parquet_instance(tmp_path, frame, doc_extra={
        "performance": {"throughput": {"a": {"v100": 1.0, "k80": 1.0}}}})
    assert arrow_jobs(doc, tmp_path) is None
    try:
        expected = instance_with_tables(doc, str(path), tmp_path)
    except InstanceError as error:
        with pytest.raises(InstanceError) as got:
            load_instance(path)
        assert [str(p) for p in got.value.problems] == [str(p) for p in error.problems]
    else:
        assert load_instance(path) == expected

