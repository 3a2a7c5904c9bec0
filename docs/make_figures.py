"""Write the documentation figures in docs/img (run from the repository root):
SMD's T(w, p) for one job and its 200-job comparison with the baselines."""
from importlib import resources

import numpy as np
import schedopt
from schedopt.instance import load_instance
from schedopt.plots import completion_totals, ps_completion_time
from schedopt.traces.parameter_server import parameter_server_instance

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
