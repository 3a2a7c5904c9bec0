"""benchmarks/gavel_dropin.py's pieces that run without Gavel: the stand-ins for Gavel's
generated gRPC modules and the checkout folder it accepts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gavel_dropin.py"


@pytest.fixture(scope="module")
def dropin():
    spec = importlib.util.spec_from_file_location("gavel_dropin_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_missing_grpc_stubs_are_placeholders_and_real_modules_are_not_shadowed(dropin):
    finder = dropin._StubModules()
    sys.meta_path.append(finder)
    try:
        stub = importlib.import_module("schedopt_test_absent_pb2_grpc")
        placeholder = stub.WorkerToSchedulerStub("channel")  # any attribute, any arguments
        assert type(placeholder).__name__ == "WorkerToSchedulerStub"
        assert finder.find_spec("json") is None and finder.find_spec("numpy_pb3") is None
    finally:
        sys.meta_path.remove(finder)
        sys.modules.pop("schedopt_test_absent_pb2_grpc", None)


def test_the_checkout_or_its_scheduler_folder_is_accepted(dropin, tmp_path):
    (tmp_path / "scheduler").mkdir()
    (tmp_path / "scheduler" / "scheduler.py").write_text("")
    assert dropin.scheduler_dir(str(tmp_path)) == str(tmp_path / "scheduler")
    assert dropin.scheduler_dir(str(tmp_path / "scheduler")) == str(tmp_path / "scheduler")
