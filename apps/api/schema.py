"""The OpenAPI schema documents the one error shape on every operation.

drf-spectacular describes what views return when they succeed; this hook adds
the error responses any operation can give (see apps.api.errors), so
a client generated from the schema, or a fuzzer checking it, finds every
status code PoZoL answers with.
"""

from __future__ import annotations

from apps.api import idempotency

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
    "409": "Clashes with what exists: a name that is taken, a built-in or busy object, "
           "an Idempotency-Key used with another body or still being answered.",
}
WITH_BODY = {
    "413": "The body is larger than this server accepts.",
    "415": "The body is not JSON.",
}


KEY_PARAMETER = {
    "in": "header", "name": idempotency.HEADER, "required": False,
    "schema": {"type": "string", "minLength": 1, "maxLength": 255,
               "pattern": idempotency.KEY_PATTERN},
    "description": "The same key and body within 24 h answers the first answer again and "
                   "starts nothing; the key with another body is a 409.",
}


def idempotent_posts(generator) -> set[str]:
    """The schema's paths whose view honours Idempotency-Key (apps.api.idempotency).
    The generator's own (path, view) pairs, so paths are written as in the schema."""
    if generator is None:
        return set()
    return {path for path, _, method, view in generator._get_paths_and_endpoints()
            if method == "POST" and isinstance(view, idempotency.IdempotentPosts)}


def add_error_responses(result: dict, generator, request, public) -> dict:
    """POSTPROCESSING_HOOKS entry: an Error component and its responses everywhere."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    reference = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    idempotent = idempotent_posts(generator)
    for route, path in result.get("paths", {}).items():
        for method, operation in path.items():
            if method == "post" and route in idempotent:
                operation.setdefault("parameters", []).append(KEY_PARAMETER)
            codes = dict(ANY_OPERATION)
            if method in {"post", "put", "patch", "delete"}:
                codes.update(CHANGES)
            if method in {"post", "put", "patch"}:
                codes.update(WITH_BODY)
            responses = operation.setdefault("responses", {})
            for code, description in codes.items():
                responses.setdefault(code, {"description": description, "content": reference})
            for code, response in responses.items():
                # An error a view documents by its description alone has the Error body too.
                if code[0] in "45" and "content" not in response:
                    response["content"] = reference
    return result
