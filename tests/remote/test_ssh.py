"""apps.remote.ssh against a real, throwaway OpenSSH server on 127.0.98.1."""

from __future__ import annotations

import logging
import socket
import threading
from pathlib import Path

import pytest

from apps.remote import ssh
from apps.remote.commands import cmd, script
from apps.remote.errors import (
    AuthenticationFailed,
    CommandFailed,
    CommandTimeout,
    HostKeyMismatch,
    HostKeyUnknown,
    OutputTooLarge,
    SSHForbidden,
    Unreachable,
)
from apps.remote.keys import fingerprint, generate_keypair
from apps.remote.shell import Result
from tests.remote.sshd import ADDRESS, Sshd, free_port, running_sshd
from tests.waiting import raised_within, wait_until

pytestmark = pytest.mark.ssh


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    with running_sshd(tmp_path_factory.mktemp("sshd")) as sshd:
        yield sshd


@pytest.fixture(autouse=True)
def fresh_pool():
    ssh.close_all()
    yield
    ssh.close_all()


def connection_of(run: ssh.Session) -> str:
    """The client side of the TCP connection a command arrived on, as sshd saw it."""
    return run(script('echo "$SSH_CONNECTION"')).stdout.split()[1]


# --- Running commands ----------------------------------------------------------


def test_command_returns_stdout_stderr_and_exit_code(server: Sshd):
    result = ssh.session(server.target())(
        script("echo out; echo err >&2; exit 3"), check=False
    )

    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert result.command == "echo out; echo err >&2; exit 3"
    assert result.duration > 0


def test_non_zero_exit_raises_when_checked(server: Sshd):
    with pytest.raises(CommandFailed) as failure:
        ssh.session(server.target())(script("echo broken >&2; exit 2"))

    assert failure.value.result.exit_code == 2
    assert "broken" in str(failure.value)


def test_stdin_reaches_the_command(server: Sshd):
    result = ssh.session(server.target())(cmd("wc", "-c"), stdin=b"x" * 100_000)

    assert result.stdout.strip() == "100000"


def test_command_without_stdin_sees_end_of_file(server: Sshd):
    assert ssh.session(server.target())(cmd("cat"), timeout=5).stdout == ""


def test_large_output_on_both_streams_does_not_hang(server: Sshd):
    five_mb = 5_000_000
    result = ssh.session(server.target())(
        script("head -c {n} /dev/zero | tr '\\0' o & head -c {n} /dev/zero | tr '\\0' e >&2; "
               "wait", n=five_mb),
        timeout=60,
    )

    assert len(result.stdout) == five_mb and set(result.stdout) == {"o"}
    assert len(result.stderr) == five_mb and set(result.stderr) == {"e"}


def test_overall_deadline_fires_and_the_remote_command_dies_too(server: Sshd):
    run = ssh.session(server.target())
    run(cmd("true"))  # connect first: the deadline is the command's, not the handshake's

    error = raised_within(4, lambda: run(cmd("sleep", "29.125"), timeout=2))

    assert isinstance(error, CommandTimeout) and "within 2 s" in str(error)
    # The host's own timer (2 s + slack) ends it even though we just hung up.
    assert wait_until(lambda: "sleep 29.125" not in run(cmd("ps", "-eo", "args")).stdout, 15)


def test_deadline_holds_against_a_command_that_never_stops_talking(server: Sshd):
    run = ssh.session(server.target())
    run(cmd("true"))
    talker = script("while :; do echo still talking; sleep 0.001; done")

    assert isinstance(raised_within(10, lambda: run(talker, timeout=2)), CommandTimeout)


