"""The OpenAPI schema documents the one error shape on every operation.

drf-spectacular describes what views return when they succeed; this hook adds
the error responses any operation can give (see apps.api.errors), so
a client generated from the schema, or a fuzzer checking it, finds every
status code PoZoL answers with.
"""

from __future__ import annotations

ERROR_SCHEMA = {
    "type": "object",
    "description": "Every error under /api/ has this shape.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "short and stable, e.g. invalid"},
                "message": {"type": "string", "description": "a sentence for a person"},
                "fields": {
                    "type": "object", "nullable": True, "additionalProperties": True,
                    "description": "the inputs at fault, each with its problems",
                },
            },
            "required": ["code", "message", "fields"],
        },
    },
    "required": ["error"],
}

ANY_OPERATION = {
    "400": "Invalid input: a body, a query-string filter or a page number.",
    "401": "No credentials, or a token that is unknown, revoked or expired.",
    "403": "Signed in, but not allowed to do this.",
    "404": "No such object, or no such page.",
    "405": "This method is not allowed here.",
    "429": "Too many requests; slow down (see Retry-After).",
    "500": "PoZoL failed to answer; the error was logged.",
    "503": "A service PoZoL needs (database, broker) is not answering.",
}
CHANGES = {
    "409": "Clashes with what exists: a name that is taken, a built-in or busy object.",
}
IDEMPOTENT = {
    "422": "This Idempotency-Key was used with another body or path in the last 24 h.",
}
WITH_BODY = {
    "413": "The body is larger than this server accepts.",
    "415": "The body is not JSON.",
}


def add_error_responses(result: dict, generator, request, public) -> dict:
    """POSTPROCESSING_HOOKS entry: an Error component and its responses everywhere."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    reference = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path in result.get("paths", {}).values():
        for method, operation in path.items():
            codes = dict(ANY_OPERATION)
            if method in {"post", "put", "patch", "delete"}:
                codes.update(CHANGES)
            if method in {"post", "put", "patch"}:
                codes.update(WITH_BODY)
            if any(p.get("name") == "Idempotency-Key" for p in operation.get("parameters", [])):
                codes.update(IDEMPOTENT)
            responses = operation.setdefault("responses", {})
            for code, description in codes.items():
                responses.setdefault(code, {"description": description, "content": reference})
    return result
