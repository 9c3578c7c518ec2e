from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, render

from apps.ops.models import Operation

# htmx stops polling when a response has this status.
HTMX_STOP_POLLING = 286


@login_required
def operation_list(request):
    operations = Operation.objects.select_related("host")[:100]
    return render(request, "ops/list.html", {"operations": operations})


@login_required
def operation_detail(request, pk: int):
    operation = get_object_or_404(Operation.objects.select_related("host"), pk=pk)
    context = {"operation": operation, "log_lines": operation.log_lines.all()}
    if request.htmx:
        status = 200 if operation.is_active else HTMX_STOP_POLLING
        return render(request, "ops/_progress.html", context, status=status)
    return render(request, "ops/detail.html", context)
