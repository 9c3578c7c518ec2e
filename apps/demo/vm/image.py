"""The VM test host's image: built once per machine from Debian's packages, then cached.

The cache lives outside any checkout (POZOL_VM_CACHE, default /var/cache/pozol/vm) in a
directory named by a key of the recipe: the build script's text and every pinned
version. A build runs under an exclusive lock, in a scratch directory, and becomes the
cache entry by one rename after its manifest is written, so a half-built image is never
taken for a good one and two runs never build at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import lzma
import os
import shutil
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

BUILD_SCRIPT = Path(__file__).with_name("build-image.sh")
MANIFEST = "manifest.json"
ELF_MAGIC = b"\x7fELF"


class ImageError(RuntimeError):
    """The image cannot be built or used on this machine (the message says why)."""


@dataclass(frozen=True)
class Recipe:
    """What goes into an image. Versions are pinned: a Debian point release replaces the
    kernel package, and an image must stay what its key says."""

    name: str
    suite: str
    kernel_version: str
    zfs_version: str
    pg_major: int
    pg_version: str
    mirror: str = "http://deb.debian.org/debian"

    def environment(self) -> dict[str, str]:
        return {"SUITE": self.suite, "MIRROR": self.mirror,
                "KERNEL_VERSION": self.kernel_version, "ZFS_VERSION": self.zfs_version,
                "PG_MAJOR": str(self.pg_major), "PG_VERSION": self.pg_version}

    def key(self) -> str:
        digest = hashlib.sha256(BUILD_SCRIPT.read_bytes())
        digest.update(json.dumps(asdict(self), sort_keys=True).encode())
        return f"{self.name}-{digest.hexdigest()[:16]}"


# Debian 13 as it ships: OpenZFS 2.3 and PostgreSQL 17 from Debian's own archive.
TRIXIE = Recipe(name="trixie-zfs2.3-pg17", suite="trixie", kernel_version="6.12.117-1",
                zfs_version="2.3.9-0+deb13u1", pg_major=17, pg_version="17.12-0+deb13u1")
# Debian 12 as it ships: OpenZFS 2.1 (contrib) and PostgreSQL 15, the hosts most fleets
# still run; the module's ARC sizing and its missing 2.2/2.3 features differ from 2.3's.
BOOKWORM = Recipe(name="bookworm-zfs2.1-pg15", suite="bookworm", kernel_version="6.1.176-1",
                  zfs_version="2.1.11-1+deb12u1", pg_major=15, pg_version="15.18-0+deb12u1")
RECIPES = {recipe.name: recipe for recipe in (TRIXIE, BOOKWORM)}


@dataclass(frozen=True)
class Image:
    """A built image in the cache: what a boot needs."""

    directory: Path
    recipe: Recipe
    versions: dict[str, str]

    @property
    def root_disk(self) -> Path:
        return self.directory / "root.raw"

    @property
    def kernel(self) -> Path:
        return self.directory / "vmlinux"

    @property
    def initrd(self) -> Path:
        return self.directory / "initrd.img"

    @property
    def client_key(self) -> Path:
        return self.directory / "client_key"

    @property
    def host_public_key(self) -> str:
        kind, blob = (self.directory / "host_key.pub").read_text().split()[:2]
        return f"{kind} {blob}"


def cache_root() -> Path:
    return Path(os.environ.get("POZOL_VM_CACHE", "/var/cache/pozol/vm"))


def cached(recipe: Recipe) -> Image | None:
    """The image of this recipe if a complete one is in the cache."""
    directory = cache_root() / recipe.key()
    manifest = directory / MANIFEST
    if not manifest.exists():
        return None
    return Image(directory, recipe, json.loads(manifest.read_text())["versions"])


def ensure(recipe: Recipe) -> Image:
    """The cached image, or a new one built now (10-25 minutes on two cores)."""
    if image := cached(recipe):
        return image
    with _build_lock():
        if image := cached(recipe):  # built by another run while this one waited
            return image
        return _build(recipe)


def missing_tools() -> list[str]:
    """Machine programs a build or a boot needs and that are not installed."""
    tools = ("qemu-system-x86_64", "qemu-img", "debootstrap", "mkfs.ext4", "ssh-keygen")
    return [tool for tool in tools if shutil.which(tool) is None]


@contextmanager
def _build_lock() -> Iterator[None]:
    cache_root().mkdir(parents=True, exist_ok=True)
    with open(cache_root() / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _build(recipe: Recipe) -> Image:
    if os.geteuid() != 0:
        raise ImageError("building the VM image needs root (debootstrap, chroot, mounts)")
    if missing := missing_tools():
        raise ImageError(f"missing on this machine: {', '.join(missing)}")
    final = cache_root() / recipe.key()
    scratch = cache_root() / f".building-{recipe.key()}-{os.getpid()}"
    _remove_stale_scratch(recipe)
    scratch.mkdir(parents=True)
    log = cache_root() / f"{scratch.name}.log"  # beside the scratch: kept if the build fails
    started = time.monotonic()
    try:
        _run_build_script(recipe, scratch, log)
        _unpack_kernel(scratch / "vmlinuz", scratch / "vmlinux")
        (scratch / "vmlinuz").unlink()
        versions = _read_versions(scratch / "versions.txt")
        manifest = {"recipe": asdict(recipe), "versions": versions,
                    "build_seconds": round(time.monotonic() - started)}
        (scratch / MANIFEST).write_text(json.dumps(manifest, indent=2))
        scratch.rename(final)
        shutil.move(log, final / "build.log")
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return Image(final, recipe, versions)


def _remove_stale_scratch(recipe: Recipe) -> None:
    # Only runs under the lock: a scratch directory found now belongs to a dead build.
    for stale in cache_root().glob(f".building-{recipe.key()}-*"):
        if stale.is_dir():
            _unmount_below(stale)
            shutil.rmtree(stale, ignore_errors=True)


def _unmount_below(directory: Path) -> None:
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    for mount in sorted((m for m in mounts if m.startswith(f"{directory}/")), reverse=True):
        subprocess.run(["umount", "-l", mount], check=False)


def _run_build_script(recipe: Recipe, scratch: Path, log: Path) -> None:
    # nice/ionice: the build shares the machine with whatever else runs.
    command = ["nice", "-n", "10", "ionice", "-c", "3", "sh", str(BUILD_SCRIPT), str(scratch)]
    env = {**os.environ, **recipe.environment(), "LC_ALL": "C"}
    print(f"pozol-vm: building {recipe.key()} (log: {log})", file=sys.stderr, flush=True)
    with open(log, "w") as out:
        done = subprocess.run(command, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise ImageError(f"image build failed ({done.returncode}):\n" + "\n".join(tail))


def _read_versions(path: Path) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in path.read_text().splitlines() if " " in line)


# Compressed kernels inside a bzImage, found by their magic; the first offset whose
# stream decompresses into an ELF file is the kernel.
_DECOMPRESSORS = {
    b"\x02\x21\x4c\x18": ["lz4", "-dc"],
    b"\x28\xb5\x2f\xfd": ["zstd", "-dcq"],
    b"\xfd7zXZ\x00": None,  # Python's lzma
    b"\x1f\x8b\x08": None,  # Python's zlib
}


def _unpack_kernel(bzimage: Path, out: Path) -> None:
    """Write the ELF kernel inside bzimage to out (QEMU boots it directly through PVH)."""
    data = bzimage.read_bytes()
    for magic, tool in _DECOMPRESSORS.items():
        offset = data.find(magic)
        while offset != -1:
            if (elf := _decompress(data[offset:], magic, tool)) and elf.startswith(ELF_MAGIC):
                out.write_bytes(elf)
                return
            offset = data.find(magic, offset + 1)
    raise ImageError(f"no compressed ELF kernel found in {bzimage}")


def _decompress(stream: bytes, magic: bytes, tool: list[str] | None) -> bytes | None:
    try:
        if tool:
            done = subprocess.run(tool, input=stream, capture_output=True, check=False)
            return done.stdout or None
        if magic.startswith(b"\xfd7zXZ"):
            return lzma.LZMADecompressor().decompress(stream)
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(stream)
    except (lzma.LZMAError, zlib.error, OSError):
        return None
