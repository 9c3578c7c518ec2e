#!/bin/sh
# Build the root image of an OpenZFS test host from Debian's packages: a Debian guest
# with a DKMS-built zfs.ko for its own kernel and Debian's packaged PostgreSQL.
#
#   build-image.sh OUT
#
# Environment (set by apps/demo/vm/image.py from the recipe; every value is part of the
# cache key): SUITE, MIRROR, KERNEL_VERSION, ZFS_VERSION, PG_MAJOR, PG_VERSION.
#
# Leaves in OUT: root.raw (ext4, the guest's /), vmlinux (the kernel, unpacked: a
# compressed bzImage decompresses pathologically slowly under emulation), initrd.img,
# client_key(.pub) (root's and pozol's authorized key), host_key.pub, versions.txt.
# Runs as root on the machine; touches nothing outside OUT but its own chroot mounts,
# which it unmounts on every exit.
set -eu

OUT=$1
ROOT=$OUT/rootfs
: "${SUITE:?}" "${MIRROR:?}" "${KERNEL_VERSION:?}" "${ZFS_VERSION:?}" "${PG_MAJOR:?}" "${PG_VERSION:?}"

unmount_all() {
    for mnt in dev/pts dev sys proc; do
        mountpoint -q "$ROOT/$mnt" && umount -l "$ROOT/$mnt"
    done
    return 0
}
trap unmount_all EXIT INT TERM

in_root() { chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }
install_pkgs() { in_root apt-get install -y -q --no-install-recommends "$@"; }

step() { echo "== $(date -u +%H:%M:%S) $*"; }

step "debootstrap $SUITE"
debootstrap --variant=minbase --components=main,contrib \
    --include=systemd-sysv,openssh-server,udev,kmod,ifupdown,isc-dhcp-client,iproute2,procps \
    "$SUITE" "$ROOT" "$MIRROR"

cat > "$ROOT/etc/apt/sources.list" <<SOURCES
deb $MIRROR $SUITE main contrib
deb $MIRROR $SUITE-updates main contrib
SOURCES
rm -f "$ROOT/etc/apt/sources.list.d/debian.sources"
# Nothing starts inside the chroot: packages that would start a daemon are told no.
printf '#!/bin/sh\nexit 101\n' > "$ROOT/usr/sbin/policy-rc.d"
chmod 0755 "$ROOT/usr/sbin/policy-rc.d"
mount -t proc proc "$ROOT/proc"
mount -t sysfs sys "$ROOT/sys"
mount --bind /dev "$ROOT/dev"
mount --bind /dev/pts "$ROOT/dev/pts"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
in_root apt-get update -q

step "kernel $KERNEL_VERSION"
install_pkgs "linux-image-cloud-amd64=$KERNEL_VERSION" "linux-headers-cloud-amd64=$KERNEL_VERSION"
GUEST_KERNEL=$(ls "$ROOT/lib/modules")

step "zfs-dkms $ZFS_VERSION for $GUEST_KERNEL (the long step)"
# DKMS sees it runs in a chroot and builds for the installed kernel, not the machine's.
install_pkgs dkms build-essential
# zfsutils-linux depends on its libraries at its own exact version.
install_pkgs "zfs-dkms=$ZFS_VERSION" "zfsutils-linux=$ZFS_VERSION"
test -f "$ROOT/lib/modules/$GUEST_KERNEL/updates/dkms/zfs.ko" \
    || test -f "$ROOT/lib/modules/$GUEST_KERNEL/updates/dkms/zfs.ko.xz" \
    || { echo "zfs.ko was not built for $GUEST_KERNEL" >&2; exit 1; }

step "postgresql-$PG_MAJOR $PG_VERSION"
# No cluster at install: the host makes its packaged cluster with pg_createcluster on its
# ZFS pool at first boot (the pool disk is fresh each run).
mkdir -p "$ROOT/etc/postgresql-common"
echo "create_main_cluster = false" > "$ROOT/etc/postgresql-common/createcluster.conf"
install_pkgs "postgresql-$PG_MAJOR=$PG_VERSION" "postgresql-client-$PG_MAJOR=$PG_VERSION" \
    sudo pv mbuffer less
# DKMS and its compiler stay: removing dkms removes zfs-dkms, whose removal deletes the
# module it built. A DKMS host carries them in production too.
in_root apt-mark hold zfs-dkms "linux-image-cloud-amd64" >/dev/null

step "guest configuration"
echo pozol-vm > "$ROOT/etc/hostname"
echo "127.0.1.1 pozol-vm" >> "$ROOT/etc/hosts"
echo "/dev/vda / ext4 rw,noatime 0 1" > "$ROOT/etc/fstab"
cat > "$ROOT/etc/network/interfaces" <<NET
auto lo
iface lo inet loopback
allow-hotplug eth0
iface eth0 inet dhcp
NET
rm -f "$OUT/client_key" "$OUT/client_key.pub"
ssh-keygen -q -t ed25519 -N "" -C pozol-vm-client -f "$OUT/client_key"
install -d -m 0700 "$ROOT/root/.ssh"
install -m 0600 "$OUT/client_key.pub" "$ROOT/root/.ssh/authorized_keys"
# An ordinary login for the non-root tests; its sudo rules are written at boot by the test.
in_root useradd --create-home --shell /bin/bash pozol
install -d -m 0700 -o 1000 -g 1000 "$ROOT/home/pozol/.ssh"
install -m 0600 -o 1000 -g 1000 "$OUT/client_key.pub" "$ROOT/home/pozol/.ssh/authorized_keys"
rm -f "$ROOT"/etc/ssh/ssh_host_*
ssh-keygen -q -t ed25519 -N "" -C pozol-vm -f "$ROOT/etc/ssh/ssh_host_ed25519_key"
cp "$ROOT/etc/ssh/ssh_host_ed25519_key.pub" "$OUT/host_key.pub"
printf 'UseDNS no\nHostKey /etc/ssh/ssh_host_ed25519_key\n' > "$ROOT/etc/ssh/sshd_config.d/pozol.conf"
# Timers and daily jobs that would wake up during a test run.
for unit in apt-daily.timer apt-daily-upgrade.timer man-db.timer e2scrub_all.timer \
        fstrim.timer zfs-scrub-monthly@.timer zfs-trim-monthly@.timer; do
    in_root systemctl mask "$unit" >/dev/null 2>&1 || true
done
in_root apt-get clean
rm -f "$ROOT/usr/sbin/policy-rc.d" "$ROOT/etc/resolv.conf"
rm -rf "$ROOT/var/lib/apt/lists"/*

{
    echo "suite $SUITE"
    echo "guest_kernel $GUEST_KERNEL"
    in_root dpkg-query -W -f '${Package} ${Version}\n' \
        linux-image-cloud-amd64 zfs-dkms zfsutils-linux "postgresql-$PG_MAJOR" sudo pv
} > "$OUT/versions.txt"

ls "$ROOT/lib/modules/$GUEST_KERNEL/updates/dkms/" | grep -q '^zfs\.ko' \
    || { echo "zfs.ko is missing from the finished root tree" >&2; exit 1; }
cp "$ROOT/boot/initrd.img-$GUEST_KERNEL" "$OUT/initrd.img"
cp "$ROOT/boot/vmlinuz-$GUEST_KERNEL" "$OUT/vmlinuz"
unmount_all

step "root image"
mkfs.ext4 -q -F -L ozroot -d "$ROOT" "$OUT/root.raw" 4G
rm -rf "$ROOT"
step "done"
