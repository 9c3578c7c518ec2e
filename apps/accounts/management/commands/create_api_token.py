import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from apps.accounts.models import ApiToken


class Command(BaseCommand):
    help = "Print a new API token for USERNAME (with --create, make the operator account too)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--create", action="store_true",
                            help="create the operator account if it does not exist")
        parser.add_argument("--name", default="cli", help="a label for the token")
        parser.add_argument("--expires-in", type=int, metavar="DAYS", default=None,
                            help="refuse the token after DAYS days (default: never expires)")

    def handle(self, username, create, name, expires_in, **options):
        if expires_in is not None and expires_in < 1:
            raise CommandError("--expires-in: give a whole number of days, at least 1")
        users = get_user_model()
        user = users.objects.filter(username=username).first()
        if user is None and not create:
            raise CommandError(f"no user {username!r}; pass --create to make an operator")
        if user is None:
            user = users.objects.create_user(username, password=secrets.token_urlsafe(16),
                                             is_staff=True)
            self.stderr.write(f"created operator {username!r} (set a password with "
                              f"`manage.py changepassword {username}`)")
        expires_at = timezone.now() + timedelta(days=expires_in) if expires_in else None
        _, raw = ApiToken.objects.issue(user, name, expires_at=expires_at)
        if expires_at:
            self.stderr.write(f"the token expires at {expires_at.isoformat()}")
        self.stdout.write(raw)
