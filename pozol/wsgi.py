import os

from django.core.wsgi import get_wsgi_application

from apps.remote.ssh import forbid_ssh

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pozol.settings")
# The web process only records intent; workers do all remote work.
forbid_ssh("the web process never opens SSH")
application = get_wsgi_application()
