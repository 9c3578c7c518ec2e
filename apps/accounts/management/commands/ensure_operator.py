from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Create (or reset the password of) an operator account; for `make run`."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--password-file", required=True)

    def handle(self, username, password_file, **options):
        password = Path(password_file).read_text().strip()
        users = get_user_model()
        user = users.objects.filter(username=username).first()
        created = user is None
        if user is None:
            user = users(username=username, is_staff=True, is_superuser=True)
        # The same rules as a password set in the admin: a weak file is refused
        # before anything is saved.
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise CommandError(f"{password_file}: {' '.join(exc.messages)}") from None
        user.set_password(password)
        user.save()
        self.stdout.write(f"{'created' if created else 'kept'} operator {username}")
