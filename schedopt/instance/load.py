"""Reading instance files (JSON or YAML, parsed safely) into a validated, frozen `Instance`.

Every failure is an `InstanceError` carrying one `Problem` per defect (file, path, message);
nothing else escapes, whatever the file holds. Units as in `model`: steps/s, seconds, $/GPU-hour.
"""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path

import orjson

from schedopt.errors import InstanceError, Problem
from schedopt.instance.arrow import arrow_jobs
from schedopt.instance.build import build_instance
from schedopt.instance.columnar import columnar_instance
from schedopt.instance.table import uses_tables
from schedopt.instance.model import Instance
from schedopt.instance.checks import cross_field_problems
from schedopt.instance.validate import find_problems, passes_schema
from schedopt.instance.values import format_path

_CONSTANTS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def _parse_json(text: str) -> tuple[object, str | None]:
    """(document, None) or (None, what is wrong). NaN/Infinity literals parse to non-finite
    floats so that validation reports them at their path."""
    try:
        return json.loads(text, parse_constant=_CONSTANTS.__getitem__), None
    except json.JSONDecodeError as e:
        return None, f"invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}"
    except RecursionError:
        return None, "invalid JSON: nested too deeply to read"
    except ValueError as e:  # an integer literal longer than Python's 4300-digit limit
        return None, f"invalid JSON: {str(e).split(':')[0]}"


def _parse_yaml(text: str) -> tuple[object, str | None]:
    """(document, None) or (None, what is wrong). Only plain YAML: tags that would build Python
    objects (`!!python/...`) are refused by `yaml.safe_load`, never executed."""
    import yaml  # only for YAML files: a JSON instance need not load it

    try:
        return yaml.safe_load(text), None
    except yaml.MarkedYAMLError as e:
        mark, what = e.problem_mark or e.context_mark, " ".join(str(e.problem or e.context).split())
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        hint = " (only plain YAML is read; tags that build Python objects are refused)"
        return None, f"invalid YAML{where}: {what}" + (hint if "constructor" in what else "")
    except RecursionError:
        return None, "invalid YAML: nested too deeply to read"
    except (yaml.YAMLError, ValueError, TypeError) as e:  # e.g. a timestamp like 2020-13-45
        return None, f"invalid YAML: {' '.join(str(e).split())}"


def read_document(path: str | os.PathLike) -> object:
    """The raw document in `path`: `.json` as JSON, `.yaml`/`.yml` as YAML, else JSON then YAML."""
    source, suffix = str(path), Path(path).suffix.lower()

    def fail(message: str) -> InstanceError:
        return InstanceError([Problem(source, "", message)])

    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except OSError as e:
        raise fail(f"cannot read the file: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise fail(f"not UTF-8 text (undecodable byte at offset {e.start})") from None
    if not text.strip():
        raise fail("the file is empty" if not text else "the file holds only whitespace")
    if suffix == ".json":
        doc, error = _parse_json(text)
    elif suffix in (".yaml", ".yml"):
        doc, error = _parse_yaml(text)
    else:
        doc, error = _parse_json(text)
        if error:
            doc, error = _parse_yaml(text)
            error = error and f"unknown suffix {suffix!r} (expected .json, .yaml or .yml) and {error}"
    if error:
        raise fail(error)
    if doc is None:
        raise fail("the file holds no document (only comments or null)")
    return doc


def parse_instance(doc: dict, source: str = "<memory>",
                   base: str | os.PathLike | None = None) -> Instance:
    """Validate a parsed document (every problem collected) and build the `Instance`. Table
    files the document names (`{"table": FILE}`) are read relative to `base` (default: the
    current directory).

    Raises InstanceError listing each problem as (source, path like `jobs[3].throughput.k80`, message).
    """
    problems = find_problems(doc)
    if problems:
        raise InstanceError([Problem(source, format_path(path), message) for path, message in problems])
    if uses_tables(doc):
        return _with_tables(doc, source, base)
    return build_instance(doc, source)


def _with_tables(doc: dict, source: str, base: str | os.PathLike | None) -> Instance:
    """The Instance of a valid document that names table files: a plain Parquet jobs table
    through pyarrow alone (`arrow`), anything else through the pandas reader (`tables`),
    which also reports every bad cell."""
    jobs = arrow_jobs(doc, base)
    if jobs is not None:
        return build_instance(doc, source, jobs=jobs)
    from schedopt.instance.tables import instance_with_tables  # pandas, only for tables

    return instance_with_tables(doc, source, base)


def load_instance(path: str | os.PathLike) -> Instance:
    """Read, validate and build the instance in `path` (JSON or YAML); raises InstanceError.

    A JSON file is first parsed with orjson and checked with the compiled schema validator
    (`validate.passes_schema`), then read into columns with the cross-field rules checked on
    whole arrays (`columnar.columnar_instance`; documents with per-job structures take the
    per-job rules); only a file that fails there goes through the detailed checker, which
    reports every problem with its path. Tables the file names are read relative to its
    folder (`tables`)."""
    raw = _json_bytes(path)
    if raw is not None:
        instance = columnar_instance(raw, str(path))
        if instance is not None:
            return instance
        fast = _fast_json(raw)
        if fast is not None and passes_schema(fast) and not cross_field_problems(fast):
            if uses_tables(fast):
                return _with_tables(fast, str(path), Path(path).parent)
            return build_instance(fast, str(path))
    return parse_instance(read_document(path), str(path), Path(path).parent)


def _json_bytes(path: str | os.PathLike) -> bytes | None:
    """The bytes of a `.json` file, or None when it is not one or cannot be read."""
    if Path(path).suffix.lower() != ".json":
        return None
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


def _fast_json(raw: bytes) -> dict | None:
    """The document parsed by orjson (strict JSON: no NaN/Infinity, integers within 64 bits),
    or None when it does not parse that way. The cyclic garbage collector is paused meanwhile:
    the parsed document holds no cycles, and collections triggered by its millions of new
    objects would triple the time."""
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    finally:
        if gc_was_on:
            gc.enable()
    return doc if isinstance(doc, dict) else None


def validate_file(path: str | os.PathLike) -> list[Problem]:
    """Every problem with the instance file at `path`; an empty list means it is valid."""
    try:
        load_instance(path)
    except InstanceError as e:
        return e.problems
    return []
