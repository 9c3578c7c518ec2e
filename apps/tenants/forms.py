"""The tenants pages' forms: each field in its type; the services decide the rest."""

from __future__ import annotations

from django import forms

from apps.tenants.models import Membership


class TenantForm(forms.Form):
    name = forms.CharField(max_length=100, label="Tenant name")


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150, label="User name",
                               help_text="An account is made if none has this name.")
    # Least privilege first: a tenant admin is chosen, never the default.
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.MEMBER)
    password = forms.CharField(required=False, max_length=128, widget=forms.PasswordInput,
                               label="Password (new account)",
                               help_text="Leave empty to set one later.")


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices)


class ClusterForm(forms.Form):
    """A cluster as "<host id>:<data directory>", from the clusters discovery found."""

    cluster = forms.ChoiceField(label="Cluster")

    def __init__(self, *args, clusters=(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["cluster"].choices = [
            (f"{c.host_id}:{c.data_dir}", f"{c.host.name}: PostgreSQL {c.version} at "
             f"{c.data_dir}") for c in clusters]

    def host_and_dir(self) -> tuple[int, str]:
        host, _, data_dir = self.cleaned_data["cluster"].partition(":")
        return int(host), data_dir


class QuotaForm(forms.Form):
    """A tenant's clone quotas as an operator sets them; empty: no limit."""

    max_clones = forms.IntegerField(required=False, min_value=0, label="Clones at once")
    max_clone_space_mib = forms.IntegerField(required=False, min_value=0,
                                             label="Space of all clones (MiB)")
    max_clone_ttl_minutes = forms.IntegerField(required=False, min_value=1,
                                               label="Longest TTL (minutes)")
    clone_idle_minutes = forms.IntegerField(
        required=False, min_value=1, label="Destroy idle clones after (minutes)",
        help_text="No client connected for this long; empty: never.")

    @classmethod
    def of(cls, tenant, data=None) -> QuotaForm:
        space = tenant.max_clone_space
        return cls(data, initial={
            "max_clones": tenant.max_clones,
            "max_clone_space_mib": space // 2**20 if space is not None else None,
            "max_clone_ttl_minutes": tenant.max_clone_ttl_minutes,
            "clone_idle_minutes": tenant.clone_idle_minutes})

    def values(self) -> dict:
        data = self.cleaned_data
        mib = data["max_clone_space_mib"]
        return {"max_clones": data["max_clones"],
                "max_clone_space": mib * 2**20 if mib is not None else None,
                "max_clone_ttl_minutes": data["max_clone_ttl_minutes"],
                "clone_idle_minutes": data["clone_idle_minutes"]}
