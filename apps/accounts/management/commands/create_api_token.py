import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from apps.accounts.models import ApiToken


class Command(BaseCommand):
    help = "Print a new API token for USERNAME (with --create, make the operator account too)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--create", action="store_true",
                            help="create the operator account if it does not exist")
        parser.add_argument("--name", default="cli", help="a label for the token")

    def handle(self, username, create, name, **options):
        users = get_user_model()
        user = users.objects.filter(username=username).first()
        if user is None and not create:
            raise CommandError(f"no user {username!r}; pass --create to make an operator")
        if user is None:
            user = users.objects.create_user(username, password=secrets.token_urlsafe(16),
                                             is_staff=True)
            self.stderr.write(f"created operator {username!r} (set a password with "
                              f"`manage.py changepassword {username}`)")
        _, raw = ApiToken.objects.issue(user, name)
        self.stdout.write(raw)
