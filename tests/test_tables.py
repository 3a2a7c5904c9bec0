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