def test_a_flood_of_output_is_stopped_at_the_limit_not_kept(server: Sshd, caplog):
    run = ssh.session(server.target())
    run(cmd("true"))

    # `yes` writes about 220 MB a second: 13 GB kept by a 60 s deadline before the limit.
    error = raised_within(30, lambda: run(cmd("yes", "pozol-flood"), timeout=60))

    assert isinstance(error, OutputTooLarge) and error.code == "output_too_large"
    assert "more than 64 MiB" in str(error)
    assert "`yes pozol-flood` stopped: output over 64 MiB" in caplog.text
    # Stopped on the host too (its stream closed), long before its own 60 s timer.
    assert wait_until(lambda: "yes pozol-flood" not in run(cmd("ps", "-eo", "args")).stdout, 15)
    assert run(cmd("echo", "still usable")).stdout == "still usable\n"


# --- Host keys -----------------------------------------------------------------


def test_pinned_key_must_match(server: Sshd):
    wrong = generate_keypair("someone else")[1]

    with pytest.raises(HostKeyMismatch) as refused:
        ssh.session(server.target(host_key=wrong))(cmd("true"))

    assert refused.value.expected == fingerprint(wrong)
    assert refused.value.presented == fingerprint(server.host_key)
    assert refused.value.code == "host_key_changed"
    assert fingerprint(server.host_key) in str(refused.value)


def test_reinstalled_host_with_a_new_key_is_refused(tmp_path: Path):
    with running_sshd(tmp_path / "before") as before:
        target = before.target()
        assert ssh.session(target)(cmd("true")).ok
    ssh.close_all()

    with running_sshd(tmp_path / "after", port=before.port, client_key=before.client_key) as after:
        assert after.host_key != before.host_key
        with pytest.raises(HostKeyMismatch):
            ssh.session(target)(cmd("true"))


def test_unknown_host_key_is_refused_without_trust_on_first_use(server: Sshd):
    with pytest.raises(HostKeyUnknown) as refused:
        ssh.session(server.target(host_key=None))(cmd("true"))

    assert fingerprint(server.host_key) in str(refused.value)
    assert str(refused.value).startswith(f"{server.address}:{server.port} presented host key")


def test_trust_on_first_use_accepts_and_reports_the_key(server: Sshd):
    run = ssh.session(server.target(host_key=None, trust_on_first_use=True))

    assert run(cmd("true")).ok
    assert run.host_key == server.host_key
    assert run.host_key_fingerprint == fingerprint(server.host_key)


def test_fetch_host_key_reads_the_key_without_logging_in(server: Sshd):
    line, seen = ssh.fetch_host_key(server.address, server.port, timeout=5)

    assert line == server.host_key
    assert seen == fingerprint(server.host_key)
    assert seen.startswith("SHA256:") and not seen.endswith("=")


# --- Refusals and unreachable hosts ---------------------------------------------


def test_wrong_client_key_fails_authentication(server: Sshd):
    stranger = generate_keypair("stranger")[0]

    with pytest.raises(AuthenticationFailed, match="refused our key"):
        ssh.session(server.target(private_key=stranger))(cmd("true"))


def test_unusable_private_key_is_an_authentication_failure(server: Sshd):
    with pytest.raises(AuthenticationFailed, match="unusable"):
        ssh.session(server.target(private_key="not a key"))(cmd("true"))


def test_nothing_listening_is_unreachable_quickly(server: Sshd):
    port = free_port()

    refused = raised_within(2, lambda: ssh.session(server.target(port=port))(cmd("true")))

    assert isinstance(refused, Unreachable)
    assert str(refused) == f"cannot reach {ADDRESS}:{port}: connection refused"


def test_a_silent_listener_is_unreachable_after_the_banner_timeout(server: Sshd):
    with socket.socket() as silent:
        silent.bind((ADDRESS, 0))
        silent.listen()
        port = silent.getsockname()[1]
        with pytest.raises(Unreachable, match="no SSH banner within 1 s"):
            ssh.session(server.target(port=port), connect_timeout=1)(cmd("true"))


