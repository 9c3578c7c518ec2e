"""SSH to managed hosts: the one module through which every remote command goes.

Strict by design (ARCHITECTURE.md, "Commands"): only the pinned host key is
accepted, no agent and no key search, timeouts on every phase, an overall
deadline per command enforced here and on the host, output drained so a chatty
command cannot stall and kept up to a limit so a runaway one cannot exhaust the
worker's memory, one connection per host reused within a worker, and every
command logged once, with secrets redacted, and offered to `command_observer`.

    run = session(target)          # a shell.Runner
    run(cmd("zfs", "list", "-H"))  # -> Result, or raises an errors.RemoteError
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

import paramiko

from apps.remote import keys, signed, sudo
from apps.remote.commands import Command, script
from apps.remote.errors import (
    AuthenticationFailed,
    CommandTimeout,
    HostKeyMismatch,
    HostKeyUnknown,
    OutputTooLarge,
    SSHForbidden,
    SudoRefused,
    Unreachable,
)
from apps.remote.keys import fingerprint
from apps.remote.shell import Result

__all__ = [
    "Session", "Target", "close_all", "command_observer", "fetch_host_key", "fingerprint",
    "forbid_ssh", "session",
]

logger = logging.getLogger("pozol.remote")

CONNECT_TIMEOUT = 10.0  # TCP connect, SSH banner, authentication, channel open: each
KEEPALIVE_INTERVAL = 30  # seconds between SSH keepalives on an idle pooled connection
KILL_GRACE = 5  # seconds the host's `timeout` waits after TERM before it sends KILL
# The host's own timer is a backstop for a lost connection; it fires a little
# after ours so that the local deadline normally wins and reports CommandTimeout.
REMOTE_SLACK = 2
STDERR_LOG_LIMIT = 2000
_CHUNK = 64 * 1024
# Bytes kept of each of a command's streams. What PoZoL reads is far smaller (a listing
# of 100,000 snapshots is about 15 MiB); a command past it is stopped, not kept: `yes`
# writes about 220 MB a second through one connection, 13 GB in a 60 s deadline.
OUTPUT_LIMIT = 64 * 2**20

command_observer: ContextVar[Callable[[str, Result], None] | None] = ContextVar(
    "command_observer", default=None
)
"""Called with (target name, Result) after every command run in this context.

