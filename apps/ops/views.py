from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HTMX_STOP_POLLING

from apps.ops import engine
from apps.ops.models import Operation
from apps.ops.paging import uncounted_page

PER_PAGE = 50


@login_required
def operation_list(request):
    page = uncounted_page(Operation.objects.for_table(), request.GET.get("page"), PER_PAGE)
    return render(request, "ops/list.html", {"operations": page.rows, "page": page})


@login_required
def operation_detail(request, pk: int):
    operation = get_object_or_404(Operation.objects.select_related("triggered_by"), pk=pk)
    context = {"operation": operation, "log_lines": operation.log_lines.all()}
    if request.htmx:
        status = 200 if operation.is_active else HTMX_STOP_POLLING
        return render(request, "ops/_progress.html", context, status=status)
    return render(request, "ops/detail.html", context)


@login_required
@require_POST
def operation_cancel(request, pk: int):
    """Stop an operation between steps, as the API's cancel does; an ended one stays as it is."""
    operation = get_object_or_404(Operation, pk=pk)
    engine.cancel(operation, f"cancelled by {request.user.username}")
    return redirect("ops:operation", operation.pk)
