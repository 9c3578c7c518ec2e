"""The helper a non-root login runs as root (apps.remote.signed): it runs a script only
with a signature of the key it trusts, once, before it expires. Run here as the program
it is, with the machine's own ssh-keygen checking the signatures PoZoL makes."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from apps.remote import keys, signed

# The host key fingerprint the helper is made for, and another host's.
HOST = keys.fingerprint(keys.public_line_of(keys.generate_keypair("host key")[0]))
OTHER_HOST = keys.fingerprint(keys.public_line_of(keys.generate_keypair("other host key")[0]))


@pytest.fixture(params=["ed25519", "rsa"])
def key_text(request, tmp_path) -> str:
    if request.param == "ed25519":
        return keys.generate_keypair("host")[0]
    path = tmp_path / "rsa"
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", str(path)],
                   check=True)
    return path.read_text()


@pytest.fixture
def helper(tmp_path, key_text) -> Path:
    path = tmp_path / "pozol-run"
    path.write_text(signed.helper(keys.public_line_of(key_text, "a comment"), HOST,
                                  state_dir=str(tmp_path / "state")))
    path.chmod(0o755)
    return path


def run(helper: Path, *argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([str(helper), *argv], input=stdin, capture_output=True, timeout=30)


def signed_argv(key_text: str, text: str, host: str = HOST, **kwargs) -> list[str]:
    made = signed.sign_script(keys.load_private_key(key_text), text, host=host, seconds=60,
                              **kwargs)
    return made.argv(text)[1:]


def test_a_signed_script_runs_once_with_its_input(helper, key_text):
    argv = signed_argv(key_text, 'printf "%s|" "$POZOL_RUN_STATE"; cat')
    done = run(helper, *argv, stdin=b"from stdin")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{helper.parent / 'state'}|from stdin".encode()
    again = run(helper, *argv)
    assert again.returncode == signed.REFUSED_STATUS
    assert signed.refusal(again.stderr.decode()) == "this signed script already ran once"


def test_a_changed_script_another_key_another_host_or_an_old_signature_is_refused(
        helper, key_text, tmp_path):
    marker = tmp_path / "ran"
    nonce, expires, signature, _ = signed_argv(key_text, "true")
    changed = run(helper, nonce, expires, signature, f"touch {marker}")
    other = signed_argv(keys.generate_keypair("other")[0], f"touch {marker}")
    elsewhere = run(helper, *signed_argv(key_text, f"touch {marker}", host=OTHER_HOST))
    old = signed_argv(key_text, f"touch {marker}", now=time.time() - 3600)
    for done in (changed, run(helper, *other), elsewhere, run(helper, *old)):
        assert done.returncode == signed.REFUSED_STATUS, done
    assert "bad signature" in signed.refusal(changed.stderr.decode())
    assert "bad signature" in signed.refusal(run(helper, *other).stderr.decode())
    assert f"made for another host (host key {HOST})" in signed.refusal(
        elsewhere.stderr.decode())
    assert "expired" in signed.refusal(run(helper, *old).stderr.decode())
    assert not marker.exists()


@pytest.mark.parametrize("argv", [
    [], ["x"], ["0" * 31, "1", "AAAA", "true"], ["0" * 32, "soon", "AAAA", "true"],
    ["0" * 32, "9999999999", "AA AA", "true"], ["--standing", "../x"],
    ["--standing", "missing"],
])
def test_malformed_arguments_are_refused_before_anything_runs(helper, argv):
    done = run(helper, *argv)
    assert done.returncode == signed.REFUSED_STATUS and signed.refusal(done.stderr.decode())


def test_a_standing_script_runs_with_its_arguments(helper, key_text):
    name = signed.standing_name("main")
    install = ('mkdir -p "$POZOL_RUN_STATE/standing" && '
               f'printf %s \'echo "got $1"\' > "$POZOL_RUN_STATE/standing/{name}"')
    assert run(helper, *signed_argv(key_text, install)).returncode == 0
    done = run(helper, "--standing", name, "tank/x")
    assert (done.returncode, done.stdout) == (0, b"got tank/x\n")


def test_the_helper_says_its_version_and_trusts_one_key_without_its_comment(helper, key_text):
    text = helper.read_text()
    assert signed.installed_version(text) == signed.HELPER_VERSION
    assert signed.installed_version("#!/bin/sh\necho hi\n") is None
    assert "a comment" not in text and "@" + "TRUSTED@" not in text
    assert f"HOST='{HOST}'" in text
    with pytest.raises(ValueError):
        signed.helper("ssh-ed25519 not-base64!", HOST)
    for not_a_fingerprint in ("", "MD5:ab:cd", "SHA256:short", HOST + "'; id; '"):
        with pytest.raises(ValueError):
            signed.helper(keys.public_line_of(key_text), not_a_fingerprint)


def test_now_and_then_it_forgets_what_has_expired_and_abandoned_checks(helper, key_text):
    state = helper.parent / "state"
    (state / "used" / f"1000-{'a' * 32}").mkdir(parents=True)
    abandoned = state / "verify.killed"
    abandoned.mkdir()
    os.utime(abandoned, (time.time() - 7200, time.time() - 7200))
    key, nonce, expires = keys.load_private_key(key_text), "0" * 32, int(time.time()) + 600
    made = signed.Signed(nonce, expires,
                         signed.sshsig(key, signed.message(nonce, expires, HOST, "true")))
    assert run(helper, *made.argv("true")[1:]).returncode == 0
    assert sorted(p.name for p in (state / "used").iterdir()) == [f"{expires}-{nonce}"]
    assert not abandoned.exists()