def test_forbid_ssh_blocks_connecting(server: Sshd, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(ssh, "_forbidden_because", None)
    ssh.forbid_ssh("the web process never opens SSH")

    with pytest.raises(SSHForbidden, match="the web process never opens SSH"):
        ssh.session(server.target())(cmd("true"))
    with pytest.raises(SSHForbidden):
        ssh.fetch_host_key(server.address, server.port)


def test_environment_variable_forbids_ssh(server: Sshd, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("POZOL_FORBID_SSH", "1")

    with pytest.raises(SSHForbidden, match="POZOL_FORBID_SSH"):
        ssh.session(server.target())(cmd("true"))


# --- Hostile values --------------------------------------------------------------

HOSTILE = [
    "; rm -rf /", "; touch {marker}", "$(touch {marker})", "`touch {marker}`",
    "| touch {marker}", "&& touch {marker}", "\ntouch {marker}\n", "' ; touch {marker}; '",
    '" ; touch {marker}; "', "\\", "it's", 'say "hi"', "two words", "  padded  ", "..",
    "../../etc/passwd", "-n", "--help", "-", "*", "~", "$HOME", "${IFS}", "%s%n%d", "",
    "tab\there", "line\nbreak", "unicode ü 日本語 🐘", "a\\nb", "!!", "#comment",
]


@pytest.mark.parametrize("template", HOSTILE)
def test_hostile_values_arrive_verbatim_as_one_argument(
    server: Sshd, tmp_path: Path, template: str
):
    marker = tmp_path / "pwned"
    value = template.replace("{marker}", str(marker))

    result = ssh.session(server.target())(cmd("printf", "[%s]", value))

    assert result.stdout == f"[{value}]"  # two arguments would print "[a][b]"
    assert not marker.exists()


def test_every_command_runs_in_the_c_locale_whatever_the_login_sets(tmp_path: Path):
    # A host whose logins get a German locale (Debian's pam_env /etc/default/locale):
    # the parsers read zpool status and psql in English, so every command runs under C.
    german = "LANG=de_DE.UTF-8 LC_ALL=de_DE.UTF-8 LC_TIME=de_DE.UTF-8"
    with running_sshd(tmp_path / "sshd", login_env=german) as host:
        run = ssh.session(host.target())
        login = run(script('printf "%s|%s|%s" "$LANG" "$LC_TIME" "$LC_ALL"'))
        shell = run(cmd("sh", "-c", 'printf "%s" "$LC_ALL"'))
    assert login.stdout == "de_DE.UTF-8|de_DE.UTF-8|C"  # LC_ALL overrides the other two
    assert shell.stdout == "C"  # and the commands a command starts inherit it
    assert login.command == 'printf "%s|%s|%s" "$LANG" "$LC_TIME" "$LC_ALL"'  # log: as asked


# --- Logging and the command observer --------------------------------------------


def test_every_command_reaches_the_observer_and_the_log_redacted(
    server: Sshd, caplog: pytest.LogCaptureFixture
):
    seen: list[tuple[str, Result]] = []
    token = ssh.command_observer.set(lambda host, result: seen.append((host, result)))
    caplog.set_level(logging.DEBUG)
    try:
        run = ssh.session(server.target())
        run(cmd("echo", "s3cret-pw", secrets=("s3cret-pw",)))
        run(script("echo {pw} >&2; exit 4", pw="s3cret-pw", secrets=("s3cret-pw",)),
            check=False)
    finally:
        ssh.command_observer.reset(token)

    assert [(host, r.command, r.exit_code) for host, r in seen] == [
        ("testhost", "echo ***", 0), ("testhost", "echo *** >&2; exit 4", 4),
    ]
    assert seen[0][1].stdout == "***\n" and seen[1][1].stderr == "***\n"
    records = [r for r in caplog.records if r.name == "pozol.remote"]
    assert [(r.host, r.command, r.exit_code) for r in records] == [
        ("testhost", "echo ***", 0), ("testhost", "echo *** >&2; exit 4", 4),
    ]
    assert "stderr: ***" in records[1].getMessage()
    assert "s3cret-pw" not in caplog.text
    assert "PRIVATE KEY" not in caplog.text and server.client_key not in caplog.text


def test_a_shown_command_keeps_its_full_text_for_the_debug_log_only(
    server: Sshd, caplog: pytest.LogCaptureFixture
):
    seen: list[Result] = []
    token = ssh.command_observer.set(lambda host, result: seen.append(result))
    caplog.set_level(logging.DEBUG, logger="pozol.remote")
    try:
        run = ssh.session(server.target())
        run(script("sh -c {inner} sh {pw}", inner='echo "$1" > /dev/null', pw="s3cret-pw",
                   secrets=("s3cret-pw",), shown="check the password s3cret-pw"))
        with ssh.unobserved():
            run(cmd("true"))
    finally:
        ssh.command_observer.reset(token)

    assert [r.command for r in seen] == ["check the password ***"]  # `true` went unobserved
    debug = [r.getMessage() for r in caplog.records
             if r.name == "pozol.remote" and r.levelno == logging.DEBUG]
    assert debug == ["testhost: `check the password ***` ran as: "
                     "sh -c 'echo \"$1\" > /dev/null' sh ***"]
    assert "s3cret-pw" not in caplog.text


def test_a_timed_out_command_is_still_observed(server: Sshd):
    seen: list[Result] = []
    token = ssh.command_observer.set(lambda host, result: seen.append(result))
    try:
        with pytest.raises(CommandTimeout):
            # Long enough for a loaded machine to connect and see "started" first.
            ssh.session(server.target())(script("echo started; sleep 10"), timeout=4)
    finally:
        ssh.command_observer.reset(token)

    assert [(r.exit_code, r.stdout) for r in seen] == [(-1, "started\n")]


def test_a_failing_observer_does_not_fail_the_command(server: Sshd):
    def broken(host: str, result: Result) -> None:
        raise RuntimeError("log table is gone")

    token = ssh.command_observer.set(broken)
    try:
        assert ssh.session(server.target())(cmd("true")).ok
    finally:
        ssh.command_observer.reset(token)


def test_target_repr_never_shows_the_private_key(server: Sshd):
    assert server.client_key not in repr(server.target())


# --- Connection reuse ------------------------------------------------------------


def test_commands_share_one_connection_until_close_all(server: Sshd):
    run = ssh.session(server.target())

    first, second = connection_of(run), connection_of(ssh.session(server.target()))
    ssh.close_all()
    third = connection_of(run)

    assert first == second
    assert third != first


def test_the_connection_sends_small_packets_at_once(server: Sshd):
    run = ssh.session(server.target())
    run(cmd("true"))

    sock = ssh._pooled(server.target(), ssh.CONNECT_TIMEOUT).get_transport().sock

    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_a_dead_pooled_connection_is_replaced_once(server: Sshd):
    run = ssh.session(server.target())
    before = connection_of(run)
    clients = list(ssh._pool.values())
    for client in clients:  # the transport dies behind the pool's back
        client.get_transport().sock.close()
    assert wait_until(lambda: not any(c.get_transport().is_active() for c in clients), 5)

    assert connection_of(run) != before


def test_a_connection_lost_mid_command_is_unreachable_not_a_failure(server: Sshd):
    run = ssh.session(server.target())
    run(cmd("true"))
    (client,) = ssh._pool.values()
    threading.Timer(0.5, client.get_transport().sock.close).start()

    with pytest.raises(Unreachable, match="lost while running `sleep 5`"):
        run(cmd("sleep", "5"), timeout=10)


def test_concurrent_commands_on_one_host(server: Sshd):
    run = ssh.session(server.target())
    results: list[str] = []

    def work(n: int) -> None:
        results.append(run(cmd("echo", n)).stdout.strip())

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert sorted(results, key=int) == [str(n) for n in range(8)]
