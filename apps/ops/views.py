from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HTMX_STOP_POLLING

from apps.api.filters import MAX_ID
from apps.ops import engine
from apps.ops.filters import OperationPageFilter
from apps.ops.models import Operation
from apps.ops.paging import uncounted_page

PER_PAGE = 50


@login_required
def operation_list(request) -> HttpResponse:
    """Newest first, filtered by the form above the table; a bad filter is a 400 that says why."""
    filters = OperationPageFilter(request.GET, queryset=Operation.objects.for_table())
    if not filters.is_valid():
        return render(request, "ops/list.html", {"filters": filters, "operations": []},
                      status=400)
    page = uncounted_page(filters.qs, request.GET.get("page"), PER_PAGE)
    context = {"filters": filters, "operations": page.rows, "page": page,
               "polling": any(operation.is_active for operation in page.rows)}
    if request.htmx and request.htmx.target == "operations-live":
        status = 200 if context["polling"] else HTMX_STOP_POLLING
        return render(request, "ops/_live_list.html", context, status=status)
    return render(request, "ops/list.html", context)


@login_required
def operation_detail(request, pk: int) -> HttpResponse:
    """The page, or (polled by htmx) its state and the log lines after ?after=<line id>.

    The operation is read before its lines: a poll that sees it ended also
    sees every line written before it ended, so the last lines always arrive.
    """
    after = _line_id(request.GET.get("after"))
    if after is None:
        return HttpResponseBadRequest("after: give the id of the last log line shown, "
                                      "a whole number")
    operation = get_object_or_404(Operation.objects.select_related("triggered_by"), pk=pk)
    lines = list(operation.log_lines.filter(id__gt=after))
    context = {"operation": operation, "log_lines": lines,
               "last_line_id": lines[-1].pk if lines else after}
    if request.htmx:
        status = 200 if operation.is_active else HTMX_STOP_POLLING
        return render(request, "ops/_poll.html", context, status=status)
    return render(request, "ops/detail.html", context)


def _line_id(raw: str | None) -> int | None:
    """?after=: absent is 0 (every line); anything but a bigint-sized whole number is None."""
    if raw is None:
        return 0
    if not (raw.isascii() and raw.isdecimal()) or int(raw) > MAX_ID:
        return None
    return int(raw)


@login_required
@require_POST
def operation_cancel(request, pk: int) -> HttpResponse:
    """Stop an operation between steps, as the API's cancel does; an ended one stays as it is."""
    operation = get_object_or_404(Operation, pk=pk)
    engine.cancel(operation, f"cancelled by {request.user.username}")
    return redirect("ops:operation", operation.pk)
