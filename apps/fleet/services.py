"""What the UI, the API and the scheduler ask of the fleet: one function each.

None of these open SSH: they record intent and start Operations that workers
carry out.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from apps.common.errors import Conflict, DomainError
from apps.fleet import credentials, steps
from apps.fleet.models import Host
from apps.ops import engine
from apps.ops.models import Operation
from apps.remote import signed, sudo
from apps.remote.commands import InvalidValue, os_user
from apps.remote.keys import generate_keypair, public_line_of


@transaction.atomic
def add_host(*, name: str, address: str, port: int = 22, user: str = "root",
             work_dir: str | None = None, authorized_keys_file: str = "",
             private_key: str = "", generate_key: bool = False,
             expected_fingerprint: str = "", trust_on_first_use: bool = False,
             trigger: str = Operation.Trigger.API, by=None) -> tuple[Host, Operation]:
    """Record a host and start its first discovery (which first pins its host key)."""
    if Host.objects.filter(name=name).exists():
        raise _name_taken(name)
    host = Host(name=name, address=address, port=port, user=user,
                expected_fingerprint=expected_fingerprint.strip(),
                trust_on_first_use=trust_on_first_use,
                created_by=by if by and by.is_authenticated else None)
    if work_dir:
        host.work_dir = work_dir
    host.authorized_keys_file = authorized_keys_file
    if generate_key:
        private, public = generate_keypair(f"pozol@{name}")
        host.credential_kind = Host.CredentialKind.GENERATED
        host.public_key = public
    else:
        private = private_key
        host.credential_kind = Host.CredentialKind.PASTED
    host.set_private_key(private)
    host.full_clean(validate_unique=False)  # the constraint decides, race-free
    try:
        with transaction.atomic():
            host.save()
    except IntegrityError:
        # Another request took the name between our check and our insert.
        raise _name_taken(name) from None
    return host, discover(host, trigger=trigger, by=by)


def _name_taken(name: str) -> Conflict:
    return Conflict(f"A host named {name} already exists; choose another name.",
                    code="host_exists", fields={"name": [f"a host named {name} already exists"]})


def discover(host: Host, *, trigger: str = Operation.Trigger.API, by=None) -> Operation:
    active = host.operations.filter(kind=steps.KIND.name, status__in=Operation.ACTIVE).first()
    if active:
        return active
    return engine.start(steps.KIND.name, host=host, trigger=trigger, user=by)


def discover_all(trigger: str = Operation.Trigger.SCHEDULE) -> list[Operation]:
    hosts = Host.objects.filter(host_key_state=Host.KeyState.PINNED)
    return [discover(host, trigger=trigger) for host in hosts]


def confirm_host_key(host: Host, fingerprint: str, *, by=None,
                     trigger: str = Operation.Trigger.UI) -> Operation:
    """The operator confirms the fingerprint a worker saw; then discovery runs."""
    if not host.presented_host_key or fingerprint.strip() != host.presented_fingerprint:
        raise DomainError("That is not the fingerprint the host presented; nothing was pinned.",
                          code="fingerprint_mismatch",
                          fields={"fingerprint": ["not the fingerprint the host presented"]})
    host.pin_host_key(host.presented_host_key, host.presented_fingerprint)
    return discover(host, trigger=trigger, by=by)


def accept_changed_host_key(host: Host, *, by=None,
                            trigger: str = Operation.Trigger.UI) -> Operation:
    """After a re-install: forget the pinned key and fetch the new one for confirmation."""
    host.host_key = host.host_key_fingerprint = ""
    host.presented_host_key = host.presented_fingerprint = ""
    host.host_key_state = Host.KeyState.UNVERIFIED
    host.expected_fingerprint = ""
    host.trust_on_first_use = False
    host.save()
    return discover(host, trigger=trigger, by=by)


def remove_host(host: Host) -> None:
    """Forget a host and everything PoZoL recorded of it; nothing on the host is touched.
    Refused while a replication link joins it to another host: the link would go with
    it, and the other end's copies, and the clones made from them, would be left with
    no link to update, reset or prune them by."""
    links = [*host.links_out.exclude(target_host=host).select_related("target_host"),
             *host.links_in.exclude(source_host=host).select_related("source_host")]
    if links:
        named = ", ".join(f"{link.name} ({link.source_host.name} -> {link.target_host.name})"
                          for link in links)
        raise Conflict(f"{host.name} is joined to other hosts by replication links "
                       f"{named}: remove them first", code="in_use")
    host.delete()


def retire_cluster(host: Host, cluster_id: int) -> None:
    """Forget a cluster that is gone for good. Discovery keeps a cluster it no longer
    finds, marked down (a crash is not a departure); the operator says when it is gone.
    Refused while it runs: the next discovery would find it again. A discovery that read
    the host before (when it may still have run) does not bring it back."""
    with transaction.atomic():
        host.hold_discovered_rows()
        cluster = host.clusters.filter(pk=cluster_id).first()
        if cluster is None:
            raise DomainError(f"{host.name} has no cluster {cluster_id}", code="not_found",
                              status=404)
        if cluster.running:
            raise Conflict(f"the cluster at {cluster.data_dir} is running on {host.name} "
                           "(as of the last discovery): stop it, discover, then retire it",
                           code="running")
        steps.forget_cluster(host, cluster.data_dir)


def sudoers(host: Host, login: str | None = None) -> dict:
    """The sudoers file `login` (the host's own login by default) needs on this host,
    from its discovered clusters; the helper its `run` rule names, trusting this host's
    key (apps.remote.signed); and what the last discovery's check of `sudo -n -l` found
    missing (None until a discovery through that login)."""
    login = host.user if login is None else login
    if login == sudo.ROOT:
        raise DomainError(f"{host.name} is reached as root, which needs no sudoers rules; "
                          "ask with ?login=<user> for the file another login would need",
                          code="root_login", fields={"login": ["root needs no rules"]})
    try:
        os_user(login)
    except InvalidValue as exc:
        raise DomainError(f"login: {exc.reason}", fields={"login": [exc.reason]}) from None
    checked = (host.facts or {}).get("sudo")
    try:
        clusters = [sudo.Cluster(c.owner, c.bin_dir) for c in host.clusters.all()
                    if c.owner and c.bin_dir]
        # The majors installed with no cluster yet: a cluster PoZoL creates later runs
        # with these rules in place (apps.provisioning).
        facts = host.typed_facts()
        clusters += [sudo.Cluster(owner, bin_dir)
                     for bin_dir, owner in (facts.majors().values() if facts else ())]
        text = sudo.sudoers(login, clusters)
    except InvalidValue as exc:  # what the host reported cannot be written in sudoers
        raise Conflict(f"{host.name}: {exc}", code="unnamable") from None
    if not host.host_key_fingerprint:
        raise Conflict(f"{host.name}: its host key is not pinned yet, and the helper is made "
                       "for that key: discover the host (and confirm its key) first",
                       code="host_key_not_pinned")
    try:
        helper = signed.helper(public_line_of(credentials.decrypt(host.private_key_encrypted)),
                               host.host_key_fingerprint)
    except (credentials.CredentialError, ValueError) as exc:
        raise Conflict(f"{host.name}: its stored key cannot make the helper: {exc}",
                       code="unusable_key") from None
    return {"login": login, "sudoers": text,
            "helper_path": signed.HELPER_PATH, "helper": helper,
            "check": checked if checked and checked.get("login") == login else None}
