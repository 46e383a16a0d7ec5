"""The package of a mining source: a gzip tar (docs/source-packages.md, "The archive").

A package comes from anyone, so reading one trusts nothing in it: only five top-level names are
read, into memory, and nothing is ever extracted to disk, so a member named `../x`, an absolute
path, a link or a device can do no harm; the decompressed stream is counted as it is read, so a
small archive that expands without end is stopped at the limit whatever its headers claim.

Writing one is deterministic (sorted members, zero times and owners, no file name in the gzip
header): the same manifest and component give the same bytes, so a published SHA-256 can be
reproduced from the sources.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
import zlib
from collections.abc import Buffer
from dataclasses import dataclass

from kernel.errors import MemCastleError
from sources.manifest import MANIFEST_FILE, Incompatible, Manifest

MAX_ARCHIVE_BYTES = 64 * 2**20
MAX_EXPANDED_BYTES = 256 * 2**20
COMPONENT_FILE = "source.wasm"
README_FILE = "README.md"
LICENSE_FILES = ("LICENSE", "LICENSE.md")
READ_NAMES = (MANIFEST_FILE, COMPONENT_FILE, README_FILE, *LICENSE_FILES)

WASM_MAGIC = b"\0asm"
# After the magic: the version and layer of a component (the component model's pre-1.0
# encoding, version 0x0d, layer 1), and of a core module (version 1, layer 0).
COMPONENT_VERSION = b"\x0d\x00\x01\x00"
CORE_MODULE_VERSION = b"\x01\x00\x00\x00"


class PackageInvalid(MemCastleError):
    status = 400
    code = "memcastle::source::package_invalid"
    help = (
        "make the package with `memcastle source package`: a gzip tar holding "
        "memcastle-source.toml and source.wasm at its top level"
    )


@dataclass(frozen=True)
class Package:
    manifest_text: str
    component: bytes
    readme: str | None = None
    license: str | None = None


class _Counted(io.RawIOBase):
    """The decompressed stream of the archive, refused once more than `limit` bytes come out
    of it: the sizes tar headers claim are not trusted."""

    def __init__(self, source: gzip.GzipFile, limit: int) -> None:
        super().__init__()
        self.source = source
        self.limit = limit
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Buffer, /) -> int:
        view = memoryview(buffer).cast("B")
        # Asks one byte past the room left, so an archive of exactly the limit is accepted.
        chunk = self.source.read(min(len(view), self.limit - self.count + 1))
        self.count += len(chunk)
        if self.count > self.limit:
            raise PackageInvalid(
                f"the package expands to more than {_mib(self.limit)}, the most a package may"
            )
        view[: len(chunk)] = chunk
        return len(chunk)


def read_package(
    data: bytes,
    *,
    max_archive_bytes: int = MAX_ARCHIVE_BYTES,
    max_expanded_bytes: int = MAX_EXPANDED_BYTES,
) -> Package:
    """The files of a package. Raises `PackageInvalid` for an unreadable or oversized archive or
    a missing manifest or component, `Incompatible` for a component this host cannot load."""
    if len(data) > max_archive_bytes:
        raise PackageInvalid(
            f"the archive is {len(data)} bytes, more than the {_mib(max_archive_bytes)} a "
            "package may be"
        )
    files = _read_members(data, max_expanded_bytes)
    for required in (MANIFEST_FILE, COMPONENT_FILE):
        if required not in files:
            raise PackageInvalid(f"the package has no `{required}` at its top level")
    check_component(files[COMPONENT_FILE])
    license_name = next((name for name in LICENSE_FILES if name in files), None)
    return Package(
        manifest_text=_text(MANIFEST_FILE, files[MANIFEST_FILE]),
        component=files[COMPONENT_FILE],
        readme=_text(README_FILE, files[README_FILE]) if README_FILE in files else None,
        license=_text(license_name, files[license_name]) if license_name else None,
    )


def _read_members(data: bytes, max_expanded_bytes: int) -> dict[str, bytes]:
    """The content of each member read, by name, streaming through the archive once."""
    files: dict[str, bytes] = {}
    stream = io.BufferedReader(
        _Counted(gzip.GzipFile(fileobj=io.BytesIO(data)), max_expanded_bytes)
    )
    try:
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            for member in archive:
                name = _read_name(member)
                if name is None:
                    continue
                if name in files:
                    raise PackageInvalid(f"the package holds `{name}` twice")
                content = archive.extractfile(member)
                files[name] = content.read() if content is not None else b""
    except (tarfile.TarError, OSError, EOFError, zlib.error) as error:
        raise PackageInvalid(f"the package is not a readable gzip tar archive: {error}") from error
    return files


def _read_name(member: tarfile.TarInfo) -> str | None:
    """The name a member is read as, or None to pass over it. Only a top-level name (`./`
    allowed, as `tar -C dir .` writes it) is read, and only as a regular file: one of those
    names carried by a link, a directory or a device is refused rather than passed over, so
    the package is not read as missing a file it appears to hold."""
    name = member.name.removeprefix("./")
    if name not in READ_NAMES:
        return None
    if not member.isreg():
        raise PackageInvalid(f"`{name}` in the package is not a regular file: {_kind(member)}")
    return name


def _kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return f"a symbolic link to {member.linkname!r}"
    if member.islnk():
        return f"a hard link to {member.linkname!r}"
    if member.isdir():
        return "a directory"
    return "a device or FIFO"


def _text(name: str, content: bytes) -> str:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as error:
        raise PackageInvalid(f"`{name}` in the package is not UTF-8 text") from error


def check_component(component: bytes) -> None:
    """Refuse what is not a WebAssembly component: the host instantiates components of the world
    `memcastle:source/source`, never core modules."""
    if component[:4] != WASM_MAGIC:
        raise PackageInvalid(f"`{COMPONENT_FILE}` is not a WebAssembly binary")
    if component[4:8] == CORE_MODULE_VERSION:
        raise Incompatible(
            f"`{COMPONENT_FILE}` is a core module, not a component",
            help=(
                "build the source as a component of the world memcastle:source/source "
                "(cargo component, componentize-py, jco componentize, or wasm-tools component new)"
            ),
        )
    if component[4:8] != COMPONENT_VERSION:
        raise Incompatible(
            f"`{COMPONENT_FILE}` is a WebAssembly binary of version {component[4:8].hex()}, not a "
            f"component of the version this MemCastle loads ({COMPONENT_VERSION.hex()})",
            help="build the source with tools of the component model this MemCastle supports",
        )


def write_package(
    manifest_text: str,
    component: bytes,
    *,
    readme: str | None = None,
    license: str | None = None,
) -> bytes:
    """The package of these files, the same bytes for the same inputs. The component is checked
    first, so no package is made that `read_package` would refuse for it."""
    check_component(component)
    members = {MANIFEST_FILE: manifest_text.encode("utf-8"), COMPONENT_FILE: component}
    if readme is not None:
        members[README_FILE] = readme.encode("utf-8")
    if license is not None:
        members[LICENSE_FILES[0]] = license.encode("utf-8")
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for name in sorted(members):
            archive.addfile(_member(name, len(members[name])), io.BytesIO(members[name]))
    packed = io.BytesIO()
    # No file name and a zero time in the gzip header: nothing of the machine that packed it.
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0) as compressed:
        compressed.write(tar.getvalue())
    return packed.getvalue()


def _member(name: str, size: int) -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.size = size
    member.mtime = 0
    member.mode = 0o644
    member.uid = member.gid = 0
    member.uname = member.gname = ""
    member.type = tarfile.REGTYPE
    return member


def package_name(manifest: Manifest) -> str:
    """The file name a package is published under: `<name>-<version>.tar.gz`."""
    return f"{manifest.name}-{manifest.version}.tar.gz"


def sha256_hex(data: bytes) -> str:
    """The lowercase hex SHA-256 of `data`, as the `.sha256` sidecar and an index carry it."""
    return hashlib.sha256(data).hexdigest()


def _mib(size: int) -> str:
    return f"{size / 2**20:g} MiB"
