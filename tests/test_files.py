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


def test_pieces_from_an_iterator_are_synced_as_they_come_and_land_whole(tmp_path, monkeypatch):
    import numpy as np

    import schedopt.files as files

    synced = []  # bytes in the file when each early sync ran
    real = os.fdatasync

    def counting(fd):
        synced.append(os.fstat(fd).st_size)
        real(fd)

    monkeypatch.setattr(files._EarlySync, "_EARLY_BYTES", 1000)
    monkeypatch.setattr(files.os, "fdatasync", counting)
    pieces = [b"a" * 700, np.full(700, ord("b"), dtype=np.uint8), b"c" * 300, b"d" * 2000]
    target = tmp_path / "out.json"
    write_atomically(target, iter(pieces))
    assert target.read_bytes() == b"a" * 700 + b"b" * 700 + b"c" * 300 + b"d" * 2000
    # Started once 1,000 bytes were written, with what was written by then flushed to the file
    # (the helper thread may run later, when more is there).
    assert synced and min(synced) >= 1400
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_a_failed_early_sync_fails_the_write_and_keeps_the_old_file(tmp_path, monkeypatch):
    import schedopt.files as files

    def failing(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(files._EarlySync, "_EARLY_BYTES", 10)
    monkeypatch.setattr(files.os, "fdatasync", failing)
    target = tmp_path / "result.json"
    target.write_text("old and good")
    with pytest.raises(OutputError, match="result.json: could not write the output"):
        write_atomically(target, iter([b"x" * 20, b"y" * 20]))
    assert target.read_text() == "old and good"
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]
