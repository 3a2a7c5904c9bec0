"""Valid instances: parsed into the expected dataclasses, defaults applied, saved and read back."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from schedopt.errors import InstanceError
from schedopt.instance import instance_to_dict, load_instance, parse_instance, save_instance, validate_file
from schedopt.instance.model import (
    Cluster, CpuMachine, DeadlineOption, GpuType, Instance, Job, Node, ParameterServerSpec,
    Performance, TaskDemand,
)
from schedopt.instance.validate import schema

TINY = {
    "format": "schedopt-instance/1",
    "name": "tiny",
    "cluster": {"gpu_types": {"v100": {"count": 2, "cost_per_hour": 2.48}, "k80": {"count": 3, "gpus_per_node": 2}}},
    "jobs": [
        {"id": "a", "type": "resnet", "weight": 2, "arrival_time": 5, "total_steps": 1000, "steps_done": 10},
        {"id": "b", "throughput": {"v100": 4, "k80": 0}, "scale_factor": 2, "deadline": 3600, "user": "alice"},
    ],
    "performance": {"throughput": {"resnet": {"v100": 3.5, "k80": 1}}},
}

def test_tiny_document_parses_into_the_expected_dataclasses():
    inst = parse_instance(copy.deepcopy(TINY))
    assert inst.cluster.gpu_types == {
        "v100": GpuType("v100", 2, 2, 2.48),
        "k80": GpuType("k80", 3, 2, None),
    }
    assert inst.cluster.nodes == (
        Node("v100-n0", "v100", 2, "r0"),
        Node("k80-n0", "k80", 2, "r0"),
        Node("k80-n1", "k80", 1, "r0"),
    )
    assert inst.jobs == (
        Job("a", {"v100": 3.5, "k80": 1.0}, "resnet", 1, 2.0, 5.0, 1000.0, 10.0, None, None, 0.0),
        Job("b", {"v100": 4.0, "k80": 0.0}, None, 2, 1.0, 0.0, None, 0.0, 3600.0, "alice", 0.0),
    )
    assert inst.performance == Performance(throughput={"resnet": {"v100": 3.5, "k80": 1.0}})
    assert (inst.name, inst.now, inst.source) == ("tiny", 5.0, "<memory>")
    assert inst.jobs[0].remaining_steps == 990.0


def test_numbers_are_stored_as_float_and_counts_as_int():
    inst = parse_instance(copy.deepcopy(TINY))
    assert type(inst.cluster.gpu_types["k80"].count) is int
    assert type(inst.jobs[1].scale_factor) is int
    assert all(type(v) is float for job in inst.jobs for v in job.throughput.values())
    assert type(inst.jobs[0].weight) is float and type(inst.jobs[0].arrival_time) is float


def test_integral_floats_are_accepted_as_integers():
    doc = copy.deepcopy(TINY)
    doc["cluster"]["gpu_types"]["v100"]["count"] = 2.0
    doc["jobs"][1]["scale_factor"] = 2.0
    inst = parse_instance(doc)
    assert inst.cluster.gpu_types["v100"].count == 2 and type(inst.cluster.gpu_types["v100"].count) is int
    assert inst.jobs[1].scale_factor == 2 and type(inst.jobs[1].scale_factor) is int


def test_dataclasses_are_read_only():
    inst = parse_instance(copy.deepcopy(TINY))
    with pytest.raises(TypeError):
        inst.jobs[0].throughput["v100"] = 9.0
    with pytest.raises(TypeError):
        inst.performance.throughput["resnet"]["k80"] = 9.0


def test_own_row_overrides_type_and_type_is_kept_as_label():
    doc = copy.deepcopy(TINY)
    doc["jobs"][0]["throughput"] = {"v100": 9.0, "k80": 0.25}
    inst = parse_instance(doc)
    assert dict(inst.jobs[0].throughput) == {"v100": 9.0, "k80": 0.25}
    assert inst.jobs[0].type == "resnet"


def test_own_row_needs_no_performance_table_and_type_label_need_not_exist():
    doc = copy.deepcopy(TINY)
    del doc["performance"]
    doc["jobs"][0].update(type="unknown-label", throughput={"v100": 1, "k80": 2})
    inst = parse_instance(doc)
    assert dict(inst.jobs[0].throughput) == {"v100": 1.0, "k80": 2.0}
    assert inst.performance == Performance()


def test_type_lookup_fails_without_performance_table():
    doc = copy.deepcopy(TINY)
    del doc["performance"]
    with pytest.raises(InstanceError) as info:
        parse_instance(doc, "x.yaml")
    assert [str(p) for p in info.value.problems] == [
        "x.yaml: jobs[0].type: job 'a' has no own throughput row and its type 'resnet' is not in performance.throughput"
    ]


def test_explicit_zero_means_cannot_run_there_and_is_valid():
    doc = copy.deepcopy(TINY)
    doc["performance"]["throughput"]["resnet"]["k80"] = 0
    assert parse_instance(doc).jobs[0].throughput["k80"] == 0.0


def test_job_that_fits_only_where_throughput_is_zero_can_run_nowhere():
    doc = copy.deepcopy(TINY)
    doc["jobs"][1].update(scale_factor=3, throughput={"v100": 4, "k80": 0})  # only k80 has 3 GPUs
    with pytest.raises(InstanceError) as info:
        parse_instance(doc)
    assert info.value.problems[0].path == "jobs[1]"
    assert "can run nowhere: throughput is 0 on every GPU type with >= 3 GPUs (k80)" in info.value.problems[0].message


def test_now_defaults_to_latest_arrival_or_zero_and_can_be_given():
    doc = copy.deepcopy(TINY)
    doc["jobs"][1]["arrival_time"] = 7.5
    assert parse_instance(doc).now == 7.5
    doc["now"] = 100
    assert parse_instance(doc).now == 100.0
    empty = {"format": "schedopt-instance/1", "cluster": {"gpu_types": {"v100": {"count": 1}}}, "jobs": []}
    assert parse_instance(empty).now == 0.0 and parse_instance(empty).jobs == ()


def test_isolated_time_extension():
    doc = copy.deepcopy(TINY)
    doc["jobs"][0]["isolated_time"] = 120
    assert parse_instance(doc).jobs[0].isolated_time == 120.0
    doc["jobs"][0]["isolated_time"] = -1
    with pytest.raises(InstanceError, match=r"jobs\[0\].isolated_time: expected a finite number >= 0, got -1"):
        parse_instance(doc)


def test_derived_nodes_partial_last_node_and_default_gpus_per_node():
    doc = copy.deepcopy(TINY)
    doc["cluster"]["gpu_types"] = {"v100": {"count": 10, "gpus_per_node": 4}, "k80": {"count": 3}}
    doc["jobs"] = []
    inst = parse_instance(doc)
    assert [(n.id, n.gpus, n.rack) for n in inst.cluster.nodes] == [
        ("v100-n0", 4, "r0"), ("v100-n1", 4, "r0"), ("v100-n2", 2, "r0"), ("k80-n0", 3, "r0"),
    ]
    assert inst.cluster.gpu_types["k80"].gpus_per_node == 3


# The example exactly as docs/instance-format.md writes it: one explicit node (4 of the 8 V100s;
# the rest are derived) and a co-location entry for a job type no queued job has.
CONTRACT_EXAMPLE = """
format: schedopt-instance/1
name: small-heterogeneous
cluster:
  gpu_types:
    v100: {count: 8, gpus_per_node: 4, cost_per_hour: 2.48}
    p100: {count: 8, gpus_per_node: 4, cost_per_hour: 1.46}
    k80:  {count: 8, gpus_per_node: 4, cost_per_hour: 0.45}
  nodes:
    - {id: n0, gpu_type: v100, gpus: 4, rack: r0}
  cpu_machines:
    - {id: c0, cores: 32}
