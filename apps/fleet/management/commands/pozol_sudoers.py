"""Print the sudoers file a non-root login needs: for a host PoZoL knows, or by hand.

    manage.py pozol_sudoers --host db1                 # its login and clusters
    manage.py pozol_sudoers --host db1 --helper        # the helper its run rule names
    manage.py pozol_sudoers --login pozol --cluster postgres:/usr/lib/postgresql/17/bin
"""

from django.core.management.base import BaseCommand, CommandError

from apps.common.errors import DomainError
from apps.fleet import services
from apps.fleet.models import Host
from apps.remote import sudo
from apps.remote.commands import InvalidValue


class Command(BaseCommand):
    help = "Print the sudoers rules (/etc/sudoers.d/pozol) a non-root login needs."

    def add_arguments(self, parser):
        parser.add_argument("--host", help="a host PoZoL knows, by name")
        parser.add_argument("--login", help="the login (default: the host's, else pozol)")
        parser.add_argument("--helper", action="store_true",
                            help="print the helper (pozol-run) for --host instead")
        parser.add_argument("--cluster", action="append", default=[], metavar="OWNER:BIN_DIR",
                            help="a cluster's owner and bin directory (repeatable)")

    def handle(self, *args, host=None, login=None, cluster=(), helper=False, **options):
        try:
            if host is not None:
                row = Host.objects.filter(name=host).first()
                if row is None:
                    raise CommandError(f"no host named {host!r}")
                found = services.sudoers(row, login)
                self.stdout.write(found["helper" if helper else "sudoers"], ending="")
                return
            if helper:
                raise CommandError("--helper needs --host: the helper trusts that host's key")
            clusters = [sudo.Cluster(*_owner_and_dir(spec)) for spec in cluster]
            self.stdout.write(sudo.sudoers(login or "pozol", clusters), ending="")
        except (DomainError, InvalidValue) as exc:
            raise CommandError(str(exc)) from None


def _owner_and_dir(spec: str) -> tuple[str, str]:
    owner, sep, bin_dir = spec.partition(":")
    if not sep or not bin_dir.startswith("/"):
        raise CommandError(f"--cluster {spec!r}: write OWNER:/absolute/bin/dir")
    return owner, bin_dir
