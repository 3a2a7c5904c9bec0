"""Write the documentation figures in docs/img (run from the repository root):
SMD's T(w, p) for one job and its 200-job comparison with the baselines, and the accuracy of
performance-model completion on Gavel's table (needs ../shared/trace-samples).

    python docs/make_figures.py           # all
    python docs/make_figures.py perf      # only docs/img/perf-completion.png (~2 min)
"""
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import schedopt
from schedopt.instance import load_instance
from schedopt.plots import completion_totals, ps_completion_time
from schedopt.traces.parameter_server import parameter_server_instance

GAVEL_TABLE = Path("../shared/trace-samples/gavel/simulation_throughputs.json")


def smd():
    with resources.as_file(resources.files("schedopt.instances") / "smd-small.json") as path:
        small = load_instance(path)
    job = small.jobs[5]
    fig = ps_completion_time(job.parameter_server, workers=np.arange(1, 17), ps=[1, 2, 4, 8])
    fig.axes[0].set_title(f"{job.id} ({job.type}): T(w, p)")
    fig.savefig("docs/img/smd_completion_time.png", dpi=110)
    instance = parameter_server_instance(200, 80, seed=0)
    totals = {p: schedopt.solve(instance, p).objective for p in ("smd", "smd_greedy", "smd_equal_split")}
    fig = completion_totals(totals)
    fig.axes[0].set_title("200 jobs, 80 machines: sum of completion times")
    fig.savefig("docs/img/smd_200_jobs.png", dpi=110)
    print({p: round(t / 3600, 1) for p, t in totals.items()})


def perf():
    """The accuracy study of docs/performance-models.md: what `schedopt perf study
    simulation_throughputs.json --fractions 0.1,0.3,0.5,0.7,0.9 --target both --seeds 3` prints."""
    from schedopt.perf import accuracy_study, gavel_model, plot_study, summarize

    if not GAVEL_TABLE.exists():
        print(f"skipped docs/img/perf-completion.png: no {GAVEL_TABLE}")
        return
    frame = accuracy_study(gavel_model(GAVEL_TABLE), (0.1, 0.3, 0.5, 0.7, 0.9), ("pairs", "isolated"),
                           seeds=3, progress=True)
    fig = plot_study(frame, title="Gavel's throughput table: completing hidden entries")
    fig.savefig("docs/img/perf-completion.png", dpi=110)
    print(summarize(frame).round(3).to_string(index=False))


if __name__ == "__main__":
    chosen = sys.argv[1:] or ["smd", "perf"]
    for name in chosen:
        {"smd": smd, "perf": perf}[name]()
