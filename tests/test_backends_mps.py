"""The MPS writer: HiGHS's reader gets back exactly the arrays we wrote, on hand-made edge cases and
random programs, and the LP optimum of the file is the optimum of the program."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from schedopt.backends import LinearProgram, Status, solve_lp
from schedopt.backends.mps import write_mps
from test_backends_property import lp_shapes, random_lp

INF = np.inf


def read_back(lp: LinearProgram, path):
    """Write `lp`, read it with HiGHS and check every array; HiGHS drops free rows. Returns the Highs."""
    import highspy

    write_mps(lp, path)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    read = h.getLp()
    kept = np.isfinite(lp.row_lower) | np.isfinite(lp.row_upper)
    np.testing.assert_array_equal(read.col_lower_, lp.col_lower)
    np.testing.assert_array_equal(read.col_upper_, lp.col_upper)
    np.testing.assert_array_equal(read.row_lower_, lp.row_lower[kept])
    np.testing.assert_array_equal(read.row_upper_, lp.row_upper[kept])
    np.testing.assert_array_equal(read.col_cost_, lp.c)
    assert read.offset_ == lp.objective_offset
    assert read.sense_ == (highspy.ObjSense.kMaximize if lp.maximize else highspy.ObjSense.kMinimize)
    integer = lp.integer if lp.integer is not None else np.zeros(lp.num_cols, dtype=bool)
    # HiGHS leaves integrality_ empty when no column is integer
    read_integer = [kind == highspy.HighsVarType.kInteger for kind in read.integrality_]
    assert (read_integer or [False] * lp.num_cols) == list(integer)
    matrix = sp.csc_matrix((read.a_matrix_.value_, read.a_matrix_.index_, read.a_matrix_.start_),
                           shape=(int(kept.sum()), lp.num_cols))
    np.testing.assert_array_equal(matrix.toarray(), lp.A.toarray()[kept])
    return h


def test_every_bound_and_row_kind_reads_back(tmp_path):
    """Free, minus-infinity, negative, fixed, unbounded-integer and empty columns; <=, >=, =, ranged
    and free rows; a maximization with an offset; a coefficient whose shortest exact decimal has 16 digits."""
    lp = LinearProgram(
        c=np.array([1, -2, 0.5, 0, 1e-7, 3, 0, 1 / 3]),
        A=sp.csr_matrix(np.array([[1.0, 2, 0, 0, 0, 0, 0, 1], [0, 1, -1, 0, 0, 0, 0, 0], [1, 0, 0, 3, 0, 0, 0, 0],
                                  [0, 0, 0, 0, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 0, 1]])),
        row_lower=np.array([-INF, 1, 2, -5, -INF]), row_upper=np.array([4, INF, 2, 7.5, INF]),
        col_lower=np.array([-INF, -INF, -5, 2.5, 0, -3, 0, 0]), col_upper=np.array([INF, 3, -1, 2.5, INF, 7, 1, 1e6]),
        maximize=True, objective_offset=-2.25, integer=np.array([0, 0, 0, 0, 1, 1, 1, 0], dtype=bool))
    read_back(lp, tmp_path / "edge.mps")


@settings(max_examples=25, deadline=None)
@given(**lp_shapes, integer=st.booleans())
def test_random_programs_read_back_and_lps_keep_their_optimum(tmp_path_factory, seed, num_cols, num_rows,
                                                              maximize, integer):
    lp = random_lp(seed, num_cols, num_rows, maximize, 0.5 if integer else 0.0)
    h = read_back(lp, tmp_path_factory.mktemp("mps") / "model.mps")
    if not integer:  # MILPs are compared through CBC, which reads these files, in test_backends_property
        h.run()
        direct = solve_lp(lp, "highs")
        assert direct.status is Status.OPTIMAL
        assert h.getInfo().objective_function_value == pytest.approx(direct.objective, rel=1e-9, abs=1e-9)
