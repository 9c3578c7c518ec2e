"""One error format for the whole API: {"error": {"code", "message", "fields"}}.

Every error under /api/ has this shape, whatever raised it: a service's
DomainError, DRF's own exceptions (400, 401, 403, 404, 405, 415, 429; a body whose
only fault is a taken unique value is a 409 like the services' own), a body
over the upload limit (413), the database or broker being away (503), a URL
that matches no route (404, through `api_not_found`) and anything unexpected
(500, logged with its traceback). `message` is a sentence for a person.
"""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from django.views import defaults
from kombu.exceptions import OperationalError as BrokerError
from rest_framework import exceptions, status
from rest_framework.views import exception_handler as drf_exception_handler

from apps.common.errors import DomainError

log = logging.getLogger("pozol.api")


class Refused(exceptions.APIException):
    """A DomainError on its way out through DRF."""

    def __init__(self, exc: DomainError) -> None:
        super().__init__(detail=exc.message, code=exc.code)
        self.status_code = exc.status
        self.fields = exc.fields


class Taken(exceptions.ValidationError):
    """A body whose only fault is a name (or other unique value) taken already: a
    conflict with what exists (409), as the services' own checks answer."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


class TooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"
    default_detail = "The request body is larger than this server accepts."


class Unavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "unavailable"
    default_detail = "A service PoZoL needs is not answering; try again shortly."


class ServerError(exceptions.APIException):
    status_code = status.HTTP_500_INTERNAL_SERVER_ERROR
    default_code = "server_error"
    default_detail = "PoZoL failed to answer this request; the error was logged."


def exception_handler(exc, context):
    """DRF's hook: every exception raised in an API view becomes the one shape."""
    api_exc = as_api_exception(exc)
    response = drf_exception_handler(api_exc, context)
    response.data = {"error": error_body(api_exc, response.data)}
    return response


def as_api_exception(exc: Exception) -> Exception:
    if isinstance(exc, DomainError):
        return Refused(exc)
    if isinstance(exc, exceptions.ValidationError) and _only_taken(exc.get_codes()):
        return Taken(exc.detail)
    if isinstance(exc, exceptions.APIException):
        return exc
    if isinstance(exc, Http404):
        return exceptions.NotFound()
    if isinstance(exc, PermissionDenied):
        return exceptions.PermissionDenied()
    if isinstance(exc, RequestDataTooBig):
        return TooLarge()
    if isinstance(exc, OperationalError | InterfaceError | BrokerError):
        log.warning("API request failed, a service is away: %r", exc)
        return Unavailable()
    if isinstance(exc, DatabaseError):
        log.error("API request failed in the database", exc_info=exc)
        return ServerError()
    log.error("API request failed", exc_info=exc)
    return ServerError()


def error_body(exc, detail) -> dict:
    code = getattr(exc, "default_code", "error")
    fields = getattr(exc, "fields", None)
    if isinstance(detail, dict) and "detail" not in detail:
        fields = detail
        message = _first_message(detail) or "Invalid input."
        code = "conflict" if isinstance(exc, Taken) else "invalid"
    elif isinstance(detail, dict):
        message = str(detail["detail"])
        code = getattr(detail["detail"], "code", code)
    elif isinstance(detail, list):
        message = " ".join(str(item) for item in detail)
    else:
        message = str(detail)
    return {"code": code, "message": message, "fields": fields}


def _only_taken(codes) -> bool:
    """Whether every error code of a ValidationError is a unique validator's."""
    if isinstance(codes, dict):
        leaves = [_only_taken(value) for value in codes.values()]
    elif isinstance(codes, list):
        leaves = [_only_taken(value) for value in codes]
    else:
        return codes == "unique"
    return bool(leaves) and all(leaves)


def _first_message(fields: dict, prefix: str = "") -> str:
    """'name: problem' of the first field at fault, as a sentence for a person."""
    for name, value in fields.items():
        label = name if name == "non_field_errors" else f"{prefix}{name}"
        if isinstance(value, dict):
            return _first_message(value, f"{label}.")
        if isinstance(value, list) and value:
            first = value[0]
            if isinstance(first, dict):
                return _first_message(first, f"{label}.")
            return str(first) if name == "non_field_errors" else f"{label}: {first}"
    return ""


def json_error(status_code: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message, "fields": None}},
                        status=status_code)


# Django's own error views, for what happens outside DRF's views (a URL that
# matches no route, a failure in middleware): JSON under /api/, pages elsewhere.

def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def bad_request(request, exception=None):
    if _is_api(request):
        return json_error(400, "bad_request", "The request could not be understood.")
    return defaults.bad_request(request, exception)


def permission_denied(request, exception=None):
    if _is_api(request):
        return json_error(403, "permission_denied", "You may not do this.")
    return defaults.permission_denied(request, exception)


def not_found(request, exception=None):
    if _is_api(request):
        return json_error(404, "not_found", "No API endpoint or object at this address.")
    return defaults.page_not_found(request, exception)


def server_error(request):
    if _is_api(request):
        return json_error(500, "server_error",
                          "PoZoL failed to answer this request; the error was logged.")
    return defaults.server_error(request)
