"""The audit log's actions in words: the log keeps the view's name as Django resolved it
(exact, searchable), and the page shows what a person would call it.

    apps.tuning.api.HostPlanView + POST  -> "host plan (API)"
    host-list + POST                     -> "create host (API)"
    clone-detail + DELETE                -> "delete clone (API)"
    clone-reset + POST                   -> "clone reset (API)"
    tenants:remove + POST                -> "tenants: remove"
"""

from __future__ import annotations

import re

# Written by apps.audit.signals and the middleware as they are.
_PLAIN = {"sign-in", "sign-out", "token refused", "unrouted"}
# What a router's detail or list route does, by method.
_DETAIL = {"PUT": "change", "PATCH": "change", "DELETE": "delete", "GET": "read"}
_LIST = {"POST": "create", "GET": "list"}


def action_label(action: str, method: str = "") -> str:
    """The action in words; anything unforeseen is shown as recorded."""
    if action in _PLAIN:
        return action
    if "." in action:  # an API view without a route name: its dotted class path
        name = re.sub(r"(ViewSet|View)$", "", action.rsplit(".", 1)[1])
        return f"{_words(name)} (API)" if name else action
    if ":" in action:  # a page: "<app>:<view>"
        app, _, view = action.partition(":")
        return f"{app}: {view.replace('_', ' ')}"
    base, dash, suffix = action.rpartition("-")
    if not dash or not base:
        return action
    thing = base.replace("-", " ")
    verb = {"detail": _DETAIL, "list": _LIST}.get(suffix, {}).get(method.upper())
    if verb:
        return f"{verb} {thing} (API)"
    if suffix in ("detail", "list"):
        return f"{thing} (API)"
    return f"{thing} {suffix.replace('-', ' ')} (API)"


def _words(camel: str) -> str:
    """HostPlan -> "host plan"; SnapshotRecoverTable -> "snapshot recover table"."""
    return " ".join(part.lower() for part in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+",
                                                        camel))
