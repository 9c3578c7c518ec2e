"""Tuning's signal receivers: after each discovery, compare the host with its assigned
profile (the drift itself is judged in core/drift.py); after migrate, the built-in
profiles."""

from django.db.models.signals import post_migrate
from django.dispatch import receiver

from apps.fleet.signals import facts_recorded
from apps.tuning import services


@receiver(facts_recorded)
def check_drift(sender, host, **kwargs) -> None:
    services.refresh_drift(host)


@receiver(post_migrate)
def builtin_profiles(sender, **kwargs) -> None:
    if sender.label == "tuning":
        services.ensure_builtin_profiles()
