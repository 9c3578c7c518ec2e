"""What a host's address and work directory may be: one rule each, used by the
model, the API serializers and the form.

Addresses: a DNS name (RFC 1123) or an IPv4/IPv6 literal that names one
machine: not unspecified (0.0.0.0, ::), link-local (169.254/16, fe80::/10,
where cloud metadata services live), multicast, broadcast or reserved.
Loopback is allowed (the test fleet lives on 127.0.0.N), and so are private
networks (that is where databases are). Names are not resolved here: what a
name points to may change, and a control plane must not make DNS calls on
behalf of a form.
"""

from __future__ import annotations

import ipaddress
import re
import socket

from django.core.exceptions import ValidationError

from apps.remote import commands

MAX_ADDRESS = 253
_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\Z")


def host_address(value: str) -> None:
    """Refuse anything that is not a DNS name or a usable IP literal."""
    if not isinstance(value, str) or not value or len(value) > MAX_ADDRESS:
        raise ValidationError(f"A host name or an IP address (at most {MAX_ADDRESS} characters).",
                              code="address")
    try:
        ip = ipaddress.ip_address(value)
    except ValueError:
        _dns_name(value)
    else:
        _usable_ip(ip)


def _dns_name(value: str) -> None:
    labels = value.split(".")
    if not all(_LABEL.match(label) for label in labels):
        raise ValidationError(
            "A host name (letters, digits and '-' between dots) or an IP address.",
            code="address")
    # "0", "127.1", "0x7f.1" and "2130706433" are not names: the C resolver reads
    # them as IPv4 addresses (0.0.0.0, 127.0.0.1, ...), which would slip past the
    # literal checks. RFC 3696 2: a top-level label is never all-numeric.
    if labels[-1].isdigit() or _inet_aton_accepts(value):
        raise ValidationError("Write an IPv4 address as four decimal numbers (a.b.c.d).",
                              code="address")


def _inet_aton_accepts(value: str) -> bool:
    try:
        socket.inet_aton(value)
    except OSError:
        return False
    return True


def _usable_ip(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
    mapped = getattr(ip, "ipv4_mapped", None)
    if mapped is not None:  # ::ffff:a.b.c.d is a.b.c.d
        ip = mapped
    if ip.is_loopback:
        return  # IPv6 ::1 is inside a reserved block; loopback is fine on purpose
    problem = ("unspecified" if ip.is_unspecified else
               "link-local" if ip.is_link_local else
               "multicast" if ip.is_multicast else
               "reserved or broadcast" if ip.is_reserved else "")
    if problem:
        raise ValidationError(f"{ip} is a {problem} address, not one host's address.",
                              code="address")


def work_dir(value: str) -> None:
    """An absolute path the remote layer will accept: no '..', NUL or newline."""
    try:
        commands.abs_path(value)
    except commands.InvalidValue as exc:
        raise ValidationError(f"The work directory {exc.reason}.", code="work_dir") from None


def authorized_keys_file(value: str) -> None:
    """Empty (the SSH user's ~/.ssh/authorized_keys) or an absolute path."""
    if not value:
        return
    try:
        commands.abs_path(value)
    except commands.InvalidValue as exc:
        raise ValidationError(f"The authorized_keys file {exc.reason}.",
                              code="authorized_keys_file") from None
