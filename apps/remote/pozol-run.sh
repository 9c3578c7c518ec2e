#!/bin/sh
# pozol-run @VERSION@: runs as root only what PoZoL's control plane signed for this host.
#
# Install as @HELPER_PATH@, owned by root, mode 0755; PoZoL's sudoers file lets
# its login run this program, and no other, as root. It trusts one key, the
# host's SSH key in PoZoL (below); the private key stays on the control plane,
# so the login cannot sign, and so cannot choose what runs as root. It is made
# for the host whose SSH host key is HOST (below): a script signed for another
# host does not run here. PoZoL's README, "Non-root login", says what it does
# and why.
#
#   pozol-run NONCE EXPIRES SIGNATURE SCRIPT   a signed script, run once
#   pozol-run --standing NAME [ARG...]         a script PoZoL installed in
#                                              @STATE@/standing (a replication
#                                              link's receive), with ARGs
set -u
umask 077
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
TRUSTED='@TRUSTED@'
HOST='@HOST@'
STATE='@STATE@'
NAMESPACE='@NAMESPACE@'
POZOL_RUN_STATE=$STATE
export POZOL_RUN_STATE

refuse() {
    echo "pozol-run: refused: $*" >&2
    exit 126
}

if [ "${1-}" = --standing ]; then
    [ $# -ge 2 ] || refuse "usage: pozol-run --standing NAME [ARG...]"
    name=$2
    shift 2
    case $name in '' | *[!a-z0-9-]*) refuse "bad standing name" ;; esac
    [ -f "$STATE/standing/$name" ] || refuse "no standing script $name (removed with its link?)"
    umask 022
    exec /bin/sh "$STATE/standing/$name" "$@"
fi

[ $# -eq 4 ] || refuse "usage: pozol-run NONCE EXPIRES SIGNATURE SCRIPT"
nonce=$1 expires=$2 signature=$3 script=$4
case $nonce in *[!0-9a-f]*) refuse "bad nonce" ;; esac
[ ${#nonce} -eq 32 ] || refuse "bad nonce"
case $expires in '' | *[!0-9]*) refuse "bad expiry" ;; esac
case $signature in '' | *[!A-Za-z0-9+/=]*) refuse "bad signature text" ;; esac
now=$(date +%s)
[ "$now" -le "$expires" ] ||
    refuse "the signature expired at $expires and this host's clock says $now (is it ahead?)"

mkdir -p "$STATE/used" "$STATE/standing" || refuse "cannot make $STATE"
work=$(mktemp -d "$STATE/verify.XXXXXX") || refuse "cannot make a directory in $STATE"
printf 'pozol namespaces="%s" %s\n' "$NAMESPACE" "$TRUSTED" >"$work/allowed"
printf -- '-----BEGIN SSH SIGNATURE-----\n%s\n-----END SSH SIGNATURE-----\n' "$signature" >"$work/signature"
printf 'pozol-run @VERSION@\n%s\n%s\n%s\n%s' "$HOST" "$nonce" "$expires" "$script" >"$work/message"
if ! ssh-keygen -Y verify -f "$work/allowed" -I pozol -n "$NAMESPACE" \
    -s "$work/signature" <"$work/message" >/dev/null 2>"$work/error"; then
    why=$(head -c 300 "$work/error" | tr -d '\r' | tr '\n' ' ')
    rm -rf "$work"
    refuse "bad signature: this helper trusts another key or was made for another host (host key $HOST), or the script was changed ($why)"
fi
rm -rf "$work"
# Atomic: of two runs of one signed script, the second finds it made.
mkdir "$STATE/used/$expires-$nonce" 2>/dev/null || refuse "this signed script already ran once"
# Now and then, forget what has expired (its signature is refused anyway) and the
# work directories of helpers killed while they checked.
case $nonce in
0*)
    for seen in "$STATE"/used/*; do
        until=${seen##*/}
        until=${until%%-*}
        [ "$until" -lt "$now" ] 2>/dev/null && rmdir "$seen"
    done
    find "$STATE" -maxdepth 1 -name 'verify.*' -mmin +60 -exec rm -rf {} + 2>/dev/null
    ;;
esac
# The script gets the umask sudo gives a command (its files are read by others:
# a clone's directories by PostgreSQL's owner), not the helper's own.
umask 022
exec /bin/sh -c "$script"
