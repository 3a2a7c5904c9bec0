"""raw_max_min: maximize t s.t. sum_j T[m,j] X[m,j] >= w_m t for every job m (raw steps/s
per unit weight, no normalization), under Gavel's base constraints (docs/formulations.md).

    schedopt solve instances/tiny.json --policy examples.custom_policy:raw_max_min --json
"""

import schedopt


@schedopt.policy("raw_max_min", summary="max-min of raw steps/s per unit weight",
                 objective="min over jobs of steps/s per unit weight")
def raw_max_min(problem, model):
    # X >= 0, zero where the job cannot run; rows "time" (sum_j X <= 1), "gpus" (<= c_j GPUs)
    X = schedopt.allocation_variable(model, problem)
    t = model.variable("t")
    model.add("level", (problem.throughput * X).sum(axis=1) >= problem.weight * t)
    model.maximize(t)
    return X


if __name__ == "__main__":
    result = schedopt.solve("instances/tiny.json", raw_max_min)
    print(result.status.value, result.objective)
