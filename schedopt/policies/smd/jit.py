"""numba for smd's inner loops: the tabu search (`tabu_compiled`) and the packing rules
(`packing_compiled`), the same results bit for bit as their numpy versions, which run where
numba is missing, where its JIT is disabled (NUMBA_DISABLE_JIT=1), or with COMPILED = False.

Loading numba and the compiled loops costs a process 0.7-1 s once (0.3 s to import numba,
0.4 s for the first call, from numba's on-disk cache; about 10 s the first time after
installing, to compile). So a process runs its first NUMPY_FIRST tabu iterations (0.5-1 s at
60 jobs, about what loading costs) in numpy and only then loads them: a short run never pays
for numba, and a long one pays at most about twice what the better choice made in advance
would have cost (the rule of renting skis until their price is spent; docs/smd.md, "Twice the
tabu iterations, with the inner loops compiled").
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

COMPILED = True
NUMPY_FIRST = 4_000  # tabu iterations a process runs in numpy before it loads numba
numpy_iterations = [0]  # run so far in this process (`repack.relieve` counts them)


def kernels() -> SimpleNamespace | None:
    """The compiled loops (relieve, room_sums, add_tasks, relocation), or None: numpy for now."""
    if not COMPILED or numpy_iterations[0] < NUMPY_FIRST:
        return None
    return load()


@functools.cache
def load() -> SimpleNamespace | None:
    try:
        import numba
    except ImportError:
        return None
    if numba.config.DISABLE_JIT:
        return None  # the loops would run as plain Python, far slower than numpy
    from schedopt.policies.smd import packing_compiled, tabu_compiled

    return SimpleNamespace(relieve=tabu_compiled.relieve, room_sums=packing_compiled.room_sums,
                           add_tasks=packing_compiled.add_tasks,
                           relocation=packing_compiled.relocation)


def njit(function):
    """numba.njit, cached on disk where numba can write its cache (compiled in every process
    where it cannot)."""
    import numba

    try:
        return numba.njit(cache=True, nogil=True)(function)
    except RuntimeError:  # no writable cache location
        return numba.njit(nogil=True)(function)
