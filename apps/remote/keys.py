"""SSH key material: making PoZoL's own keys, reading pasted ones, fingerprints.

A key that cannot be used raises `InvalidKey`, a `ValueError`: it is bad input
(an operator pasted the wrong thing into a form), found before any host is
involved, so forms and serializers can report it like any other invalid field.
`apps.remote.ssh` turns it into `AuthenticationFailed` when a stored key turns
out to be unusable at connect time, because there it is a credential problem of
that host.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import math

import paramiko
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa

# An 8192-bit RSA key is about 6.7 KB of text in any form; anything much
# longer is not a key we would accept, so it is refused before parsing.
MAX_KEY_TEXT = 16 * 1024
# Below 2048 bits RSA is breakable (NIST SP 800-131A); above 8192 only costs
# CPU (a 16384-bit key took a minute to check and got the web worker killed).
RSA_BITS = (2048, 8192)
# The curves paramiko signs with.
EC_CURVES = (ec.SECP256R1, ec.SECP384R1, ec.SECP521R1)

_PARAMIKO_CLASS = {
    ed25519.Ed25519PrivateKey: paramiko.Ed25519Key,
    rsa.RSAPrivateKey: paramiko.RSAKey,
    ec.EllipticCurvePrivateKey: paramiko.ECDSAKey,
}


class InvalidKey(ValueError):
    """Text that is not a usable SSH key; the message says why, never the key."""


def generate_keypair(comment: str) -> tuple[str, str]:
    """A new ed25519 key: (private key in OpenSSH form, "ssh-ed25519 AAAA... comment")."""
    private = ed25519.Ed25519PrivateKey.generate()
    private_text = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    ).decode()
    return private_text, _public_line(private, comment)


def load_private_key(text: str) -> paramiko.PKey:
    """A paramiko key from ed25519, RSA or ECDSA text in OpenSSH or PEM form."""
    private = _parse_private(text)
    key_class = _paramiko_class(private)
    if isinstance(private, rsa.RSAPrivateKey):
        # paramiko would re-read the text with OpenSSL's full (slow) RSA check.
        return paramiko.RSAKey(key=private)
    # paramiko's classes read different subsets of the PEM flavours (its
    # ed25519 reads only OpenSSH form), so hand every key over in OpenSSH form.
    openssh = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    ).decode()
    return key_class.from_private_key(io.StringIO(openssh))


def public_line_of(private_text: str, comment: str = "") -> str:
    """The authorized_keys line of a private key, to install on a host."""
    return _public_line(_parse_private(private_text), comment)


def fingerprint(key: str | paramiko.PKey) -> str:
    """OpenSSH's fingerprint ("SHA256:<base64 without padding>") of a public key.

    Takes a public key line ("ssh-ed25519 AAAA... comment") or a paramiko key.
    """
    blob = key.asbytes() if isinstance(key, paramiko.PKey) else _public_blob(key)
    digest = hashlib.sha256(blob).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def public_key_of(line: str) -> paramiko.PKey:
    """A paramiko public key from a public key line, e.g. a pinned host key."""
    key_type = _split_public_line(line)[0]
    try:
        return paramiko.PKey.from_type_string(key_type, _public_blob(line))
    except (paramiko.SSHException, ValueError) as exc:
        raise InvalidKey(f"unusable {key_type} public key: {exc}") from None


def public_line(key: paramiko.PKey) -> str:
    """The "type base64" line of a paramiko public key (e.g. a presented host key)."""
    return f"{key.get_name()} {key.get_base64()}"


def _parse_private(text: str) -> serialization.SSHPrivateKeyTypes:
    if not isinstance(text, str) or "PRIVATE KEY-----" not in text:
        raise InvalidKey("not a private key: expected a '-----BEGIN ... PRIVATE KEY-----' block")
    if len(text) > MAX_KEY_TEXT:
        raise InvalidKey(f"longer than {MAX_KEY_TEXT} characters: not a key PoZoL accepts "
                         f"(RSA up to {RSA_BITS[1]} bits, ECDSA or ed25519)")
    private = _read_unchecked(text.strip().encode() + b"\n")
    _check_type_and_size(private)
    if isinstance(private, rsa.RSAPrivateKey):
        _check_rsa(private)
    return private


def _read_unchecked(data: bytes) -> serialization.SSHPrivateKeyTypes:
    """Parse without OpenSSL's RSA check: it tests p and q for primality, which
    costs seconds at 8192 bits and a minute at 16384, before we know the size.
    _check_rsa does the checks that matter, bounded, afterwards."""
    try:
        try:
            return serialization.load_ssh_private_key(
                data, password=None, unsafe_skip_rsa_key_validation=True)
        except ValueError:
            return serialization.load_pem_private_key(
                data, password=None, unsafe_skip_rsa_key_validation=True)
    except TypeError:  # cryptography's way of saying "encrypted, no password given"
        raise InvalidKey("the private key is protected by a passphrase; "
                         "give PoZoL a key without one") from None
    except (ValueError, UnsupportedAlgorithm):
        raise InvalidKey("the private key could not be read (damaged or not an SSH key)") from None


def _check_type_and_size(private: object) -> None:
    _paramiko_class(private)  # refuses DSA and anything unknown
    if isinstance(private, rsa.RSAPrivateKey):
        low, high = RSA_BITS
        if not low <= private.key_size <= high:
            raise InvalidKey(f"a {private.key_size}-bit RSA key: use {low} to {high} bits "
                             "(or an ed25519 key)")
    if isinstance(private, ec.EllipticCurvePrivateKey) and \
            not isinstance(private.curve, EC_CURVES):
        raise InvalidKey(f"ECDSA on curve {private.curve.name} is not supported: "
                         "use nistp256, nistp384 or nistp521")


def _check_rsa(private: rsa.RSAPrivateKey) -> None:
    """A key read without OpenSSL's check must still be consistent before
    OpenSSL computes with it (cryptography warns an inconsistent one may make
    it misbehave). The relations between the numbers are cheap to check; the
    skipped part, primality of p and q, is what costs seconds, and a key that
    fails it cannot sign anything a host accepts, which the probe shows."""
    numbers = private.private_numbers()
    p, q, d, n = numbers.p, numbers.q, numbers.d, numbers.public_numbers.n
    e = numbers.public_numbers.e
    consistent = (
        p > 1 and q > 1 and p * q == n and e % 2 == 1 and 1 < e < n and 1 < d < n
        and numbers.dmp1 == d % (p - 1) and numbers.dmq1 == d % (q - 1)
        and (numbers.iqmp * q) % p == 1
        and (d * e) % ((p - 1) * (q - 1) // math.gcd(p - 1, q - 1)) == 1
    )
    if not consistent:
        raise InvalidKey("the RSA private key is inconsistent (damaged)")
    probe = b"pozol: can this key sign?"
    try:
        signature = private.sign(probe, padding.PKCS1v15(), hashes.SHA256())
        private.public_key().verify(signature, probe, padding.PKCS1v15(), hashes.SHA256())
    except (InvalidSignature, ValueError):
        raise InvalidKey("the RSA private key cannot make valid signatures (damaged)") from None


def _paramiko_class(private: object) -> type[paramiko.PKey]:
    for crypto_class, key_class in _PARAMIKO_CLASS.items():
        if isinstance(private, crypto_class):
            return key_class
    raise InvalidKey(
        f"unsupported key type {type(private).__name__}: use ed25519, RSA or ECDSA"
    )


def _public_line(private: serialization.SSHPrivateKeyTypes, comment: str) -> str:
    _paramiko_class(private)  # refuse DSA and friends here too
    public = private.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    ).decode()
    return f"{public} {comment}".strip()


def _split_public_line(line: str) -> list[str]:
    parts = line.split() if isinstance(line, str) else []
    if len(parts) < 2:
        raise InvalidKey("not a public key line: expected 'type base64 [comment]'")
    return parts


def _public_blob(line: str) -> bytes:
    key_type, encoded = _split_public_line(line)[:2]
    try:
        blob = base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raise InvalidKey("the public key is not valid base64") from None
    # The blob starts with its own type name; a mismatch means a mangled paste.
    if blob[4:4 + len(key_type)] != key_type.encode():
        raise InvalidKey(f"the public key does not match its type {key_type!r}")
    return blob
