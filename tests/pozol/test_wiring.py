"""Wiring promises checked in fresh processes: strict settings and the web
process that can never open SSH."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def python(code: str, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("POZOL_")}
    environment.update({"DJANGO_SETTINGS_MODULE": "pozol.settings",
                        "POZOL_SECRET_KEY": "x", **env})
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("variable", "value", "says"), [
    ("POZOL_DEBUG", "maybe", "POZOL_DEBUG='maybe': expected true/false"),
    ("POZOL_DISCOVERY_INTERVAL", "15m", "POZOL_DISCOVERY_INTERVAL='15m': expected a whole"),
    ("POZOL_DISCOVERY_INTERVAL", "5", "must be at least 60"),
    ("POZOL_TELEMETRY_SHARDS", "0", "POZOL_TELEMETRY_SHARDS=0: must be at least 1"),
    ("POZOL_TELEMETRY_SHARDS", "1025", "POZOL_TELEMETRY_SHARDS=1025: must be at most 1024"),
    ("POZOL_DATABASE_URL", "mysql://x/y", "expected postgres://... or sqlite:///path"),
    ("POZOL_SECRET_KEY_FILE", "/nonexistent/secret", "POZOL_SECRET_KEY_FILE: cannot read"),
    ("POZOL_METRICS_ALLOWED_CIDRS", "10.0.0.0/8,10.0.0.300",
     "POZOL_METRICS_ALLOWED_CIDRS: '10.0.0.300' is not an address or CIDR"),
])
def test_a_bad_setting_stops_start_up_naming_the_variable(variable, value, says):
    result = python("import django; django.setup()", **{variable: value})
    assert result.returncode != 0 and says in result.stderr


def test_the_secret_key_is_required_unless_debugging():
    empty = python("import django; django.setup()", POZOL_SECRET_KEY=" ")
    assert "POZOL_SECRET_KEY is empty" in empty.stderr
    # Another POZOL_ variable keeps a `make run` demo's .pozol/env out of it: a checkout
    # where `make run` ran must still prove a deployment without a key refuses to start.
    environment_without = python("import os; os.environ.pop('POZOL_SECRET_KEY');"
                                 "import django; django.setup()", POZOL_DEBUG="false")
    assert "POZOL_SECRET_KEY (or POZOL_SECRET_KEY_FILE) must be set" in \
        environment_without.stderr
    assert python("import os; os.environ.pop('POZOL_SECRET_KEY');"
                  "import django; django.setup()", POZOL_DEBUG="true").returncode == 0


def test_a_secret_can_come_from_a_file(tmp_path):
    secret = tmp_path / "key"
    secret.write_text("from-a-file\n")
    result = python("import django; django.setup(); from django.conf import settings;"
                    "print(settings.SECRET_KEY)", POZOL_SECRET_KEY_FILE=str(secret))
    assert result.stdout.strip() == "from-a-file"


def test_the_web_process_never_opens_ssh():
    result = python(
        "import pozol.wsgi\n"
        "from apps.remote import ssh, errors\n"
        "try:\n"
        "    ssh.fetch_host_key('127.0.0.1', 9)\n"
        "except errors.SSHForbidden as exc:\n"
        "    print('refused:', exc)\n",
        POZOL_DATABASE_URL="sqlite:///:memory:")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("refused:") and "web process" in result.stdout
