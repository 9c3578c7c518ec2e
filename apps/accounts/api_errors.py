"""One error format for the whole API: {"error": {"code", "message", "fields"}}."""

from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    detail = response.data
    code = getattr(exc, "default_code", "error")
    fields = None
    if isinstance(detail, dict) and "detail" not in detail:
        fields = detail
        message = "Invalid input."
        code = "invalid"
    elif isinstance(detail, dict):
        message = str(detail["detail"])
        code = getattr(detail["detail"], "code", code)
    elif isinstance(detail, list):
        message = " ".join(str(item) for item in detail)
    else:
        message = str(detail)
    response.data = {"error": {"code": code, "message": message, "fields": fields}}
    return response
