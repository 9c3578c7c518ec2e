import os

from django.core.asgi import get_asgi_application

from apps.remote.ssh import forbid_ssh

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pozol.settings")
forbid_ssh("the web process never opens SSH")
application = get_asgi_application()
