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
