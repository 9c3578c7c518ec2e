from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create (or reset the password of) an operator account; for `make run`."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--password-file", required=True)

    def handle(self, username, password_file, **options):
        password = Path(password_file).read_text().strip()
        user, created = get_user_model().objects.get_or_create(
            username=username, defaults={"is_staff": True, "is_superuser": True})
        user.set_password(password)
        user.save()
        self.stdout.write(f"{'created' if created else 'kept'} operator {username}")
