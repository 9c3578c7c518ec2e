"""Commands a replication plan runs, and the restricted key that lets it receive.

All values pass apps.remote.commands (validated, then shlex-quoted); templates
are literals here. Nothing is run.

The data path: the SOURCE host runs, detached (apps.remote.detached, so a
worker dying does not stop it),

    { zfs send [-p] [-w | -c -L] [-I|-i from] snap || echo "pozol: zfs send failed ($?)" >&2; }
      | <counter> [| <limiter>] | ssh -i KEY -o ... user@target pozol-recv target/ds

`/bin/sh` on Debian is dash, which has no `pipefail`: a failed send shows as
the marker line in the unit's stderr (send_failed() finds it); the pipeline's
status is the receive's, which fails too on a cut stream.

Counter and limiter: `pv -n -b -i 1 [-L rate]` where pv is installed (one
process counts and limits); else GNU `dd bs=1M status=progress` only counts
(LC_ALL=C so its line parses), and `mbuffer -q -r rate` limits where installed.
With neither pv nor mbuffer the planner says the limit cannot be applied.

The restricted key. The source reaches the target over SSH with a key PoZoL
made for this link; its line in the target's authorized_keys is

    restrict,command="/bin/sh -c '<wrapper>'" ssh-ed25519 AAAA... pozol-link-<name>

`restrict` turns off forwarding, pty, X11 and agent; sshd runs the forced
command instead of whatever the client asked, and puts the client's words in
SSH_ORIGINAL_COMMAND. The client asks `pozol-recv <target dataset>`; the
wrapper (one line, no quotes of its own in the key file) accepts only that
shape, only for the datasets of this link, only with ZFS name characters,
turns off globbing and never evals: it then execs `zfs recv` with flags fixed
when the key was made (-s, -u, -o readonly=on, -o canmount=noauto,
-x mountpoint where the target supports them). -F is never among them, so the
key cannot roll back, destroy or write anywhere else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from apps.remote.commands import (
    Command,
    InvalidValue,
    abs_path,
    cmd,
    dataset_name,
    integer,
    os_user,
    quote,
    script,
    snapshot_name,
)
from apps.remote.signed import HELPER_PATH, standing_name
from apps.replication.core.capabilities import ReplicationCapabilities
from apps.replication.core.link import Link, ReplicationError
from apps.replication.core.planner import Send, Step, StepKind

RECV_VERB = "pozol-recv"
SEND_FAILED = "pozol: zfs send failed"
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}\Z|\[?[0-9A-Fa-f:.]{2,45}\]?\Z")
_TOKEN = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]{0,16383}\Z")
_KEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
              "ecdsa-sha2-nistp521", "ssh-rsa")
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}\Z")


@dataclass(frozen=True)
class Endpoint:
    """How the source reaches the target: all paths are on the SOURCE host."""

    host: str
    key_path: str  # the link's private key
    known_hosts_path: str  # the target's pinned host key
    user: str = "root"
    port: int = 22

    def __post_init__(self) -> None:
        if not isinstance(self.host, str) or not _HOST.match(self.host):
            raise ReplicationError("host", f"Not a host name or address: {self.host!r}.")
        for name in ("key_path", "known_hosts_path"):
            try:
                abs_path(getattr(self, name))
            except InvalidValue as error:
                raise ReplicationError(name, f"Bad path: {error.reason}.") from None
        try:
            os_user(self.user)
            integer(self.port, minimum=1, maximum=65535)
        except InvalidValue as error:
            raise ReplicationError(error.kind, str(error)) from None


def recv_flags(caps: ReplicationCapabilities) -> list[str]:
    """The receive flags the target's wrapper fixes, by what the target supports."""
    flags = []
    if caps.resumable:
        flags.append("-s")
    if caps.recv_no_mount:
        flags.append("-u")
    if caps.recv_properties:
        flags += ["-o", "readonly=on", "-o", "canmount=noauto", "-x", "mountpoint"]
    return flags


def send_argv(send: Send) -> list[str]:
    if send.resume_token:
        return ["zfs", "send", "-t", resume_token(send.resume_token)]
    argv = ["zfs", "send"]
    if send.properties:
        argv.append("-p")
    if send.raw:
        argv.append("-w")  # implies -c and -L (streams.py)
    else:
        argv += ["-c"] * send.compressed + ["-L"] * send.large_blocks
    if send.from_snapshot:
        argv += ["-I" if send.intermediates else "-i", snapshot_name(send.from_snapshot)]
    argv.append(snapshot_name(send.snapshot))
    return argv