The operations engine sets it around a step to copy each command into the
Operation's log. A timed-out or interrupted command is reported with exit
code -1 and whatever output arrived before it ended.
"""


@contextlib.contextmanager
def unobserved() -> Iterator[None]:
    """Commands run inside are not offered to `command_observer`: the caller logs
    what they did itself, in words (a detached unit started, say)."""
    token = command_observer.set(None)
    try:
        yield
    finally:
        command_observer.reset(token)


@dataclass(frozen=True)
class Target:
    """Where and as whom to connect. `host_key` is the pinned public key line."""

    name: str
    address: str
    port: int
    user: str
    private_key: str = field(repr=False)
    host_key: str | None = None
    trust_on_first_use: bool = False

    @property
    def where(self) -> str:
        return _where(self.address, self.port)


# --- The web guard -------------------------------------------------------------

_forbidden_because: str | None = None


def forbid_ssh(reason: str) -> None:
    """Refuse every SSH connection from this process from now on (the web process)."""
    global _forbidden_because
    _forbidden_because = reason


def _refuse_if_forbidden() -> None:
    if _forbidden_because is not None:
        raise SSHForbidden(f"SSH is forbidden in this process: {_forbidden_because}")
    if os.environ.get("POZOL_FORBID_SSH") == "1":
        raise SSHForbidden("SSH is forbidden in this process: POZOL_FORBID_SSH=1")


# --- Running commands ----------------------------------------------------------


class Session:
    """Runs commands on one target over a pooled connection; a `shell.Runner`."""

    def __init__(self, target: Target, *, connect_timeout: float = CONNECT_TIMEOUT) -> None:
        self.target = target
        self.connect_timeout = connect_timeout

    def __call__(
        self, command: Command, *, timeout: float = 60.0, check: bool = True,
        stdin: bytes | None = None,
    ) -> Result:
        started = time.monotonic()
        stdin = command.stdin if stdin is None else stdin
        outcome = self._run(command, stdin, deadline=started + timeout)
        result = _result(command, outcome, time.monotonic() - started)
        _record(self.target, result, outcome, timeout)
        if command.shown is not None and logger.isEnabledFor(logging.DEBUG):
            # The log says what the command does; the wrapper that does it is here.
            logger.debug("%s: `%s` ran as: %s", self.target.name, result.command,
                         command.redacted_text())
        if outcome.timed_out:
            raise CommandTimeout(
                f"{self.target.name}: `{result.command}` did not finish within {timeout:g} s"
            )
        if outcome.too_large:
            raise OutputTooLarge(
                f"{self.target.name}: `{result.command}` wrote more than "
                f"{OUTPUT_LIMIT // 2**20} MiB to one stream, more than PoZoL keeps: it was "
                "stopped and its output not used")
        if outcome.lost:
            raise Unreachable(
                f"{self.target.name}: connection to {self.target.where} was lost while "
                f"running `{result.command}`; it may or may not have completed"
            )
        self._refuse_if_sudo_refused(command, result)
        return result.check() if check else result

    def _run(self, command: Command, stdin: bytes | None, *, deadline: float) -> _Outcome:
        channel = _open_channel(self.target, self.connect_timeout)
        remote_deadline = math.ceil(_remaining(deadline)) + REMOTE_SLACK
        try:
            with _mapped_errors(self.target.where, self.connect_timeout):
                wrapped = _with_remote_deadline(command, remote_deadline, self.target.user,
                                                sign=self._sign)
                return _exchange(channel, wrapped, stdin, deadline=deadline)
        finally:
            channel.close()

    def _refuse_if_sudo_refused(self, command: Command, result: Result) -> None:
        """sudo would not run it: say so whatever `check` asked, since the command
        itself never ran (a bundle read with check=False would otherwise look empty)."""
        login = self.target.user
        if login == sudo.ROOT or command.as_login or result.exit_code not in (
                1, 127, signed.REFUSED_STATUS):
            return
        words = sudo.refusal(result.stderr)
        if words is None:
            return
        needed = sudo.route(command)
        rule = needed.rule if needed.rule != "cluster" else f"cluster:{needed.user}"
        raise SudoRefused(
            f"{self.target.name}: sudo refused `{result.command}` for {login} ({words}); "
            f"PoZoL needs its sudoers rule {rule!r} on this host (see the host's sudoers "
            "file and helper: GET /api/hosts/<id>/sudoers/)", rule=rule)

    def _sign(self, text: str, seconds: int) -> signed.Signed:
        """A signature the host's helper takes for `text`: made with the host's own key,
        for the host key this connection was made to (pinned, or being pinned)."""
        return signed.sign_script(_private_key(self.target), text,
                                  host=self.host_key_fingerprint, seconds=seconds)

    @property
    def host_key(self) -> str:
        """The key the host presented ("type base64"), for storing after TOFU."""
        client = _pooled(self.target, self.connect_timeout)
        return keys.public_line(client.get_transport().get_remote_server_key())

    @property
    def host_key_fingerprint(self) -> str:
        return fingerprint(self.host_key)


def session(target: Target, *, connect_timeout: float = CONNECT_TIMEOUT) -> Session:
    return Session(target, connect_timeout=connect_timeout)


@dataclass
class _Outcome:
    exit_code: int | None  # None: no exit status (deadline, lost connection, signal)
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    lost: bool = False
    too_large: bool = False  # a stream outgrew OUTPUT_LIMIT: stopped there


# sshd gives non-login sessions a PATH without the sbin directories, where zfs,
# zpool and sysctl live on most distributions; name them for every command.
REMOTE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _with_remote_deadline(command: Command, seconds: int, login: str = sudo.ROOT, *,
                          sign: sudo.Signer | None = None) -> Command:
    # The command runs under `sh -c`, so templates are written for POSIX sh. LC_ALL=C:
    # parsers read English text (zpool status's scan line, psql's errors) whatever
    # locale the login sets; a prefix, because sshd passes client env only by AcceptEnv.
    # A login other than root runs it through sudo (apps.remote.sudo), unless it is
    # one of the few commands asked of the login itself.
    if login != sudo.ROOT and not command.as_login:
        if sign is None:
            raise AssertionError("a login other than root needs a signer")
        return sudo.wrap(command, path=REMOTE_PATH, grace=KILL_GRACE, seconds=seconds,
                         sign=sign)
    return script("PATH={path} LC_ALL=C timeout -k {grace} {seconds} sh -c {text}",
                  path=REMOTE_PATH, grace=KILL_GRACE, seconds=seconds, text=command.text)


def _exchange(
    channel: paramiko.Channel, command: Command, stdin: bytes | None, *, deadline: float
) -> _Outcome:
    """Run `command` on `channel`, draining both streams, until it ends, the deadline,
    or a stream outgrows OUTPUT_LIMIT."""
    channel.exec_command(command.text)
    stdout: list[bytes] = []
    stderr: list[bytes] = []
    too_large = threading.Event()
    # Both streams are read concurrently: a command filling one stream's window
    # while we wait on the other (or on the exit status) would block forever.
    readers = [_in_thread(_drain, channel.recv, stdout, too_large),
               _in_thread(_drain, channel.recv_stderr, stderr, too_large)]
    _in_thread(_feed, channel, stdin)
    _wait_for(readers, too_large, deadline)
    # Read once: a reader may still cross the limit while the channel closes below, and
    # the outcome must be one of "too large" and "timed out", never both.
    stopped = too_large.is_set()
    finished = not stopped and not any(r.is_alive() for r in readers)
    if finished and channel.status_event.wait(_remaining(deadline)):
        code = channel.exit_status if channel.exit_status >= 0 else None
        lost = code is None and not channel.get_transport().is_active()
        return _Outcome(code, b"".join(stdout), b"".join(stderr), lost=lost)
    # Wakes the readers. The host's command loses its streams (a writer gets SIGPIPE),
    # and its `timeout` ends whatever still runs.
    channel.close()
    return _Outcome(None, b"".join(stdout), b"".join(stderr),
                    timed_out=not stopped, too_large=stopped)


def _wait_for(readers: list[threading.Thread], too_large: threading.Event,
              deadline: float) -> None:
    """Until both streams have ended, one is too large, or the deadline has passed."""
    while not too_large.is_set() and (left := _remaining(deadline)) > 0:
        alive = [r for r in readers if r.is_alive()]
        if not alive:
            return
        # Not one long join: the other stream may be the one that grows too large.
        alive[0].join(min(left, 0.1))


def _drain(read: Callable[[int], bytes], sink: list[bytes], too_large: threading.Event) -> None:
    kept = 0
    while chunk := read(_CHUNK):
        kept += len(chunk)
        if kept > OUTPUT_LIMIT:
            too_large.set()
            return
        sink.append(chunk)


def _feed(channel: paramiko.Channel, data: bytes | None) -> None:
    # In its own thread: a command that does not read its input must not be
    # able to stall us past the deadline on a full window.
    with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
        if data:
            channel.sendall(data)
        channel.shutdown_write()  # EOF, so a command reading stdin does not wait for more


def _in_thread(target: Callable[..., None], *args: object) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def _remaining(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


def _result(command: Command, outcome: _Outcome, duration: float) -> Result:
    def shown(data: bytes) -> str:
        return _redact(data.decode("utf-8", errors="replace"), command.secrets)

    exit_code = -1 if outcome.exit_code is None else outcome.exit_code
    return Result(command.redacted(), exit_code, shown(outcome.stdout), shown(outcome.stderr),
                  round(duration, 3))


def _redact(text: str, secrets: tuple[str, ...]) -> str:
    # A command may echo a secret back (an error quoting its arguments, say).
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


# --- The one logging point -----------------------------------------------------


def _record(target: Target, result: Result, outcome: _Outcome, timeout: float) -> None:
    if outcome.timed_out:
        ending = f"timed out after {timeout:g} s"
    elif outcome.too_large:
        ending = f"stopped: output over {OUTPUT_LIMIT // 2**20} MiB"
    elif outcome.lost:
        ending = "connection lost"
    elif outcome.exit_code is None:
        ending = "ended without an exit status (killed by a signal?)"
    else:
        ending = f"exit {result.exit_code}"
    stderr = _trim(result.stderr)
    logger.log(
        logging.INFO if outcome.exit_code is not None else logging.WARNING,
        "%s: `%s` %s in %.2f s%s", target.name, result.command, ending, result.duration,
        f"; stderr: {stderr}" if stderr else "",
        extra={"host": target.name, "command": result.command, "exit_code": result.exit_code,
               "duration": result.duration, "stderr": stderr},
    )
    _notify_observer(target, result)


def _notify_observer(target: Target, result: Result) -> None:
    observer = command_observer.get()
    if observer is None:
        return
    try:
        observer(target.name, result)
    except Exception:
        # The command has already run on the host; failing the caller over a
        # bookkeeping error would report a failure for work that was done.
        logger.exception("command observer failed for %s: `%s`", target.name, result.command)


def _trim(text: str, limit: int = STDERR_LOG_LIMIT) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


# --- Connections: pinning, errors, pool ----------------------------------------

_pool: dict[tuple[object, ...], paramiko.SSHClient] = {}
_pool_lock = threading.Lock()


def close_all() -> None:
    """Close every pooled connection (tests, worker shutdown)."""
    with _pool_lock:
        clients = list(_pool.values())
        _pool.clear()
    for client in clients:
        client.close()


def _forget_pool_in_child() -> None:
    # A forked worker must not talk over its parent's sockets; dropping the
    # objects without closing them leaves the parent's connections intact.
    global _pool_lock
    _pool.clear()
    _pool_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_in_child)


def _identity(target: Target) -> tuple[object, ...]:
    key = _private_key(target)
    return (target.address, target.port, target.user, key.fingerprint, target.host_key,
            target.trust_on_first_use)


def _pooled(target: Target, connect_timeout: float) -> paramiko.SSHClient:
    _refuse_if_forbidden()
    key = _identity(target)
    with _pool_lock:
        client = _pool.get(key)
    if client is not None and _alive(client):
        return client
    _discard(key, client)
    fresh = _connect(target, connect_timeout)
    with _pool_lock:
        pooled = _pool.setdefault(key, fresh)
    if pooled is not fresh:  # another thread connected meanwhile: keep one
        fresh.close()
    return pooled


def _open_channel(target: Target, connect_timeout: float) -> paramiko.Channel:
    client = _pooled(target, connect_timeout)
    try:
        return client.get_transport().open_session(timeout=connect_timeout)
    except (paramiko.SSHException, OSError, EOFError):
        # A pooled transport can die unnoticed (host rebooted, NAT state gone).
        # Nothing has started on it yet, so reconnecting once is safe.
        _discard(_identity(target), client)
    client = _pooled(target, connect_timeout)
    with _mapped_errors(target.where, connect_timeout):
        return client.get_transport().open_session(timeout=connect_timeout)


def _alive(client: paramiko.SSHClient) -> bool:
    transport = client.get_transport()
    return transport is not None and transport.is_active()


def _discard(key: tuple[object, ...], client: paramiko.SSHClient | None) -> None:
    if client is None:
        return
    with _pool_lock:
        if _pool.get(key) is client:
            del _pool[key]
    client.close()


def _connect(target: Target, timeout: float) -> paramiko.SSHClient:
    client = paramiko.SSHClient()  # starts with empty host keys: nothing from known_hosts
    _pin_host_key(client, target)
    try:
        with _mapped_errors(target.where, timeout, user=target.user):
            client.connect(
                target.address, target.port, username=target.user, pkey=_private_key(target),
                sock=_open_socket(target.address, target.port, timeout),
                timeout=_handshake_timeout(timeout), banner_timeout=timeout, auth_timeout=timeout,
                channel_timeout=timeout, allow_agent=False, look_for_keys=False,
            )
    except BaseException:
        client.close()  # also stops the transport thread and closes the socket
        raise
    client.get_transport().set_keepalive(KEEPALIVE_INTERVAL)
    return client


def _handshake_timeout(timeout: float) -> float:
    # The handshake includes waiting for the banner; give it room so that a
    # silent port fails with the banner's clearer error, not a generic one.
    return 2 * timeout


def _pin_host_key(client: paramiko.SSHClient, target: Target) -> None:
    if target.host_key is None:
        policy = _TrustOnFirstUse if target.trust_on_first_use else _RefuseUnknown
        client.set_missing_host_key_policy(policy(target.where))
        return
    pinned = keys.public_key_of(target.host_key)
    client.get_host_keys().add(_known_hosts_name(target), pinned.get_name(), pinned)
    client.set_missing_host_key_policy(paramiko.RejectPolicy())


def _known_hosts_name(target: Target) -> str:
    # The name paramiko looks the host up by (known_hosts convention).
    return target.address if target.port == 22 else f"[{target.address}]:{target.port}"


class _RefuseUnknown(paramiko.RejectPolicy):
    def __init__(self, where: str) -> None:
        self.where = where

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str,
                         key: paramiko.PKey) -> None:
        raise HostKeyUnknown(
            f"{self.where} presented host key {key.get_name()} {fingerprint(key)}, but no key "
            "is pinned for it; confirm the fingerprint and pin it before connecting"
        )


class _TrustOnFirstUse(paramiko.MissingHostKeyPolicy):
    """Accept the presented key; the caller reads `Session.host_key` and pins it."""

    def __init__(self, where: str) -> None:
        self.where = where

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str,
                         key: paramiko.PKey) -> None:
        logger.warning("trusting %s on first use: host key %s %s", self.where, key.get_name(),
                       fingerprint(key))


@functools.lru_cache(maxsize=64)
def _load_key(private_text: str) -> paramiko.PKey:
    return keys.load_private_key(private_text)


def _private_key(target: Target) -> paramiko.PKey:
    try:
        return _load_key(target.private_key)
    except keys.InvalidKey as exc:
        raise AuthenticationFailed(
            f"{target.name}: the private key stored for this host is unusable: {exc}"
        ) from None


def _open_socket(address: str, port: int, timeout: float) -> socket.socket:
    sock = socket.create_connection((address, port), timeout=timeout)
    # paramiko's keepalive does not wait for replies; TCP keepalive is what
    # notices a peer that vanished, so a pooled connection is not trusted forever.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    # A command is a few small packets each way. With Nagle's algorithm on, one sent
    # while the last is unacknowledged waits for the host's delayed ACK (40 ms on
    # Linux): every command took about 50 ms on loopback, against 5 ms without it.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for option, value in (("TCP_KEEPIDLE", 60), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, option):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)
    return sock


@contextlib.contextmanager
def _mapped_errors(where: str, timeout: float, *, user: str | None = None) -> Iterator[None]:
    """Turn socket and paramiko exceptions into errors an operator can act on."""
    try:
        yield
    except paramiko.BadHostKeyException as exc:
        expected, presented = fingerprint(exc.expected_key), fingerprint(exc.key)
        raise HostKeyMismatch(
            f"host key of {where} CHANGED: pinned {expected}, presented {presented}. "
            "Refusing to connect; if the host was reinstalled, confirm and pin the new key",
            expected=expected, presented=presented,
        ) from None
    except paramiko.AuthenticationException as exc:
        raise AuthenticationFailed(
            f"{user}@{where} refused our key: {exc}; is PoZoL's public key in "
            f"~{user}/.ssh/authorized_keys?"
        ) from None
    except paramiko.SSHException as exc:
        raise Unreachable(f"cannot reach {where}: {_ssh_reason(exc, timeout)}") from None
    except EOFError:
        raise Unreachable(f"cannot reach {where}: the server closed the connection") from None
    except TimeoutError:
        raise Unreachable(f"cannot reach {where}: timed out after {timeout:g} s") from None
    except OSError as exc:
        raise Unreachable(f"cannot reach {where}: {_socket_reason(exc)}") from None


def _ssh_reason(exc: paramiko.SSHException, timeout: float) -> str:
    text = str(exc)
    if "banner" in text.lower():
        return f"no SSH banner within {timeout:g} s (is an SSH server listening there?)"
    return f"SSH error: {text}"


def _socket_reason(exc: OSError) -> str:
    if isinstance(exc, socket.gaierror):
        return f"name does not resolve ({exc.strerror})"
    if exc.errno is not None:
        return os.strerror(exc.errno).lower()
    return str(exc) or type(exc).__name__


def _where(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


# --- Adding a host -------------------------------------------------------------


def fetch_host_key(address: str, port: int = 22,
                   timeout: float = CONNECT_TIMEOUT) -> tuple[str, str]:
    """The host's public key line and fingerprint, read without authenticating.

    For the "confirm this fingerprint" step of adding a host: nothing is trusted
    here, the operator compares the fingerprint with the host's own.
    """
    _refuse_if_forbidden()
    where = _where(address, port)
    with _mapped_errors(where, timeout):
        transport = paramiko.Transport(_open_socket(address, port, timeout))
        try:
            transport.banner_timeout = timeout
            transport.start_client(timeout=_handshake_timeout(timeout))
            key = transport.get_remote_server_key()
        finally:
            transport.close()
    return keys.public_line(key), fingerprint(key)
