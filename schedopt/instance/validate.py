"""Structural validation of an instance document against `schema.json`, with friendly messages.

`find_problems(doc)` returns every problem as `(path, message)`, where `path` is a tuple of keys
and list indices (`values.format_path` renders it as `jobs[3].throughput.k80`), in document order.
Cross-field rules the schema cannot express live in `checks.py`.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from schedopt.instance import checks
from schedopt.instance.values import Path, is_integer, is_number, show

MAX_DEPTH = 64
MAX_VALUES = 2_000_000  # YAML aliases can expand a small file into billions of values


@cache
def _validator():
    """The detailed checker (jsonschema: every problem with its path); imported only when a
    document needs it, since a valid file never does."""
    from jsonschema import Draft202012Validator, validators

    checker = Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"number": lambda _, x: is_number(x), "integer": lambda _, x: is_integer(x)}
    )
    return validators.extend(Draft202012Validator, type_checker=checker)(schema())


@cache
def _compiled():
    import jsonschema_rs

    return jsonschema_rs.validator_for(schema())


def passes_schema(doc: dict) -> bool:
    """Whether a strict-JSON document (parsed from JSON text: no NaN, no non-JSON types)
    satisfies the schema, by the compiled validator (jsonschema-rs: ~0.04 s for 100,000 jobs,
    against ~20 s for the detailed pass). It says only yes or no; `find_problems` says why."""
    return _compiled().is_valid(doc)


@cache
def schema() -> dict:
    """The JSON Schema (draft 2020-12) of `schedopt-instance/1`, as shipped in the package."""
    return json.loads(resources.files("schedopt.instance").joinpath("schema.json").read_text())


def describe(schema: dict) -> str:
    """What a (sub)schema accepts, in words: 'a finite number >= 0 or null'. For a choice of
    forms (`anyOf`), the first, main one (a list of jobs rather than a table file)."""
    if "anyOf" in schema:
        return describe(_resolve(schema["anyOf"][0]))
    if "const" in schema:
        return repr(schema["const"])
    types = schema.get("type", [])
    bounds = [f">= {schema['minimum']}"] if "minimum" in schema else []
    bounds += [f"> {schema['exclusiveMinimum']}"] if "exclusiveMinimum" in schema else []
    words = {
        "number": " ".join(["a finite number", *bounds]),
        "integer": " ".join(["an integer", *bounds]),
        "string": "a non-empty string" if schema.get("minLength") else "a string",
        "object": "a mapping" + (" with at least 1 entry" if schema.get("minProperties") else ""),
        "array": (f"a list of {schema['minItems']} items" if "maxItems" in schema else
                  f"a list of at least {schema['minItems']} item(s)" if "minItems" in schema
                  else "a list"),
        "null": "null",
    }
    return " or ".join(words[t] for t in ([types] if isinstance(types, str) else types))


def job_rule(key: str) -> dict:
    """The schema's rule for a job's `key` (e.g. {"type": "integer", "minimum": 1})."""
    return _resolve(schema()["$defs"]["jobList"]["items"]["properties"][key])


def _resolve(sub: dict) -> dict:
    ref = sub.get("$ref", "")
    return schema()["$defs"][ref.rsplit("/", 1)[-1]] if ref else sub


_JSON_TYPES = {"object": dict, "array": list, "string": str}


def _meant(alternatives: list[dict], value: object) -> int:
    """Which form of an `anyOf` a value that fits none was meant as: the first whose type it
    has and whose required keys it holds (a mapping with `table` is a table reference), else
    the first (a mapping of jobs is reported as not being a list, as it always was)."""
    for k, alternative in enumerate(map(_resolve, alternatives)):
        kind = _JSON_TYPES.get(alternative.get("type"))
        if kind is not None and isinstance(value, kind) and \
                all(key in value for key in alternative.get("required", []) if kind is dict):
            return k
    return 0


def _schema_problems(doc: dict) -> list[tuple[Path, str]]:
    return list(dict.fromkeys(_problems_of(_validator().iter_errors(doc))))


def _problems_of(errors) -> list[tuple[Path, str]]:
    found = []
    for err in errors:
        path, kw, sub, value = tuple(err.absolute_path), err.validator, err.schema, err.instance
        if kw == "anyOf":
            meant = _meant(err.validator_value, value)
            found += _problems_of(e for e in err.context if e.schema_path[0] == meant)
        elif kw == "required":
            props = sub.get("properties", {})
            found += [
                (path + (key,), f"required key is missing (expected {describe(_resolve(props[key]))})")
                for key in err.validator_value
                if key not in value
            ]
        elif kw == "additionalProperties":
            allowed = ", ".join(sub.get("properties", {}))
            found += [
                (path + (key,), f"unknown key {key!r}; expected one of: {allowed}")
                for key in value
                if key not in sub.get("properties", {})
            ]
        elif kw in ("minItems", "maxItems"):
            found.append((path, f"expected {describe(sub)}, got {show(value)}"))
        else:  # type, const, minimum, exclusiveMinimum, minLength, minProperties
            found.append((path, f"expected {describe(sub)}, got {show(value)}"))
    return found


def _is_plain_scalar(x: object) -> bool:
    """JSON-representable: None, bool, float, str, or an int Python can print (< ~3000 digits)."""
    return x is None or isinstance(x, (bool, float, str)) or isinstance(x, int) and x.bit_length() <= 10_000


def _plain_data_problems(doc: object) -> list[tuple[Path, str]]:
    """Anything a YAML file or a caller can hand us that JSON could not hold: reported, not parsed."""
    found, stack, seen = [], [((), doc)], 0
    while stack:
        path, x = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            return [((), f"the document holds more than {MAX_VALUES} values; too large to check")]
        if len(path) > MAX_DEPTH:
            found.append((path[:MAX_DEPTH], f"nested deeper than {MAX_DEPTH} levels"))
        elif isinstance(x, dict):
            for key, value in x.items():
                if isinstance(key, str):
                    stack.append((path + (key,), value))
                else:
                    found.append((path, f"expected string keys, got the key {show(key)} (quote it)"))
        elif isinstance(x, list):
            stack.extend((path + (i,), value) for i, value in enumerate(x))
        elif not _is_plain_scalar(x):
            plain = "string, number, boolean, null, list or mapping"
            found.append((path, f"expected plain data ({plain}), got {show(x)}"))
    return sorted(found, key=lambda p: _position(doc, p[0]))


def _position(doc: object, path: Path) -> tuple[int, ...]:
    """Where `path` sits in document order (a missing key sorts after its siblings)."""
    out = []
    for part in path:
        if isinstance(doc, dict) and part in doc:
            out.append(list(doc).index(part))
            doc = doc[part]
        elif isinstance(doc, list) and isinstance(part, int) and 0 <= part < len(doc):
            out.append(part)
            doc = doc[part]
        else:
            out.append(len(doc) if isinstance(doc, (dict, list)) else 0)
            break
    return tuple(out)


def find_problems(doc: object) -> list[tuple[Path, str]]:
    """Every problem with `doc`, in document order: plain-data, then schema and cross-field rules."""
    if not isinstance(doc, dict):
        return [((), f"expected a mapping at the top level (format, cluster, jobs, ...), got {show(doc)}")]
    found = _plain_data_problems(doc)
    if found:
        return found
    found = _schema_problems(doc) + checks.cross_field_problems(doc)
    return sorted(found, key=lambda p: _position(doc, p[0]))
