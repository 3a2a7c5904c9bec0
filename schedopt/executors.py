"""Where independent work runs: "serial" (this process), "process" (a pool of worker
processes kept for the life of the program) or "ray" (Ray tasks on the cluster at RAY_ADDRESS,
else a local Ray). POP's parts and compare/sweep's simulations both use these.
"""

from __future__ import annotations

import atexit
import os
import time
from concurrent.futures import ProcessPoolExecutor

from schedopt.errors import PolicyError

EXECUTORS = ("serial", "process", "ray")

_POOLS: dict[int, ProcessPoolExecutor] = {}
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def process_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of `workers` spawned processes, kept for the life of the program (starting one
    costs ~1 s)."""
    if workers not in _POOLS:
        import multiprocessing

        # Workers inherit the environment at spawn: one BLAS thread each, so they do not
        # oversubscribe the cores the pool already fills.
        saved = {name: os.environ.get(name) for name in _THREAD_VARIABLES}
        os.environ.update(dict.fromkeys(_THREAD_VARIABLES, "1"))
        try:
            _POOLS[workers] = ProcessPoolExecutor(
                workers, mp_context=multiprocessing.get_context("spawn"))
            # Start every worker now, while the variables are set (they spawn on demand).
            list(_POOLS[workers].map(time.sleep, [0.05] * workers))
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    return _POOLS[workers]


def drop_pool(workers: int) -> None:
    """Forget a broken pool (a worker died), so that the next call starts a fresh one."""
    pool = _POOLS.pop(workers, None)
    if pool is not None:
        pool.shutdown(cancel_futures=True)


@atexit.register
def _close_pools() -> None:
    for pool in _POOLS.values():
        pool.shutdown(cancel_futures=True)
    _POOLS.clear()


def connected_ray():
    """The `ray` module, connected (RAY_ADDRESS's cluster where it is set, else a local Ray);
    PolicyError in one line when Ray is not installed."""
    try:
        import ray
    except ImportError:
        raise PolicyError("the ray executor needs Ray: pip install 'schedopt[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS"), include_dashboard=False,
                 log_to_driver=False)
    return ray
