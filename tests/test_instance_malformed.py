"""Every file in tests/malformed/ fails to load with an InstanceError that names the file, the
path and what was expected; never with another exception, never with a multi-line message."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedopt.errors import InstanceError
from schedopt.instance import load_instance, validate_file

MALFORMED = Path(__file__).parent / "malformed"

# file -> substring of the first problem (path and/or message)
EXPECTED = {
    "missing_format.json": "format: required key is missing (expected 'schedopt-instance/1')",
    "wrong_format.json": "format: expected 'schedopt-instance/1', got 'schedopt-instance/2'",
    "missing_cluster.json": "cluster: required key is missing (expected a mapping)",
    "missing_gpu_types.json": "cluster.gpu_types: required key is missing",
    "empty_gpu_types.json": "cluster.gpu_types: expected a mapping with at least 1 entry, got an empty mapping",
    "count_negative.json": "cluster.gpu_types.v100.count: expected an integer >= 1, got -4",
    "count_zero.json": "cluster.gpu_types.v100.count: expected an integer >= 1, got 0",
    "count_float.json": "cluster.gpu_types.v100.count: expected an integer >= 1, got 2.5",
    "count_string.json": "cluster.gpu_types.v100.count: expected an integer >= 1, got '4'",
    "count_bool.yaml": "cluster.gpu_types.v100.count: expected an integer >= 1, got true",
    "count_too_large.json": "cluster.gpu_types.v100.count: expected at most 1000000 GPUs per type",
    "huge_integer_count.json": "invalid JSON: Exceeds the limit (4300 digits)",
    "missing_job_id.json": "jobs[1].id: required key is missing (expected a non-empty string)",
    "duplicate_job_id.json": "jobs[1].id: duplicate job id 'j0' (first used at jobs[0])",
    "job_id_not_a_string.json": "jobs[1].id: expected a non-empty string, got 7",
    "negative_throughput.json": "jobs[1].throughput.k80: expected a finite number >= 0, got -0.5",
    "nan_throughput.json": "jobs[1].throughput.k80: expected a finite number >= 0, got NaN",
    "nan_throughput.yaml": "jobs[1].throughput.k80: expected a finite number >= 0, got NaN",
    "infinity_throughput.json": "jobs[1].throughput.k80: expected a finite number >= 0, got Infinity",
    "huge_number_throughput.json": "jobs[1].throughput.k80: expected a finite number >= 0, got Infinity",
    "unknown_gpu_type_in_job_row.json": "jobs[1].throughput.a100: unknown GPU type 'a100'; expected one of cluster.gpu_types: v100, k80",
    "job_row_missing_gpu_type.json": "jobs[1].throughput.k80: missing; job 'j1' needs steps/s on every GPU type",
    "type_row_missing_gpu_type.json": "performance.throughput.resnet.k80: missing; job 'j0' (type 'resnet')",
    "job_type_not_in_performance.json": "jobs[0].type: job 'j0' has no own throughput row and its type 'bert' is not in performance.throughput",
    "job_without_row_or_type.json": "jobs[0]: job 'j0' has neither a throughput row nor a type",
    "job_runs_nowhere.json": "jobs[1]: job 'j1' can run nowhere",
    "scale_factor_zero.json": "jobs[0].scale_factor: expected an integer >= 1, got 0",
    "scale_factor_fraction.json": "jobs[0].scale_factor: expected an integer >= 1, got 2.5",
    "scale_factor_larger_than_cluster.json": "jobs[0].scale_factor: scale_factor 16 is larger than any GPU type's count (max 4)",
    "negative_weight.json": "jobs[0].weight: expected a finite number > 0, got -1.5",
    "zero_weight.json": "jobs[0].weight: expected a finite number > 0, got 0",
    "negative_deadline.json": "jobs[0].deadline: expected a finite number >= 0 or null, got -60",
    "negative_arrival_time.json": "jobs[0].arrival_time: expected a finite number >= 0, got -1",
    "negative_cost_per_hour.json": "cluster.gpu_types.k80.cost_per_hour: expected a finite number >= 0 or null, got -0.45",
    "steps_done_over_total.json": "jobs[0].steps_done: expected at most total_steps (100), got 150",
    "unknown_top_level_key.json": "jobz: unknown key 'jobz'; expected one of: format, name, now, cluster, jobs, performance",
    "unknown_job_key.json": "jobs[0].wieght: unknown key 'wieght'",
    "unknown_gpu_type_key.json": "cluster.gpu_types.v100.cost: unknown key 'cost'",
    "top_level_list.json": "expected a mapping at the top level",
    "top_level_string.yaml": "expected a mapping at the top level (format, cluster, jobs, ...), got 'just some words'",
    "jobs_not_a_list.json": "jobs: expected a list, got a mapping",
    "cluster_is_a_string.json": "cluster: expected a mapping, got 'big'",
    "node_unknown_gpu_type.json": "cluster.nodes[2].gpu_type: unknown GPU type 'a100'",
    "nodes_exceed_count.json": "cluster.gpu_types.k80.count: count is 4 but cluster.nodes hold 6 k80 GPU(s)",
    "duplicate_node_id.json": "cluster.nodes[1].id: duplicate node id 'n0'",
    "colocated_unknown_gpu_type.json": "performance.colocated[0].gpu_type: unknown GPU type 'a100'",
    "colocated_throughput_not_a_pair.json": "performance.colocated[0].throughput: expected a list of 2 items, got a list of 3",
    "unconsolidated_unknown_gpu_type.json": "performance.unconsolidated.resnet.tpu: unknown GPU type 'tpu'",
    "cpu_time_unknown_job.json": "performance.cpu_time.j9: unknown job id 'j9'",
    "python_object_apply.yaml": "python/object/apply:os.system",
    "python_name_tag.yaml": "python/name:os.system",
    "yaml_syntax_error.yaml": "invalid YAML at line 4, column 1",
    "yaml_two_documents.yaml": "invalid YAML at line 22",
    "yaml_date_value.yaml": "jobs[0].arrival_time: expected plain data",
    "yaml_integer_gpu_key.yaml": "cluster.gpu_types: expected string keys, got the key 2080",
    "yaml_billion_laughs.yaml": "more than 2000000 values",
    "empty.json": "the file is empty",
    "whitespace_only.yaml": "the file holds only whitespace",
    "only_comments.yaml": "the file holds no document",
    "truncated.json": "invalid JSON at line 17, column 13",
    "deeply_nested.json": "nested too deeply",
    "not_utf8.json": "not UTF-8 text",
    "garbage.txt": "unknown suffix '.txt'",
    "null_everywhere.json": "format: expected 'schedopt-instance/1', got null",
    "deadline_options_not_increasing.json": "jobs[0].deadline_options[1].after_s: expected after_s larger than the previous option's (600)",
    "deadline_options_zero_after.json": "jobs[0].deadline_options[0].after_s: expected a finite number > 0, got 0",
    "deadline_options_negative_value.json": "jobs[0].deadline_options[0].value: expected a finite number >= 0, got -1",
    "deadline_options_missing_value.json": "jobs[0].deadline_options[0].value: required key is missing (expected a finite number >= 0)",
    "deadline_options_empty.json": "jobs[0].deadline_options: expected a list of at least 1 item(s), got an empty list",
    "deadline_disagrees_with_options.json": "jobs[0].deadline: expected the first deadline option's after_s (60)",
    "ps_worker_missing_bandwidth.json": "jobs[0].parameter_server.worker.bandwidth_gbps: required key is missing (expected a finite number > 0)",
    "ps_bandwidth_zero.json": "jobs[0].parameter_server.ps.bandwidth_gbps: expected a finite number > 0, got 0",
    "ps_zero_epochs.json": "jobs[0].parameter_server.epochs: expected an integer >= 1, got 0",
    "ps_layers_all_zero.json": "jobs[0].parameter_server.compute_s_per_sample: expected a positive total (some layer > 0), got 2 layer(s) of 0",
    "ps_model_size_empty_list.json": "jobs[0].parameter_server.model_size_gb: expected a finite number > 0 or a list of at least 1 item(s), got an empty list",
    "ps_worker_larger_than_any_node.json": "jobs[0].parameter_server.worker.gpus: a worker needs 16 gpus but no node has more than 8; expected at most 8",
    "ps_unknown_key.json": "jobs[0].parameter_server.learning_rate: unknown key 'learning_rate'; expected one of: epochs, samples_per_epoch",
    "ps_max_ps_too_large.json": "jobs[0].parameter_server.max_ps: expected at most 1024, got 5000",
    "node_negative_bandwidth.json": "cluster.nodes[0].bandwidth_gbps: expected a finite number >= 0, got -10",
    "user_weight_not_positive.json": "users.bob.weight: expected a finite number > 0, got -1",
    "several_problems.json": "jobs[0].weight: expected a finite number > 0, got -1",
}
SEVERAL = {"null_everywhere.json": 4, "several_problems.json": 3, "yaml_integer_gpu_key.yaml": 3}


def test_the_table_covers_every_malformed_file():
    assert sorted(p.name for p in MALFORMED.iterdir()) == sorted(EXPECTED)
    assert len(EXPECTED) >= 35


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_malformed_file_raises_instance_error_naming_file_path_and_expectation(name):
    path = MALFORMED / name
    with pytest.raises(InstanceError) as info:
        load_instance(path)
    first = info.value.problems[0]
    assert first.file == str(path)
    assert EXPECTED[name] in str(first)
    assert len(info.value.problems) == SEVERAL.get(name, 1), [str(p) for p in info.value.problems]
    assert "\n" not in str(info.value)
    assert str(info.value).startswith(str(path))


@pytest.mark.parametrize("name", sorted(SEVERAL))
def test_validate_file_returns_every_problem(name):
    problems = validate_file(MALFORMED / name)
    assert len(problems) == SEVERAL[name]
    assert all("\n" not in str(p) for p in problems)


def test_several_problems_are_reported_in_document_order():
    problems = validate_file(MALFORMED / "several_problems.json")
    assert [p.path for p in problems] == ["jobs[0].weight", "jobs[1].id", "colour"]
    assert problems[1].message == "duplicate job id 'j0' (first used at jobs[0])"
    assert problems[2].message.startswith("unknown key 'colour'; expected one of: format, name, now")


def test_error_message_counts_the_other_problems():
    with pytest.raises(InstanceError) as info:
        load_instance(MALFORMED / "several_problems.json")
    assert str(info.value).endswith("got -1 (and 2 more problem(s))")


def test_yaml_python_tag_is_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.yaml"
    path.write_text(f'!!python/object/apply:os.system ["touch {marker}"]\n')
    with pytest.raises(InstanceError, match="could not determine a constructor"):
        load_instance(path)
    assert not marker.exists()


def test_yaml_python_tag_nested_inside_a_valid_document_is_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.yml"
    path.write_text(
        "format: schedopt-instance/1\n"
        f'name: !!python/object/apply:os.system ["touch {marker}"]\n'
        "cluster: {gpu_types: {v100: {count: 1}}}\njobs: []\n"
    )
    problems = validate_file(path)
    assert len(problems) == 1 and "line 2" in problems[0].message
    assert not marker.exists()


def test_missing_file_and_directory_are_instance_errors(tmp_path):
    assert validate_file(tmp_path / "nope.json")[0].message.startswith("cannot read the file: No such file")
    assert validate_file(tmp_path)[0].message.startswith("cannot read the file")