def estimate_command(send: Send) -> Command:
    """`zfs send -nvP ...` (OpenZFS only): prints "size\\t<bytes>" on stdout."""
    argv = send_argv(send)
    return cmd(*argv[:2], "-nvP", *argv[2:])


def pipeline(send: Send, endpoint: Endpoint, source_caps: ReplicationCapabilities,
             bandwidth_limit: int | None = None) -> Command:
    """The source-side send | count | limit | ssh pipeline, for a detached unit."""
    dataset_name(send.target)
    stages = [_counter(source_caps, bandwidth_limit)]
    if bandwidth_limit and not source_caps.pv and source_caps.mbuffer:
        stages.append(cmd("mbuffer", "-q", "-m", "64M", "-r", bandwidth_limit))
    stages.append(_ssh(endpoint, send.target))
    return script("{{ {send} || echo {failed} \"($?)\" >&2; }} | {rest}",
                  send=cmd(*send_argv(send)), failed=SEND_FAILED,
                  rest=Command(" | ".join(stage.text for stage in stages)))


def _counter(caps: ReplicationCapabilities, bandwidth_limit: int | None) -> Command:
    if caps.pv:
        limit = ("-L", bandwidth_limit) if bandwidth_limit else ()
        return cmd("pv", "-n", "-b", "-i", 1, *limit)
    return script("LC_ALL=C dd bs=1M status=progress")


def _ssh(endpoint: Endpoint, target: str) -> Command:
    return cmd("ssh", "-i", endpoint.key_path, "-p", endpoint.port,
               "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
               "-o", "StrictHostKeyChecking=yes",
               "-o", f"UserKnownHostsFile={endpoint.known_hosts_path}",
               "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4",
               "-l", endpoint.user, "--", endpoint.host.strip("[]"), RECV_VERB, target)


def send_failed(stderr: str) -> bool:
    return SEND_FAILED in stderr


def resume_token(value: object) -> str:
    if not isinstance(value, str) or not _TOKEN.match(value):
        raise ReplicationError("resume_token", "Not a receive_resume_token.")
    return value


# One line; `{...}` are filled with quoted, validated values. The script has no
# quote of its own but the double quotes around "$d", escaped for sshd below.
_WRAPPER = (
    "set -f; "
    "no() {{ echo \"pozol: refused: $1\" >&2; exit 1; }}; "
    "c=$SSH_ORIGINAL_COMMAND; "
    "case $c in {verb}\\ *) ;; *) no \"this key only runs: {verb} DATASET\";; esac; "
    "d=${{c#{verb} }}; "
    "case $d in *[!A-Za-z0-9_.:/-]*|*/|*//*) no \"bad dataset name\";; esac; "
    "case /$d in */[!A-Za-z0-9]*) no \"bad dataset name\";; esac; "
    "case $d in {allowed}) ;; *) no \"not a target of this link\";; esac; "
    "exec {receive}"
)
# A target reached as a login other than root receives through the helper's standing
# script of this link (apps.remote.signed), installed with the key: the same checks,
# run as root, so that the login itself can receive only into this link's datasets.
_STANDING_RECEIVE = """\
set -f
case $1 in {allowed}) ;; *) echo "pozol: refused: not a target of this link" >&2; exit 1;; esac
exec zfs recv {flags} "$1"
"""


def recv_wrapper(link: Link, target_caps: ReplicationCapabilities, login: str = "root") -> str:
    """The forced command's shell script, one line (see the module docstring).

    A target reached as a login other than root receives through `sudo -n pozol-run
    --standing`, the link's standing script (`standing_receive`), which checks the
    dataset again as root; the wrapper still decides which receive runs.
    """
    flags = _quoted_flags(target_caps)
    receive = (f"zfs recv {flags} \"$d\"" if os_user(login) == "root" else
               f"sudo -n {HELPER_PATH} --standing {standing_name(link.name)} \"$d\"")
    text = _WRAPPER.format(verb=RECV_VERB, allowed=_allowed(link), receive=receive)
    if "'" in text or "\\\"" in text or "\n" in text:
        raise AssertionError("the wrapper must stay one line without single quotes")
    return text


