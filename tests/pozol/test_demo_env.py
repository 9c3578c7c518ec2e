"""manage.py in a new shell sees what `make run` chose (issue 8, the front door)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from apps.demo import __main__ as demo
from pozol.settings import BASE_DIR, load_demo_env


@pytest.fixture
def bare_environ(monkeypatch):
    """A new shell: no POZOL_ variable at all."""
    for name in [n for n in os.environ if n.startswith("POZOL_")]:
        monkeypatch.delenv(name)


def test_make_run_writes_what_it_chose_readable_by_its_owner_only(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "ENV_FILE", tmp_path / "env")
    demo.write_env_file({"POZOL_SECRET_KEY": "s3cret", "POZOL_DATABASE_URL": "postgres://x/y",
                         "PATH": "/usr/bin", "POZOL_BAD": "two\nlines"})
    written = (tmp_path / "env").read_text().splitlines()
    assert written[1:] == ["POZOL_DATABASE_URL=postgres://x/y", "POZOL_SECRET_KEY=s3cret"]
    assert stat.S_IMODE((tmp_path / "env").stat().st_mode) == 0o600


def test_a_new_shell_takes_the_file(tmp_path, bare_environ, capsys):
    (tmp_path / "env").write_text("# comment\nPOZOL_SECRET_KEY=abc=def\n\n")
    assert load_demo_env(tmp_path / "env") is True
    assert os.environ["POZOL_SECRET_KEY"] == "abc=def"
    assert "using what `make run` chose" in capsys.readouterr().err


def test_any_pozol_variable_means_the_environment_rules(tmp_path, bare_environ, monkeypatch):
    (tmp_path / "env").write_text("POZOL_SECRET_KEY=from-file\n")
    monkeypatch.setenv("POZOL_DEBUG", "false")
    assert load_demo_env(tmp_path / "env") is False
    assert "POZOL_SECRET_KEY" not in os.environ


def test_a_line_that_is_not_a_pozol_variable_is_refused_with_its_place(tmp_path, bare_environ):
    (tmp_path / "env").write_text("POZOL_SECRET_KEY=x\nPATH=/tmp\n")
    with pytest.raises(ImproperlyConfigured, match=r"env:2: expected POZOL_NAME=value"):
        load_demo_env(tmp_path / "env")


def test_without_the_file_or_variables_manage_py_names_what_is_missing(tmp_path):
    if (BASE_DIR / ".pozol" / "env").exists():
        pytest.skip("this checkout has a `make run` env file")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("POZOL_", "DJANGO_SETTINGS_MODULE"))}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=BASE_DIR, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "POZOL_SECRET_KEY (or POZOL_SECRET_KEY_FILE) must be set" in result.stderr
    assert Path(BASE_DIR / ".pozol" / "env").exists() is False


def test_make_run_s_one_collector_serves_every_shard_s_queue(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "STATE", tmp_path)  # where its logs would go
    services = demo.services({"POZOL_TELEMETRY_SHARDS": "3"}).services
    [collector] = [service.argv for service in services if service.name == "telemetry"]
    assert collector[collector.index("-Q") + 1] == "telemetry,telemetry-1,telemetry-2"
    assert demo.collector_queues({}) == "telemetry"


@pytest.mark.parametrize("count", [1, 2, 5])
def test_make_run_names_the_shards_queues_as_the_router_does(settings, count):
    from apps.telemetry import shards

    settings.POZOL = {**settings.POZOL, "TELEMETRY_SHARDS": count}
    assert demo.collector_queues({"POZOL_TELEMETRY_SHARDS": str(count)}).split(",") == \
        shards.queues()
