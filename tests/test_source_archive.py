"""The package archive of a source (sources.md 6, docs/source-packages.md "The archive").

Written packages are byte-for-byte reproducible; reading takes only the five top-level names,
into memory, refuses what is oversized (the expanded size counted, not read from headers), a
link or device carrying one of those names, a duplicate, and a component that is a core module.
Hostile archives are built member by member with `tarfile`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from sources.archive import (
    MAX_ARCHIVE_BYTES,
    MAX_EXPANDED_BYTES,
    Package,
    PackageInvalid,
    check_component,
    package_name,
    read_package,
    sha256_hex,
    write_package,
)
from sources.manifest import Incompatible, parse_manifest

COMPONENT = b"\0asm\x0d\x00\x01\x00" + bytes(range(256))
CORE_MODULE = b"\0asm\x01\x00\x00\x00" + b"\x01\x04\x01\x60\x00\x00"
MANIFEST = """
[source]
name = "notes"
version = "1.2.0"
description = "Some notes"

[compatibility]
contract = "0.4"
memcastle = ">=0.1"
"""


Member = tuple[tarfile.TarInfo, bytes]


def member(name: str, content: bytes = b"", kind: bytes = tarfile.REGTYPE) -> Member:
    info = tarfile.TarInfo(name)
    info.type = kind
    if kind == tarfile.REGTYPE:
        info.size = len(content)
    elif kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
        info.linkname = "/etc/passwd"
    return info, content


def tar_gz(*members: Member) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for info, content in members:
            archive.addfile(info, io.BytesIO(content) if info.isreg() else None)
    return gzip.compress(raw.getvalue())


def valid(*extra: Member) -> bytes:
    return tar_gz(
        member("memcastle-source.toml", MANIFEST.encode()), member("source.wasm", COMPONENT), *extra
    )


def invalid(data: bytes, message: str, **limits: int) -> None:
    with pytest.raises(PackageInvalid) as raised:
        read_package(data, **limits)
    assert message in raised.value.message
    assert raised.value.code == "memcastle::source::package_invalid"
    assert raised.value.status == 400


# Writing


def test_a_written_package_reads_back() -> None:
    data = write_package(MANIFEST, COMPONENT, readme="# Notes\n", license="MIT\n")
    assert read_package(data) == Package(
        manifest_text=MANIFEST, component=COMPONENT, readme="# Notes\n", license="MIT\n"
    )
    assert read_package(write_package(MANIFEST, COMPONENT)) == Package(MANIFEST, COMPONENT)


def test_writing_is_deterministic() -> None:
    first = write_package(MANIFEST, COMPONENT, readme="r", license="l")
    assert write_package(MANIFEST, COMPONENT, readme="r", license="l") == first
    assert write_package(MANIFEST + "\n", COMPONENT, readme="r", license="l") != first


def test_a_written_package_carries_nothing_of_the_machine() -> None:
    data = write_package(MANIFEST, COMPONENT, readme="r", license="l")
    # gzip header: magic, deflate, no flags (so no file name), mtime 0.
    assert data[:8] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00"
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        members = archive.getmembers()
    assert [info.name for info in members] == [
        "LICENSE",
        "README.md",
        "memcastle-source.toml",
        "source.wasm",
    ]
    for info in members:
        assert info.isreg()
        assert (info.mtime, info.uid, info.gid, info.uname, info.gname, info.mode) == (
            0,
            0,
            0,
            "",
            "",
            0o644,
        )


def test_a_core_module_is_never_packaged() -> None:
    with pytest.raises(Incompatible):
        write_package(MANIFEST, CORE_MODULE)


def test_package_name_and_sha256() -> None:
    assert package_name(parse_manifest(MANIFEST)) == "notes-1.2.0.tar.gz"
    assert sha256_hex(b"abc") == hashlib.sha256(b"abc").hexdigest()
    assert sha256_hex(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


# Reading


def test_other_names_are_ignored_and_dot_slash_is_top_level() -> None:
    data = tar_gz(
        member("./memcastle-source.toml", MANIFEST.encode()),
        member("./source.wasm", COMPONENT),
        member("./LICENSE.md", b"Apache-2.0"),
        member("src/lib.rs", b"fn main() {}"),
        member("docs/README.md", b"not this one"),
        member(".", kind=tarfile.DIRTYPE),
    )
    assert read_package(data) == Package(MANIFEST, COMPONENT, license="Apache-2.0")


def test_license_is_preferred_to_license_md() -> None:
    package = read_package(valid(member("LICENSE.md", b"md"), member("LICENSE", b"plain")))
    assert package.license == "plain"


@pytest.mark.parametrize("missing", ["memcastle-source.toml", "source.wasm"])
def test_a_missing_manifest_or_component_is_named(missing: str) -> None:
    present = [
        member(name, content)
        for name, content in (
            ("memcastle-source.toml", MANIFEST.encode()),
            ("source.wasm", COMPONENT),
        )
        if name != missing
    ]
    invalid(tar_gz(*present), f"the package has no `{missing}` at its top level")


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not an archive at all",
        gzip.compress(b"gzip, but no tar inside" * 40),
        valid()[:-20],
        b"PK\x03\x04zip",
    ],
)
def test_what_is_not_a_gzip_tar_is_refused(data: bytes) -> None:
    with pytest.raises(PackageInvalid):
        read_package(data)


def test_a_member_that_is_not_utf8_text_is_refused() -> None:
    data = tar_gz(member("memcastle-source.toml", b"\xff\xfe"), member("source.wasm", COMPONENT))
    invalid(data, "`memcastle-source.toml` in the package is not UTF-8 text")
    invalid(valid(member("README.md", b"caf\xe9")), "`README.md` in the package is not UTF-8")


def test_a_name_held_twice_is_refused() -> None:
    invalid(valid(member("./source.wasm", COMPONENT)), "the package holds `source.wasm` twice")


# Limits


def test_the_default_limits() -> None:
    assert (MAX_ARCHIVE_BYTES, MAX_EXPANDED_BYTES) == (64 * 2**20, 256 * 2**20)


def test_an_archive_over_its_limit_is_refused_unread() -> None:
    data = valid()
    assert read_package(data, max_archive_bytes=len(data))
    invalid(data, f"the archive is {len(data)} bytes", max_archive_bytes=len(data) - 1)


def test_the_expanded_size_is_counted_to_the_byte() -> None:
    data = valid()
    expanded = len(gzip.decompress(data))
    assert read_package(data, max_expanded_bytes=expanded)
    invalid(data, "the package expands to more than", max_expanded_bytes=expanded - 1)


def test_a_huge_member_stops_at_the_limit_even_when_ignored() -> None:
    bomb = valid(member("padding.bin", bytes(4 * 2**20)))
    assert len(bomb) < 64 * 2**10  # zeros compress: a small archive, a large expansion
    invalid(bomb, "the package expands to more than 1 MiB", max_expanded_bytes=2**20)


def test_a_huge_component_stops_at_the_limit() -> None:
    data = tar_gz(
        member("memcastle-source.toml", MANIFEST.encode()),
        member("source.wasm", COMPONENT + bytes(2 * 2**20)),
    )
    invalid(data, "expands to more than", max_expanded_bytes=2**20)


# Hostile archives: nothing is extracted, nothing outside the top level is read


def test_climbing_and_absolute_members_are_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    data = tar_gz(
        member("memcastle-source.toml", MANIFEST.encode()),
        member("../source.wasm", COMPONENT),
        member("/source.wasm", COMPONENT),
        member("../x", b"escaped"),
        member("a/../../x", b"escaped"),
    )
    invalid(data, "the package has no `source.wasm`")
    read_package(valid(member("../x", b"escaped"), member("/tmp/x", b"escaped")))
    assert sorted(path.name for path in tmp_path.rglob("*")) == ["work"]


@pytest.mark.parametrize(
    "kind", [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.DIRTYPE, tarfile.CHRTYPE, tarfile.FIFOTYPE]
)
def test_a_read_name_that_is_not_a_regular_file_is_refused(kind: bytes) -> None:
    data = tar_gz(
        member("memcastle-source.toml", MANIFEST.encode()), member("source.wasm", kind=kind)
    )
    invalid(data, "`source.wasm` in the package is not a regular file")


def test_links_under_other_names_are_passed_over() -> None:
    package = read_package(valid(member("evil", kind=tarfile.SYMTYPE)))
    assert package.component == COMPONENT


# The component


def test_a_core_module_is_refused_as_incompatible() -> None:
    data = tar_gz(
        member("memcastle-source.toml", MANIFEST.encode()), member("source.wasm", CORE_MODULE)
    )
    with pytest.raises(Incompatible) as raised:
        read_package(data)
    assert raised.value.message == "`source.wasm` is a core module, not a component"
    assert raised.value.code == "memcastle::source::incompatible"
    assert "component" in raised.value.help


@pytest.mark.parametrize("component", [b"", b"\0as", b"\x7fELF\x02\x01\x01\x00", b"hello world"])
def test_what_is_not_webassembly_is_an_invalid_package(component: bytes) -> None:
    with pytest.raises(PackageInvalid, match="not a WebAssembly binary"):
        check_component(component)


def test_a_component_of_another_version_is_incompatible() -> None:
    with pytest.raises(Incompatible, match="version 0e000100"):
        check_component(b"\0asm\x0e\x00\x01\x00")
    check_component(COMPONENT)