def _quoted_flags(caps: ReplicationCapabilities) -> str:
    return " ".join(quote(f) for f in recv_flags(caps))


def _allowed(link: Link) -> str:
    return "|".join(quote(dataset_name(t)) for t in link.receiving())


def standing_receive(link: Link, target_caps: ReplicationCapabilities) -> str:
    """The root-owned script a non-root target's helper runs for the link's receive."""
    return _STANDING_RECEIVE.format(allowed=_allowed(link), flags=_quoted_flags(target_caps))


def authorized_keys_line(link: Link, public_key: str,
                         target_caps: ReplicationCapabilities, login: str = "root") -> str:
    """The target's authorized_keys line for the link's key: receive only, nothing else."""
    kind, blob = _public_key(public_key)
    command = f"/bin/sh -c '{recv_wrapper(link, target_caps, login)}'".replace('"', '\\"')
    return f'restrict,command="{command}" {kind} {blob} pozol-link-{link.name}'


def _public_key(text: object) -> tuple[str, str]:
    parts = text.split() if isinstance(text, str) else []
    if len(parts) < 2 or parts[0] not in _KEY_TYPES or not _BASE64.match(parts[1]):
        raise ReplicationError("public_key", "Not an OpenSSH public key line.")
    return parts[0], parts[1]


def step_command(step: Step, link: Link, endpoint: Endpoint,
                 source_caps: ReplicationCapabilities) -> Command:
    """The command of one plan step; a SEND is the pipeline (run it detached)."""
    tag = link.hold_tag
    match step.kind:
        case StepKind.SEND if step.send is not None:
            return pipeline(step.send, endpoint, source_caps, link.bandwidth_limit)
        case StepKind.HOLD:
            return cmd("zfs", "hold", tag, snapshot_name(step.dataset))
        case StepKind.RELEASE | StepKind.RELEASE_STALE:
            return cmd("zfs", "release", tag, snapshot_name(step.dataset))
        case StepKind.ROLLBACK:
            return cmd("zfs", "rollback", "-r", snapshot_name(step.dataset))
        case StepKind.DISCARD_PARTIAL:
            return cmd("zfs", "recv", "-A", dataset_name(step.dataset))
        case StepKind.ENSURE_PARENT:
            return ensure_parent(step.dataset)
        case StepKind.FIX_PROPERTIES:
            ds = dataset_name(step.dataset)
            return script("zfs set readonly=on {ds} && zfs set canmount=noauto {ds}", ds=ds)
    raise ReplicationError("step", f"No command for step {step.kind}.")


def hold_already_there(stderr: str) -> bool:
    """`zfs hold` of a tag the snapshot already has (a re-run): not an error for us."""
    return "tag already exists" in stderr


def hold_not_there(stderr: str) -> bool:
    """`zfs release` of a tag that is gone (an earlier release did run): not an error."""
    return "no such tag" in stderr


# ---- installing and removing the link's key ----------------------------------------------

# In the SSH user's home when the host names no file: root's $HOME, or the login's own
# home from the user database (a login other than root runs this through sudo, as root,
# where $HOME is root's); a directory or file made here is the user's, for sshd reads
# it as the user. awk keeps every line but this link's.
# The new file is renamed into place: a login at that moment (an operator's, another
# link's receive) reads the old file or the new, never the empty one `cat >` left while
# it wrote. It takes the old one's owner and mode (sshd's StrictModes, and sshd reads it
# as the user); a symlink is followed, not replaced. The directory's lock puts two
# links' installs one after the other: each reads what the other wrote.
_INSTALL_KEY = """\
f={file}; [ -n "$f" ] || f="$({home})/.ssh/authorized_keys"
umask 077; d=$(dirname "$f")
[ -d "$d" ] || {{ mkdir -p "$d" && chown {owner} "$d"; }} || exit 1
[ -e "$f" ] || {{ touch "$f" && chown {owner} "$f"; }} || exit 1
f=$(readlink -f "$f") || exit 1
exec 9<"$(dirname "$f")" && flock 9 || exit 1
awk -v c={comment} '$NF != c' "$f" > "$f.pozol-tmp" || exit 1
{append}
chown --reference="$f" "$f.pozol-tmp" && chmod --reference="$f" "$f.pozol-tmp" \\
&& mv -f "$f.pozol-tmp" "$f" || exit 1
{standing}
"""
# Run by the helper as root on a non-root target (it exports POZOL_RUN_STATE): the link's
# receive as a standing script, which only root can write.
_INSTALL_STANDING = """\
[ -n "${{POZOL_RUN_STATE-}}" ] || {{ echo "pozol: not run by pozol-run" >&2; exit 1; }}
s=$POZOL_RUN_STATE/standing/{name}
mkdir -p "$POZOL_RUN_STATE/standing" && printf '%s' {text} > "$s.tmp" && mv -f "$s.tmp" "$s"
"""
_REMOVE_STANDING = \
    '[ -z "${{POZOL_RUN_STATE-}}" ] || rm -f "$POZOL_RUN_STATE/standing/"{name}'



