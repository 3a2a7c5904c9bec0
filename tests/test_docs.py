"""The documentation: its examples run (tests/docs_examples.py), the site builds with
`mkdocs build --strict`, and every public name of `schedopt` is in the API reference with a
docstring."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

import schedopt
from docs_examples import ROOT, documentation_pages, examples, run_page, scratch_directory

PAGES = [page for page in documentation_pages() if examples(page)]


def test_the_documentation_has_examples_to_run():
    runnable = [e for page in PAGES for e in examples(page) if e.skip_reason is None]
    assert len(runnable) >= 20


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_run(page, tmp_path):
    done = run_page(examples(page), scratch_directory(tmp_path))
    if done is not None:
        assert done.returncode == 0, done.stderr[-4000:]


def test_a_broken_example_fails_the_runner(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Works:\n\n```bash\necho fine > made.txt\n```\n\n"
                    "<!-- not run: shows a command that would fail -->\n```bash\nfalse\n```\n\n"
                    "```python\nprint(open('made.txt').read())\n```\n\n"
                    "Broken:\n\n```python\nimport schedopt\nschedopt.solve('instances/tiny.json', "
                    "policy='no_such_policy')\n```\n")
    found = examples(page)
    assert [(e.lang, e.skip_reason) for e in found] == [
        ("bash", None), ("bash", "shows a command that would fail"), ("python", None),
        ("python", None)]
    done = run_page(found, scratch_directory(tmp_path / "run"))
    assert done.returncode != 0
    assert f"example {page}:19 failed" in done.stderr  # the first line of its code
    assert "no_such_policy" in done.stderr


def test_a_broken_shell_example_fails_the_runner(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```bash\nschedopt solve instances/tiny.json --policy no_such_policy\n```\n")
    done = run_page(examples(page), scratch_directory(tmp_path / "run"))
    assert done.returncode == 2
    assert f"example {page}:2 failed" in done.stderr


def test_a_not_run_marker_needs_a_reason(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("<!-- not run: -->\n```bash\ntrue\n```\n")
    with pytest.raises(ValueError, match="without a reason"):
        examples(page)


def test_every_public_name_is_in_the_api_reference_with_a_docstring():
    reference = (ROOT / "docs" / "reference" / "api.md").read_text()
    for name in schedopt.__all__:
        assert f"::: schedopt.{name}\n" in reference, name
        assert (getattr(schedopt, name).__doc__ or "").strip(), name


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                    reason="the docs extra is not installed (pip install -e '.[docs]')")
def test_the_site_builds_strictly(tmp_path):
    """`mkdocs build --strict`: no broken link, no missing reference. The tutorials are rendered
    without executing them here: tests/test_notebooks.py executes every notebook already (a
    plain `mkdocs build` executes them into the pages)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "MPLBACKEND": "Agg",
           "SCHEDOPT_DOCS_EXECUTE": "false"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d",
                           str(tmp_path / "site")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "api" / "index.html").exists()
    assert (tmp_path / "site" / "tutorials" / "jct_vs_load" / "index.html").exists()


def test_every_command_is_in_the_cli_reference():
    import click

    from schedopt.cli.main import main

    reference = (ROOT / "docs" / "reference" / "cli.md").read_text()
    for name in main.list_commands(click.Context(main)):
        assert f":prog_name: schedopt {name}\n" in reference, name
