"""A validator for the JSON-Schema subset tool parameters use (type, properties, required,
enum, items, additionalProperties: false) — TwinCheck's structural check "arguments validate
against the tool's schema" (SPEC §5.1 step 2).

BFCL and other tool docs use Python-ish type names ("dict", "float", "tuple", "any"); they
are mapped onto their JSON-Schema equivalents. Unknown keywords are ignored (the subset is
what tool schemas use; a full validator is not worth a dependency here).
"""

from __future__ import annotations

from typing import Any

_ALIASES = {
    "dict": "object",
    "float": "number",
    "int": "integer",
    "tuple": "array",
    "list": "array",
    "str": "string",
    "bool": "boolean",
}


def _type_ok(value: Any, t: str) -> bool:
    t = _ALIASES.get(t, t)
    if t == "string":
        return isinstance(value, str)
    if t == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "object":
        return isinstance(value, dict)
    if t == "array":
        return isinstance(value, list)
    if t == "null":
        return value is None
    return t == "any"


def validate(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Errors of ``value`` against ``schema``, each prefixed by its JSON path; [] if valid."""
    errors: list[str] = []
    if not isinstance(schema, dict):
        return errors
    t = schema.get("type")
    if t is not None:
        types = t if isinstance(t, list) else [t]
        if not any(_type_ok(value, str(x)) for x in types):
            errors.append(
                f"{path}: expected {'/'.join(map(str, types))}, got {type(value).__name__}"
            )
            return errors
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        errors.append(f"{path}: {value!r} is not one of {enum!r}")
    if isinstance(value, dict):
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        for req in schema.get("required") or []:
            if req not in value:
                errors.append(f"{path}: missing required property {req!r}")
        for k, v in value.items():
            if k in props:
                errors.extend(validate(v, props[k], f"{path}.{k}"))
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path}: unexpected property {k!r}")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            errors.extend(validate(item, schema["items"], f"{path}[{i}]"))
    return errors
