"""apps.remote.keys: PoZoL's own keys, pasted keys, fingerprints (no host needed)."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import time
from pathlib import Path

import paramiko
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa

from apps.remote import keys
from apps.remote.keys import InvalidKey


def pem(private: object, fmt: serialization.PrivateFormat) -> str:
    return private.private_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM, fmt, serialization.NoEncryption()
    ).decode()


def test_generated_keypair_is_ed25519_in_openssh_form():
    private, public = keys.generate_keypair("pozol@control")

    assert private.startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert public.startswith("ssh-ed25519 AAAA") and public.endswith(" pozol@control")
    assert keys.public_line_of(private, "pozol@control") == public
    assert keys.generate_keypair("x")[0] != keys.generate_keypair("x")[0]


SUPPORTED = {
    "ed25519 openssh": (ed25519.Ed25519PrivateKey.generate, serialization.PrivateFormat.OpenSSH),
    "ed25519 pkcs8": (ed25519.Ed25519PrivateKey.generate, serialization.PrivateFormat.PKCS8),
    "rsa traditional": (lambda: rsa.generate_private_key(65537, 2048),
                        serialization.PrivateFormat.TraditionalOpenSSL),
    "rsa pkcs8": (lambda: rsa.generate_private_key(65537, 2048),
                  serialization.PrivateFormat.PKCS8),
    "rsa openssh": (lambda: rsa.generate_private_key(65537, 2048),
                    serialization.PrivateFormat.OpenSSH),
    "ecdsa traditional": (lambda: ec.generate_private_key(ec.SECP256R1()),
                          serialization.PrivateFormat.TraditionalOpenSSL),
    "ecdsa openssh": (lambda: ec.generate_private_key(ec.SECP384R1()),
                      serialization.PrivateFormat.OpenSSH),
}


@pytest.mark.parametrize("kind", SUPPORTED)
def test_supported_keys_load_in_every_form(kind: str):
    make, fmt = SUPPORTED[kind]
    private = make()
    text = pem(private, fmt)

    key = keys.load_private_key(text)

    expected_public = private.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    ).decode()
    assert isinstance(key, paramiko.PKey) and key.can_sign()
    assert keys.public_line(key) == expected_public
    assert keys.public_line_of(text) == expected_public


@pytest.mark.parametrize("garbage", [
    "", "hello", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nnot base64 at all\n-----END OPENSSH PRIVATE KEY-----",
    "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----",
])
def test_garbage_is_an_invalid_key(garbage: str):
    with pytest.raises(InvalidKey) as refused:
        keys.load_private_key(garbage)

    assert isinstance(refused.value, ValueError)


def test_passphrase_protected_keys_are_refused_with_a_reason():
    text = ed25519.Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
        serialization.BestAvailableEncryption(b"pw"),
    ).decode()

    with pytest.raises(InvalidKey, match="passphrase"):
        keys.load_private_key(text)


def test_dsa_keys_are_refused():
    text = pem(dsa.generate_private_key(2048), serialization.PrivateFormat.PKCS8)

    with pytest.raises(InvalidKey, match="unsupported key type"):
        keys.load_private_key(text)


def test_error_messages_never_contain_the_key():
    text = keys.generate_keypair("x")[0].replace("b3BlbnNzaC1rZXkt", "b3BlbnNzaC1rZXku")

    with pytest.raises(InvalidKey) as refused:
        keys.load_private_key(text)

    assert "b3BlbnNz" not in str(refused.value)


def test_fingerprint_matches_openssh(tmp_path: Path):
    public = keys.generate_keypair("x")[1]
    (tmp_path / "key.pub").write_text(public + "\n")

    ours = keys.fingerprint(public)
    theirs = subprocess.run(["ssh-keygen", "-l", "-f", str(tmp_path / "key.pub")],
                            capture_output=True, text=True, check=True).stdout.split()[1]

    assert ours == theirs


def test_fingerprint_of_a_line_and_of_a_paramiko_key_agree():
    private, public = keys.generate_keypair("x")
    blob = base64.b64decode(public.split()[1])
    expected = "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")

    assert keys.fingerprint(public) == expected
    assert keys.fingerprint(keys.load_private_key(private)) == expected
    assert keys.fingerprint(keys.public_key_of(public)) == expected


@pytest.mark.parametrize("line", [
    "", "ssh-ed25519", "ssh-ed25519 !!!notbase64", "ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIA==",
])
def test_bad_public_lines_are_invalid(line: str):
    with pytest.raises(InvalidKey):
        keys.fingerprint(line)


# ---- bounds: a pasted key must not cost a web worker its life ---------------

KEY_FIXTURES = Path(__file__).parent / "fixtures" / "keys"


def timed_load(text: str) -> float:
    started = time.monotonic()
    keys.load_private_key(text)
    return time.monotonic() - started


def test_an_8192_bit_rsa_key_loads_without_the_slow_check():
    """OpenSSL's full RSA check took 6-15 s for this key; the bounded checks
    take a fraction of a second."""
    text = (KEY_FIXTURES / "rsa-8192.openssh").read_text()
    key = keys.load_private_key(text)
    assert key.get_bits() == 8192 and key.can_sign()
    assert timed_load(text) < 2


@pytest.mark.parametrize("fmt", [serialization.PrivateFormat.OpenSSH,
                                 serialization.PrivateFormat.PKCS8])
def test_rsa_below_2048_bits_is_refused(fmt):
    text = pem(rsa.generate_private_key(65537, 1024), fmt)  # noqa: S505  the point
    with pytest.raises(InvalidKey, match="1024-bit RSA key: use 2048 to 8192 bits"):
        keys.load_private_key(text)


@pytest.mark.parametrize("name", ["rsa-16384.openssh", "rsa-8200.pkcs8"])
def test_rsa_above_8192_bits_is_refused_before_any_expensive_check(name):
    text = (KEY_FIXTURES / name).read_text()
    started = time.monotonic()
    with pytest.raises(InvalidKey, match="-bit RSA key: use 2048 to 8192 bits"):
        keys.load_private_key(text)
    assert time.monotonic() - started < 1


def test_a_huge_paste_is_refused_unread():
    text = ("-----BEGIN OPENSSH PRIVATE KEY-----\n" + "A" * 70 * 400
            + "\n-----END OPENSSH PRIVATE KEY-----\n")
    with pytest.raises(InvalidKey, match="longer than 16384 characters"):
        keys.load_private_key(text)


def test_an_inconsistent_rsa_key_is_refused_not_used():
    """Read without OpenSSL's check, a damaged key must not reach OpenSSL's signing."""
    good = rsa.generate_private_key(65537, 2048).private_numbers()
    damaged = rsa.RSAPrivateNumbers(
        p=good.p, q=good.q, d=good.d, dmp1=good.dmp1 ^ 2, dmq1=good.dmq1, iqmp=good.iqmp,
        public_numbers=good.public_numbers,
    ).private_key(unsafe_skip_rsa_key_validation=True)
    with pytest.raises(InvalidKey, match="inconsistent"):
        keys.load_private_key(pem(damaged, serialization.PrivateFormat.PKCS8))


def test_ecdsa_on_a_curve_paramiko_cannot_sign_with_is_refused():
    text = pem(ec.generate_private_key(ec.SECP256K1()), serialization.PrivateFormat.PKCS8)
    with pytest.raises(InvalidKey, match="secp256k1"):
        keys.load_private_key(text)
