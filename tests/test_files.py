"""Output files are written atomically and never over an input; bad targets are one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from schedopt.errors import OutputError
from schedopt.files import check_output, write_atomically


def test_text_bytes_and_writer_functions_land_whole(tmp_path):
    target = tmp_path / "out.txt"
    write_atomically(target, "héllo\n")
    assert target.read_text(encoding="utf-8") == "héllo\n"
    write_atomically(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    write_atomically(target, lambda p: p.write_text("from a writer"))
    assert target.read_text() == "from a writer"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temporary left behind


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "result.json"
    target.write_text("old and good")

    def half_then_fail(path: Path):
        path.write_text("half of the new")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomically(target, half_then_fail)
    assert target.read_text() == "old and good"
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_an_input_is_never_overwritten(tmp_path):
    source = tmp_path / "instance.json"
    source.write_text("{}")
    with pytest.raises(OutputError, match="over an input"):
        write_atomically(source, "result", inputs=[source])
    os.symlink(source, tmp_path / "alias.json")
    with pytest.raises(OutputError, match="over an input"):
        write_atomically(tmp_path / "alias.json", "result", inputs=[source])
    assert source.read_text() == "{}"


@pytest.mark.parametrize("make_target, reason", [
    (lambda d: d / "missing" / "r.json", "does not exist"),
    (lambda d: d, "is a directory"),
])
def test_bad_targets_are_one_line_naming_the_path(tmp_path, make_target, reason):
    target = make_target(tmp_path)
    with pytest.raises(OutputError, match=reason) as info:
        check_output(target)
    assert str(target) in str(info.value) and "\n" not in str(info.value)


def test_an_unwritable_place_is_one_line():
    with pytest.raises(OutputError, match="/proc/version"):
        write_atomically("/proc/version", "x")


def test_permissions_of_an_existing_file_are_kept(tmp_path):
    target = tmp_path / "kept.txt"
    target.write_text("a")
    target.chmod(0o640)
    write_atomically(target, "b")
    assert target.stat().st_mode & 0o777 == 0o640
