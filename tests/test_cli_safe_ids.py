"""Job ids with control or bidirectional characters print escaped in tables and exact in JSON."""

from __future__ import annotations

import json

from click.testing import CliRunner

from schedopt.cli.main import main
from schedopt.cli.render import printable

TRICKY = ["evil\u202eexe.txt", "nul\x00byte", "bell\x07", "esc\x1b[31mred", "iso\u2066late"]


def test_printable_escapes_controls_and_bidi_marks_only():
    assert printable("plain id-01_ü✓") == "plain id-01_ü✓"
    assert printable("a\u202eb") == "a\\u202eb"
    assert printable("x\x00y\x1b") == "x\\u0000y\\u001b"
    assert printable("\u200f\u061c\x9b") == "\\u200f\\u061c\\u009b"


def test_tables_escape_ids_and_json_keeps_them(tmp_path):
    instance = {
        "format": "schedopt-instance/1",
        "cluster": {"gpu_types": {"v100": {"count": 4}}},
        "jobs": [{"id": job, "throughput": {"v100": 1.0 + i}} for i, job in enumerate(TRICKY)],
    }
    path = tmp_path / "tricky.json"
    path.write_text(json.dumps(instance))
    table = CliRunner().invoke(main, ["solve", str(path)])
    assert table.exit_code == 0, table.output
    for job in TRICKY:
        assert job not in table.output
        assert printable(job) in table.output
    assert "\x00" not in table.output and "\u202e" not in table.output
    document = CliRunner().invoke(main, ["solve", str(path), "--json"])
    assert set(json.loads(document.output)["allocation"]) == set(TRICKY)