def install_key(authorized_keys_file: str, link: Link, line: str,
                standing: str | None = None, login: str = "root") -> Command:
    """Put the link's line in the target's authorized_keys, replacing an older one; on
    a non-root target, its `standing` receive script in the helper's directory too."""
    return script(_INSTALL_KEY, file=_keys_file(authorized_keys_file), **_owner(login),
                  comment=key_comment(link.name),
                  append=script("printf '%s\\n' {line} >> \"$f.pozol-tmp\"", line=line),
                  standing=script(_INSTALL_STANDING, name=standing_name(link.name),
                                  text=standing) if standing else Command(":"),
                  shown=f"install the receive-only key of link {link.name} in "
                        f"{authorized_keys_file or '~/.ssh/authorized_keys'}")


def remove_key(authorized_keys_file: str, link_name: str, login: str = "root") -> Command:
    return script(_INSTALL_KEY, file=_keys_file(authorized_keys_file), **_owner(login),
                  comment=key_comment(link_name), append=Command(":"),
                  standing=script(_REMOVE_STANDING, name=standing_name(link_name)),
                  shown=f"remove the key of link {link_name} from "
                        f"{authorized_keys_file or '~/.ssh/authorized_keys'}")


def _owner(login: str) -> dict:
    home = (script('printf %s "$HOME"') if os_user(login) == "root" else
            script("getent passwd {login} | cut -d: -f6", login=login))
    return {"home": home, "owner": login}


def key_comment(link_name: str) -> str:
    return f"pozol-link-{link_name}"


def _keys_file(value: str) -> str:
    return abs_path(value) if value else ""


_SOURCE_FILES = """\
umask 077 && mkdir -p {dir} && cat > {key}.tmp && mv -f {key}.tmp {key} \
&& printf '%s\\n' {known} > {known_file}
"""


def link_dir(work_dir: str, link_name: str) -> str:
    return f"{abs_path(work_dir).rstrip('/')}/links/{link_name}"


def write_source_files(endpoint: Endpoint, known_hosts_line: str, private_key: str) -> Command:
    """The link's private key (from stdin, never on a command line) and the target's
    pinned host key, on the source, where the send pipeline's ssh reads them."""
    directory = endpoint.key_path.rsplit("/", 1)[0]
    return Command(script(_SOURCE_FILES, dir=abs_path(directory), key=endpoint.key_path,
                          known=known_hosts_line, known_file=endpoint.known_hosts_path).text,
                   shown=f"write the link's key and {endpoint.host}'s host key under "
                         f"{directory}", stdin=private_key.encode())


def known_hosts_line(address: str, port: int, host_key: str) -> str:
    kind, blob = _public_key(host_key)
    where = address if port == 22 else f"[{address}]:{port}"
    return f"{where} {kind} {blob}"


def ensure_parent(dataset: str) -> Command:
    """A target's parent, made if missing (readonly, never mounted); with -p, one that
    exists already is success and its properties are left as they are."""
    return cmd("zfs", "create", "-p", "-o", "readonly=on", "-o", "canmount=off",
               dataset_name(dataset))


def together(steps: Iterable[Step], tag: str) -> Command | None:
    """One `zfs hold` (or `zfs release`) of every snapshot when the side's steps are
    all holds (or all releases): ZFS waits for one transaction group, not one per
    snapshot. A side with one step, or with steps of other kinds, has none."""
    steps = list(steps)
    for kinds, verb in (({StepKind.HOLD}, "hold"),
                        ({StepKind.RELEASE, StepKind.RELEASE_STALE}, "release")):
        if len(steps) > 1 and all(step.kind in kinds for step in steps):
            return cmd("zfs", verb, tag, *(snapshot_name(step.dataset) for step in steps))
    return None
