"""The Alerts pages: open alerts and history (acknowledge, silence), rules,
channels (test), silences and the delivery log. Each view calls one service."""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from apps.alerts import rules, services
from apps.alerts.forms import ChannelForm, RuleForm, ScrubForm, SilenceForm
from apps.alerts.models import Alert, Channel, Delivery, Rule, ScrubSchedule, Silence
from apps.common import alert_kinds
from apps.common.errors import DomainError
from apps.ops.models import Operation
from apps.ops.ui_errors import on_form

HISTORY = 50


@login_required
def alert_list(request) -> HttpResponse:
    alerts = Alert.objects.select_related("host", "acknowledged_by")
    return render(request, "alerts/list.html", {
        "open": alerts.filter(resolved_at=None),
        "history": alerts.exclude(resolved_at=None)[:HISTORY],
        "silences": Silence.objects.select_related("host").filter(until__gt=timezone.now()),
        "titles": dict(alert_kinds.choices()), "silence_form": SilenceForm()})


@login_required
def alert_detail(request, pk: int) -> HttpResponse:
    alert = get_object_or_404(Alert.objects.select_related("host", "acknowledged_by"), pk=pk)
    return render(request, "alerts/alert.html", {
        "alert": alert, "deliveries": alert.deliveries.select_related("channel"),
        "title": alert_kinds.get(alert.kind).title if alert_kinds.get(alert.kind) else alert.kind,
        "silence_form": SilenceForm()})


@login_required
@require_POST
def acknowledge(request, pk: int) -> HttpResponse:
    services.acknowledge(get_object_or_404(Alert, pk=pk), request.user)
    return redirect("alerts:alert", pk)


@login_required
@require_POST
def silence(request, pk: int) -> HttpResponse:
    alert = get_object_or_404(Alert, pk=pk)
    form = SilenceForm(request.POST)
    if form.is_valid():
        services.silence_alert(alert, by=request.user, **form.cleaned_data)
        return redirect("alerts:alert", pk)
    return render(request, "alerts/alert.html", {
        "alert": alert, "deliveries": alert.deliveries.select_related("channel"),
        "title": alert.kind, "silence_form": form}, status=400)


@login_required
@require_POST
def end_silence(request, pk: int) -> HttpResponse:
    services.end_silence(get_object_or_404(Silence, pk=pk))
    return redirect("alerts:list")


@login_required
def rule_list(request) -> HttpResponse:
    rules.ensure()
    rows = [(rule, alert_kinds.get(rule.kind)) for rule in Rule.objects.all()]
    return render(request, "alerts/rules.html", {"rules": rows})


@login_required
def rule_edit(request, kind: str) -> HttpResponse:
    rules.ensure()
    rule = get_object_or_404(Rule, kind=kind)
    form = RuleForm(request.POST or None, instance=rule)
    if request.method == "POST" and form.is_valid():
        try:
            services.update_rule(Rule.objects.get(pk=rule.pk), **form.cleaned_data)
        except DomainError as exc:
            on_form(form, exc)
        else:
            return redirect("alerts:rules")
    return render(request, "alerts/rule_edit.html", {"rule": rule, "spec": alert_kinds.get(kind),
                                                     "form": form},
                  status=400 if form.errors else 200)


@login_required
def channel_list(request) -> HttpResponse:
    form = ChannelForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            channel = services.save_channel(form.save(commit=False))
        except DomainError as exc:
            on_form(form, exc)
        else:
            return redirect("alerts:channel", channel.pk)
    return render(request, "alerts/channels.html", {"channels": Channel.objects.all(),
                                                    "form": form},
                  status=400 if form.errors else 200)


@login_required
def channel_edit(request, pk: int) -> HttpResponse:
    channel = get_object_or_404(Channel, pk=pk)
    form = ChannelForm(request.POST or None, instance=channel)
    if request.method == "POST" and form.is_valid():
        try:
            services.save_channel(form.save(commit=False))
        except DomainError as exc:
            on_form(form, exc)
        else:
            return redirect("alerts:channel", pk)
    return render(request, "alerts/channel.html", {
        "channel": Channel.objects.get(pk=pk), "form": form,
        "deliveries": channel.deliveries.all()[:HISTORY]}, status=400 if form.errors else 200)


@login_required
@require_POST
def channel_test(request, pk: int) -> HttpResponse:
    services.test_channel(get_object_or_404(Channel, pk=pk))
    return redirect("alerts:channel", pk)


@login_required
@require_POST
def channel_delete(request, pk: int) -> HttpResponse:
    services.delete_channel(get_object_or_404(Channel, pk=pk))
    return redirect("alerts:channels")


@login_required
def delivery_list(request) -> HttpResponse:
    rows = Delivery.objects.select_related("channel", "alert__host")[:200]
    return render(request, "alerts/deliveries.html", {"deliveries": rows})


@login_required
def scrub_list(request) -> HttpResponse:
    form = ScrubForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.schedule_scrub(**form.cleaned_data)
        except DomainError as exc:
            on_form(form, exc)
        else:
            return redirect("alerts:scrubs")
    rows = ScrubSchedule.objects.select_related("host", "last_operation")
    return render(request, "alerts/scrubs.html", {"schedules": rows, "form": form},
                  status=400 if form.errors else 200)


@login_required
@require_POST
def scrub_run(request, pk: int) -> HttpResponse:
    operation = services.scrub_now(get_object_or_404(ScrubSchedule, pk=pk), by=request.user,
                                   trigger=Operation.Trigger.UI)
    return redirect("ops:operation", operation.pk)


@login_required
@require_POST
def scrub_delete(request, pk: int) -> HttpResponse:
    services.delete_scrub_schedule(get_object_or_404(ScrubSchedule, pk=pk))
    return redirect("alerts:scrubs")
