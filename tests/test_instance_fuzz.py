"""Whatever the input, loading either yields an Instance that round-trips or raises InstanceError
with one-line problems; no other exception type ever escapes."""

from __future__ import annotations

import copy
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedopt.errors import InstanceError
from schedopt.instance import instance_to_dict, load_instance, parse_instance

VALID = {
    "format": "schedopt-instance/1",
    "now": 3,
    "cluster": {
        "gpu_types": {"v100": {"count": 4, "gpus_per_node": 2, "cost_per_hour": 2.5}, "k80": {"count": 2}},
        "nodes": [{"id": "n0", "gpu_type": "v100", "gpus": 4, "cpus": 32, "memory_gb": 256, "bandwidth_gbps": 50},
                  {"id": "n1", "gpu_type": "k80", "gpus": 2, "rack": "r1"}],
        "cpu_machines": [{"id": "c0", "cores": 8}],
    },
    "jobs": [
        {"id": "j0", "type": "resnet", "scale_factor": 2, "total_steps": 10, "steps_done": 1, "deadline": 5,
         "deadline_options": [{"after_s": 5, "value": 2}, {"after_s": 9, "value": 1}]},
        {"id": "j1", "type": "lm", "throughput": {"v100": 2.0, "k80": 0.5}, "user": "bob", "isolated_time": 1,
         "parameter_server": {"epochs": 2, "samples_per_epoch": 1000, "batch_per_worker": 32,
                              "compute_s_per_sample": [0.001, 0.002], "model_size_gb": 0.1,
                              "worker": {"bandwidth_gbps": 10, "cpus": 4}, "ps": {"bandwidth_gbps": 5},
                              "max_workers": 4, "max_ps": 2}},
    ],
    "performance": {
        "throughput": {"resnet": {"v100": 3.0, "k80": 1.0}, "lm": {"v100": 1.0, "k80": 0.0}},
        "colocated": [{"types": ["resnet", "lm"], "gpu_type": "v100", "throughput": [1.5, 0.5]}],
        "unconsolidated": {"resnet": {"v100": 2.0, "k80": 0.5}},
        "cpu_time": {"j0": 60.0},
    },
}
WORDS = ["v100", "k80", "j0", "j1", "n0", "resnet", "lm", "count", "id", "type", "throughput", "gpus",
         "scale_factor", "format", "schedopt-instance/1", "nodes", "jobs", "cluster", "gpu_types", ""]
scalars = (
    st.none() | st.booleans() | st.integers(-3, 10) | st.integers() | st.sampled_from(WORDS)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=5)
)
keys = st.sampled_from(WORDS) | st.text(max_size=5)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4), max_leaves=25
)


def _paths(doc, prefix=()):
    yield prefix
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield from _paths(value, prefix + (key,))


PATHS = list(_paths(VALID))[1:]


def _check(doc) -> None:
    try:
        inst = parse_instance(doc)
    except InstanceError as e:
        assert e.problems and all("\n" not in str(p) for p in e.problems)
        return
    assert parse_instance(instance_to_dict(inst)) == inst


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_random_documents_raise_only_instance_error(doc):
    _check(doc)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["format", "cluster", "jobs", "performance", "now", "name"]), json_values))
def test_random_top_level_sections_raise_only_instance_error(doc):
    _check(doc)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PATHS), st.sampled_from(["replace", "delete", "null"]), json_values),
                min_size=1, max_size=3))
def test_mutated_valid_documents_raise_only_instance_error(edits):
    doc = copy.deepcopy(VALID)
    for path, action, value in edits:
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed or replaced this path
        if action == "delete":
            del parent[path[-1]]
        else:
            parent[path[-1]] = None if action == "null" else value
    _check(doc)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=string.printable + "\x00\x07é{}[]:-!&*|>", max_size=80), st.sampled_from([".json", ".yaml", ".txt"]))
def test_random_files_raise_only_instance_error(tmp_path, text, suffix):
    path = tmp_path / f"f{suffix}"
    path.write_text(text, encoding="utf-8")
    try:
        load_instance(path)
    except InstanceError as e:
        assert "\n" not in str(e)
