"""Register the hosts of a local demo fleet (apps.demo.fleet) with their known keys.

The fleet itself tells us each host's key fingerprint, so the demo pins keys
it knows rather than trusting on first use. A fleet that was re-created has
new keys; since it is our own demo fleet, its hosts are re-pinned here.

Each host is registered at the address the fleet's status gives: for the
demo-host container (serve --advertise demo-host) that is the advertised name,
where the worker dials it, not the loopback address inside the container.

A --spare host is not added: the README adds it through the API. Once added,
it is refreshed like the others.
"""

from pathlib import Path

from django.core.management.base import BaseCommand

from apps.demo.fleet import status
from apps.fleet import services
from apps.fleet.models import Host
from apps.ops.models import Operation


class Command(BaseCommand):
    help = "Register (or refresh) the demo fleet's hosts and discover them."

    def add_arguments(self, parser):
        parser.add_argument("state_dir")
        parser.add_argument("--spare", action="append", default=[], metavar="NAME",
                            help="a fleet host not to add (refreshed if it was added)")

    def handle(self, state_dir, spare, **options):
        for fleet_host in status(state_dir):
            private_key = Path(fleet_host.private_key_path).read_text()
            host = Host.objects.filter(name=fleet_host.name).first()
            if host is None and fleet_host.name in spare:
                self.stdout.write(f"left {fleet_host.name} at {fleet_host.address} unregistered")
                continue
            if host is None:
                host, _ = services.add_host(
                    name=fleet_host.name, address=fleet_host.address, port=fleet_host.port,
                    user=fleet_host.user, work_dir=fleet_host.work_dir, private_key=private_key,
                    authorized_keys_file=fleet_host.authorized_keys_path or "",
                    expected_fingerprint=fleet_host.host_key_fingerprint,
                    trigger=Operation.Trigger.SYSTEM)
                self.stdout.write(f"registered {host.name} at {host.address}")
                continue
            host.set_private_key(private_key)
            host.save()
            if host.host_key_fingerprint != fleet_host.host_key_fingerprint:
                host.pin_host_key(fleet_host.host_public_key, fleet_host.host_key_fingerprint)
                self.stdout.write(f"{host.name}: the demo fleet was re-created; re-pinned its key")
            services.discover(host, trigger=Operation.Trigger.SYSTEM)
            self.stdout.write(f"refreshed {host.name}")