jobs:
  - id: j0
    type: "ResNet-50 (batch size 64)"
    scale_factor: 1
    weight: 1.0
    arrival_time: 0.0
    total_steps: 100000
    steps_done: 0
    deadline: null
    user: alice
    throughput: {v100: 3.1, p100: 1.9, k80: 0.6}
performance:
  throughput:
    "ResNet-50 (batch size 64)": {v100: 3.1, p100: 1.9, k80: 0.6}
  colocated:
    - {types: ["ResNet-50 (batch size 64)", "LM (batch size 20)"], gpu_type: v100,
       throughput: [2.0, 1.1]}
  unconsolidated:
    "ResNet-50 (batch size 64)": {v100: 2.5, p100: 1.6, k80: 0.5}
  cpu_time:
    j0: 5400.0
"""


def test_contract_example_loads_with_every_section():
    inst = parse_instance(yaml.safe_load(CONTRACT_EXAMPLE))
    assert inst.cluster.type_names == ("v100", "p100", "k80")
    assert inst.cluster.cpu_machines == (CpuMachine("c0", 32),)
    assert inst.performance.unconsolidated["ResNet-50 (batch size 64)"]["p100"] == 1.6
    assert dict(inst.performance.cpu_time) == {"j0": 5400.0}
    assert inst.jobs[0].user == "alice" and inst.jobs[0].deadline is None and inst.jobs[0].total_steps == 100000.0


def test_contract_example_verbatim_loads_and_derives_the_nodes_it_omits():
    inst = parse_instance(yaml.safe_load(CONTRACT_EXAMPLE))
    nodes = inst.cluster.nodes
    assert nodes[0] == Node("n0", "v100", 4, "r0")
    assert [(n.id, n.gpu_type, n.gpus) for n in nodes[1:]] == [
        ("v100-n0", "v100", 4), ("p100-n0", "p100", 4), ("p100-n1", "p100", 4),
        ("k80-n0", "k80", 4), ("k80-n1", "k80", 4)]
    assert sum(n.gpus for n in nodes) == 24
    assert inst.performance.colocated[0].types == ("ResNet-50 (batch size 64)", "LM (batch size 20)")


def test_derived_node_ids_skip_ids_the_file_already_uses():
    doc = yaml.safe_load(CONTRACT_EXAMPLE)
    doc["cluster"]["nodes"] = [{"id": "v100-n0", "gpu_type": "v100", "gpus": 2}]
    ids = [n.id for n in parse_instance(doc).cluster.nodes if n.gpu_type == "v100"]
    assert ids == ["v100-n0", "v100-n1", "v100-n2"] and len(set(ids)) == 3



def test_yaml_and_json_files_give_equal_instances(tmp_path):
    doc = yaml.safe_load(CONTRACT_EXAMPLE)
    (tmp_path / "a.json").write_text(json.dumps(doc))
    (tmp_path / "a.yaml").write_text(CONTRACT_EXAMPLE)
    from_json, from_yaml = load_instance(tmp_path / "a.json"), load_instance(str(tmp_path / "a.yaml"))
    assert from_json == from_yaml
    assert from_json.source == str(tmp_path / "a.json")


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".yml"])
def test_save_then_load_round_trips(tmp_path, suffix):
    for inst in (parse_instance(copy.deepcopy(TINY)), parse_instance(yaml.safe_load(CONTRACT_EXAMPLE))):
        path = tmp_path / f"out{suffix}"
        save_instance(inst, path)
        assert load_instance(path) == inst
        assert validate_file(path) == []


def test_deadline_options_give_the_deadline_and_round_trip(tmp_path):
    doc = copy.deepcopy(TINY)
    doc["jobs"][0]["deadline_options"] = [{"after_s": 600, "value": 3}, {"after_s": 1200, "value": 1.5}]
    inst = parse_instance(doc)
    a, b = inst.jobs
    assert a.deadline == 600.0  # the tightest option when `deadline` is left out
    assert a.slo_options == (DeadlineOption(600.0, 3.0), DeadlineOption(1200.0, 1.5))
    assert b.slo_options == (DeadlineOption(3600.0, 1.0),)  # deadline alone: worth the weight
    assert parse_instance(copy.deepcopy(TINY)).jobs[0].slo_options == ()  # best effort
    save_instance(inst, tmp_path / "d.yaml")
    assert load_instance(tmp_path / "d.yaml") == inst


def test_parameter_server_extension_reads_defaults_and_round_trips(tmp_path):
    doc = copy.deepcopy(TINY)
    doc["cluster"]["nodes"] = [{"id": "m0", "gpu_type": "v100", "gpus": 2, "cpus": 32,
                                "memory_gb": 256, "bandwidth_gbps": 50}]
    doc["jobs"][0]["parameter_server"] = {
        "epochs": 3, "samples_per_epoch": 5000, "batch_per_worker": 16,
        "compute_s_per_sample": [0.001, 0.003], "model_size_gb": 0.25,
        "worker": {"bandwidth_gbps": 10, "cpus": 4}, "ps": {"bandwidth_gbps": 20, "memory_gb": 8}}
    inst = parse_instance(doc)
    node = inst.cluster.nodes[0]
    assert (node.cpus, node.memory_gb, node.bandwidth_gbps) == (32.0, 256.0, 50.0)
    assert inst.cluster.nodes[1].bandwidth_gbps is None  # derived nodes state no resources
    spec = inst.jobs[0].parameter_server
    assert spec == ParameterServerSpec(3, 5000.0, 16, (0.001, 0.003), (0.25,),
                                       TaskDemand(10.0, gpus=1, cpus=4.0), TaskDemand(20.0, memory_gb=8.0),
                                       max_workers=8, max_ps=8)
    assert spec.compute_s == pytest.approx(0.004) and spec.size_gb == 0.25
    assert inst.jobs[1].parameter_server is None
    for suffix in (".json", ".yaml"):
        save_instance(inst, tmp_path / f"p{suffix}")
        assert load_instance(tmp_path / f"p{suffix}") == inst
    assert instance_to_dict(inst)["jobs"][0]["parameter_server"]["model_size_gb"] == 0.25


def test_instance_to_dict_writes_resolved_rows_labels_and_explicit_nodes():
    doc = instance_to_dict(parse_instance(copy.deepcopy(TINY)))
    assert doc["jobs"][0]["type"] == "resnet"
    assert doc["jobs"][0]["throughput"] == {"v100": 3.5, "k80": 1.0}
    assert doc["cluster"]["nodes"][0] == {"id": "v100-n0", "gpu_type": "v100", "gpus": 2, "rack": "r0"}
    assert doc["performance"] == {"throughput": {"resnet": {"v100": 3.5, "k80": 1.0}}}
    assert json.loads(json.dumps(doc)) == doc  # plain data only
    assert parse_instance(doc) == parse_instance(copy.deepcopy(TINY))


def test_save_to_unknown_suffix_is_an_instance_error(tmp_path):
    with pytest.raises(InstanceError, match="unknown suffix '.txt'"):
        save_instance(parse_instance(copy.deepcopy(TINY)), tmp_path / "x.txt")


def test_unknown_suffix_is_read_as_json_or_yaml(tmp_path):
    (tmp_path / "a.instance").write_text(json.dumps(TINY))
    (tmp_path / "b.instance").write_text(yaml.safe_dump(TINY, sort_keys=False))
    assert load_instance(tmp_path / "a.instance") == load_instance(tmp_path / "b.instance")


def test_validate_file_returns_all_three_problems(tmp_path):
    doc = copy.deepcopy(TINY)
    doc["jobs"][0]["weight"] = -2
    doc["jobs"][1]["throughput"]["tpu"] = 1.0
    doc["cluster"]["gpu_types"]["k80"]["count"] = True
    path = tmp_path / "three.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    problems = validate_file(path)
    assert [(p.file, p.path) for p in problems] == [
        (str(path), "cluster.gpu_types.k80.count"),
        (str(path), "jobs[0].weight"),
        (str(path), "jobs[1].throughput.tpu"),
    ]
    assert problems[0].message == "expected an integer >= 1, got true"
    assert problems[1].message == "expected a finite number > 0, got -2"
    assert problems[2].message == "unknown GPU type 'tpu'; expected one of cluster.gpu_types: v100, k80"


def test_odd_keys_are_quoted_in_paths():
    doc = copy.deepcopy(TINY)
    doc["performance"]["throughput"] = {"ResNet-50 (batch 64)": {"v100": -1, "k80": 1}}
    doc["jobs"][0]["type"] = "ResNet-50 (batch 64)"
    with pytest.raises(InstanceError) as info:
        parse_instance(doc)
    assert info.value.problems[0].path == "performance.throughput['ResNet-50 (batch 64)'].v100"


def test_instance_error_str_is_a_single_line_even_with_newlines_in_keys():
    doc = copy.deepcopy(TINY)
    doc["jobs"][0]["line\nbreak"] = 1
    doc["jobs"][1]["id"] = "two\nlines"
    with pytest.raises(InstanceError) as info:
        parse_instance(doc)
    assert "\n" not in str(info.value)
    assert all("\n" not in str(p) for p in info.value.problems)


def test_shipped_schema_is_valid_draft_2020_12_and_is_package_data():
    shipped = json.loads(resources.files("schedopt.instance").joinpath("schema.json").read_text())
    Draft202012Validator.check_schema(shipped)
    assert shipped == schema()
    assert Draft202012Validator(shipped).is_valid(json.loads(json.dumps(TINY)))
    assert set(shipped["properties"]) == {"format", "name", "now", "cluster", "jobs", "performance",
                                          "users"}


def test_in_memory_documents_with_non_json_values_are_instance_errors():
    loop: list = []
    loop.append(loop)
    for doc in (None, 3, "x", [], {"format": loop}, {"format": {1: 2}}, {"format": object()}, {"jobs": [{"id": 10**5000}]}):
        with pytest.raises(InstanceError):
            parse_instance(doc)


def test_instance_equality_ignores_source():
    a = parse_instance(copy.deepcopy(TINY), "a.json")
    b = parse_instance(copy.deepcopy(TINY), "b.yaml")
    assert a == b and isinstance(a, Instance) and isinstance(a.cluster, Cluster)


BUNDLED = sorted(p for p in (Path(__file__).parents[1] / "instances").iterdir() if p.suffix in {".json", ".yaml", ".yml"})


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_bundled_instances_are_valid_and_round_trip(path, tmp_path):
    inst = load_instance(path)
    assert validate_file(path) == [] and len(inst.jobs) > 0
    for suffix in (".json", ".yaml"):
        save_instance(inst, tmp_path / f"copy{suffix}")
        assert load_instance(tmp_path / f"copy{suffix}") == inst


# --- the columnar fast path (JSON files read into a JobTable) -------------------------------

import pickle

import numpy as np

from schedopt.core.problem import ThroughputProblem
from schedopt.instance.build import build_instance
from schedopt.instance.columnar import columnar_instance
from schedopt.instance.table import JobTable

BUNDLED_JSON = sorted(p for p in Path(__file__).resolve().parents[1].joinpath("instances")
                      .glob("*.json") if "tables" not in p.name)  # tests/test_tables.py has those
PROBLEM_ARRAYS = ("throughput", "scale_factor", "weight", "capacity", "cost_per_hour",
                  "remaining_steps", "time_since_arrival", "isolated_time", "time_to_deadline")


def _ordinary(path: Path) -> Instance:
    """The instance built job by job from the parsed document (the path before the fast one)."""
    return build_instance(json.loads(path.read_text()), str(path))


def _same_problem(a: ThroughputProblem, b: ThroughputProblem) -> None:
    assert a.job_ids == b.job_ids and a.gpu_types == b.gpu_types
    for name in PROBLEM_ARRAYS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.user is None) == (b.user is None)
    if a.user is not None:
        np.testing.assert_array_equal(a.user, b.user)
        np.testing.assert_array_equal(a.user_weight, b.user_weight)
        assert a.user_names == b.user_names


@pytest.mark.parametrize("path", BUNDLED_JSON, ids=lambda p: p.name)
def test_fast_path_gives_the_same_instance_and_arrays_as_the_job_by_job_build(path):
    fast, slow = load_instance(path), _ordinary(path)
    assert fast == slow and fast.now == slow.now and fast.job_ids == slow.job_ids
    _same_problem(ThroughputProblem.from_instance(fast), ThroughputProblem.from_instance(slow))


def test_fast_path_reads_every_job_field_into_columns(tmp_path):
    doc = copy.deepcopy(TINY)
    doc["jobs"].append({"id": "c", "throughput": {"k80": 2.5, "v100": 0}, "isolated_time": 7,
                        "total_steps": None, "deadline": None, "type": None, "user": None})
    doc["users"] = {"alice": {"weight": 3}}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(doc))
    inst = load_instance(path)
    table = inst.jobs
    assert isinstance(table, JobTable) and inst == parse_instance(copy.deepcopy(doc))
    np.testing.assert_array_equal(table.throughput, [[3.5, 1], [4, 0], [0, 2.5]])
    assert table.ids == ("a", "b", "c") and table.job_type == ["resnet", None, None]
    assert table.scale_factor.tolist() == [1, 2, 1] and table.weight.tolist() == [2, 1, 1]
    np.testing.assert_array_equal(table.total_steps, [1000, np.nan, np.nan])
    np.testing.assert_array_equal(table.deadline, [np.nan, 3600, np.nan])
    assert table.user == [None, "alice", None] and table.isolated_time.tolist() == [0, 0, 7]
    assert inst.now == 5.0
    problem = ThroughputProblem.from_instance(inst)
    np.testing.assert_array_equal(problem.remaining_steps, [990, np.nan, np.nan])
    np.testing.assert_array_equal(problem.time_to_deadline, [np.nan, 3600 - 5, np.nan])
    assert problem.user_weight.tolist() == [3.0, 2.0, 1.0]  # alice, then a and c alone


def _row_first(doc: dict) -> dict:
    return {"users": doc.pop("users"), **doc} if "users" in doc else doc


@pytest.mark.parametrize("change, one_pass", [
    (lambda d: None, True),
    (lambda d: d["jobs"][1].update(throughput={"k80": 0, "v100": 4}), True),  # not the cluster's order
    (lambda d: d.update(users={"throughput": {"weight": 3}}), False),  # a user named like the key
    (lambda d: d["jobs"][1].update(throughput={"v100": 4, "k80": 0, "a100": 1}), False),
    (lambda d: d["jobs"][1].pop("throughput") and d["jobs"][1].update(type="resnet"), False),
])
def test_jobs_decoded_in_one_pass_or_after_the_cluster_load_the_same(tmp_path, change, one_pass):
    from schedopt.instance.columnar import _in_one_pass

    doc = copy.deepcopy(TINY)
    change(doc)
    doc = _row_first(doc)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    assert (_in_one_pass(path.read_bytes()) is not None) == one_pass
    try:
        expected = parse_instance(copy.deepcopy(doc))
    except InstanceError:
        assert columnar_instance(path.read_bytes(), str(path)) is None
        return
    inst = columnar_instance(path.read_bytes(), str(path))
    assert inst == expected
    _same_problem(ThroughputProblem.from_instance(inst), ThroughputProblem.from_instance(expected))


@pytest.mark.parametrize("given", [(), (0,), (1,), (0, 1)])
def test_optional_numbers_given_by_every_job_some_or_none(tmp_path, given):
    doc = copy.deepcopy(TINY)
    for job in doc["jobs"]:
        job.pop("total_steps", None), job.pop("deadline", None)
    for m in given:
        doc["jobs"][m].update(total_steps=100.0 * (m + 1), deadline=None if m else 7.5)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    table = columnar_instance(path.read_bytes(), str(path)).jobs
    expected = [100.0 * (m + 1) if m in given else np.nan for m in range(2)]
    np.testing.assert_array_equal(table.total_steps, expected)
    np.testing.assert_array_equal(table.deadline, [7.5 if 0 in given else np.nan, np.nan])
    assert load_instance(path) == parse_instance(copy.deepcopy(doc))


@pytest.mark.parametrize("late", [
    {"weight": 2.5}, {"steps_done": 3, "total_steps": 9}, {"deadline": 7.5}, {"deadline": None},
    {"isolated_time": 4}, {"arrival_time": 6}, {"scale_factor": 2}, {"type": "resnet"},
    {"user": "alice"}, {"weight": 0}, {"scale_factor": 4},  # the last two: broken rules
])
def test_a_field_first_written_past_the_first_mib_loads_as_the_job_by_job_build(
        tmp_path, monkeypatch, late):
    from schedopt.instance import columnar
    from schedopt.instance.columnar import _in_one_pass

    if late != {"weight": 2.5}:  # one case at the real 1 MiB; the others at 4 KiB, faster
        monkeypatch.setattr(columnar, "_ROW_SEARCHED", 1 << 12)
    _ROW_SEARCHED = columnar._ROW_SEARCHED
    doc = copy.deepcopy(TINY)
    doc["users"] = {"alice": {"weight": 3}}
    filler = [{"id": f"j{m}", "throughput": {"v100": 1.5, "k80": 0.5}}
              for m in range(_ROW_SEARCHED // 30)]
    doc["jobs"] = filler + [{"id": "late", "throughput": {"v100": 2, "k80": 1}, **late}]
    path = tmp_path / "x.json"
    path.write_bytes(json.dumps(doc, separators=(",", ":")).encode())
    first_mib = path.read_bytes()[:_ROW_SEARCHED]
    assert not any(f'"{key}"'.encode() in first_mib for key in late)
    assert _in_one_pass(path.read_bytes()) is None  # the records without the field declined it
    try:
        expected = parse_instance(copy.deepcopy(doc), str(path))
    except InstanceError as error:
        with pytest.raises(InstanceError) as caught:
            load_instance(path)
        assert caught.value.problems == error.problems
        return
    inst = load_instance(path)
    assert isinstance(inst.jobs, JobTable) and inst == expected
    _same_problem(ThroughputProblem.from_instance(inst), ThroughputProblem.from_instance(expected))


def test_fields_no_job_writes_are_their_defaults_without_a_pass(tmp_path):
    from schedopt.instance.columnar import _in_one_pass

    doc = {"format": "schedopt-instance/1", "cluster": TINY["cluster"],
           "jobs": [{"id": "a", "throughput": {"v100": 1, "k80": 2}},
                    {"id": "b", "throughput": {"v100": 3, "k80": 0}, "total_steps": 5}]}
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    _, jobs, _, fields = _in_one_pass(path.read_bytes())
    assert fields == ("total_steps",) and not hasattr(jobs[0], "weight")
    table = load_instance(path).jobs
    assert table.scale_factor.dtype == np.int64 and table.scale_factor.tolist() == [1, 1]
    assert table.weight.tolist() == [1, 1] and table.arrival_time.tolist() == [0, 0]
    assert table.steps_done.tolist() == [0, 0] and table.isolated_time.tolist() == [0, 0]
    np.testing.assert_array_equal(table.total_steps, [np.nan, 5])
    np.testing.assert_array_equal(table.deadline, [np.nan, np.nan])
    assert table.job_type is None and table.user is None
    assert load_instance(path) == parse_instance(copy.deepcopy(doc))


@pytest.mark.parametrize("change, declined", [
    (lambda d: d["jobs"][0].update(deadline_options=[{"after_s": 10, "value": 1}], deadline=10),
     True),
    (lambda d: d["jobs"][1].update(scale_factor=2.0), True),  # an integer to JSON Schema only
    (lambda d: d["jobs"][1].update(weight=10 ** 30), False),
    (lambda d: d["jobs"][1].update(total_steps=0, steps_done=0), False),
])
def test_documents_load_the_same_whichever_path_reads_them(tmp_path, change, declined):
    doc = copy.deepcopy(TINY)
    change(doc)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    assert (columnar_instance(path.read_bytes(), str(path)) is None) == declined
    assert load_instance(path) == parse_instance(copy.deepcopy(doc))


@pytest.mark.parametrize("change, where", [
    (lambda d: d["jobs"][1]["throughput"].update(a100=1), "jobs[1].throughput.a100"),
    (lambda d: d["jobs"][1]["throughput"].pop("k80"), "jobs[1].throughput.k80"),
    (lambda d: d["jobs"][1].update(id="a"), "jobs[1].id"),
    (lambda d: d["jobs"][0].update(steps_done=2000), "jobs[0].steps_done"),
    (lambda d: d["jobs"][1].update(throughput={"v100": 0, "k80": 0}), "jobs[1]"),
    (lambda d: d["jobs"][0].update(type="bert"), "jobs[0].type"),
    (lambda d: d["jobs"][1].update(scale_factor=4), "jobs[1].scale_factor"),
    (lambda d: d.update(performance={"cpu_time": {"zz": 1}}), "performance"),
])
def test_cross_field_rules_broken_in_columns_get_the_detailed_report(tmp_path, change, where):
    doc = copy.deepcopy(TINY)
    change(doc)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    assert columnar_instance(path.read_bytes(), str(path)) is None
    with pytest.raises(InstanceError) as caught:
        load_instance(path)
    assert any(p.path.startswith(where) for p in caught.value.problems), caught.value.problems


def test_job_table_behaves_as_the_tuple_of_its_jobs(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    inst, slow = load_instance(path), parse_instance(copy.deepcopy(TINY))
    table, jobs = inst.jobs, slow.jobs
    assert len(table) == 2 and table[0] == jobs[0] and table[-1] == jobs[1]
    assert table[:1] == jobs[:1] and list(table) == list(jobs) and table == jobs and jobs == table
    assert table + jobs == jobs + jobs and jobs + table == jobs + jobs
    assert pickle.loads(pickle.dumps(table)) == jobs
    assert JobTable.of_jobs(jobs, ("k80", "v100")).throughput.tolist() == [[1, 3.5], [0, 4]]
    assert table.reordered(("k80", "v100")).throughput.tolist() == [[1, 3.5], [0, 4]]
