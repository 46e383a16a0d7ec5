"""Ed25519 signatures over source packages, and the trust policy that judges them (sources.md 6).

A publisher signs the bytes of each archive with a private key made by `memcastle source keygen`;
a registry index carries the signature beside the archive's SHA-256 as `{key, value}`: `key` is
the signing key's **key id**, `value` the base64 of the 64-byte signature. The key id is the
first 16 hex digits of the SHA-256 of the 32 raw bytes of the public key: short enough to read,
and it names a key without being one, so a signature can never bring its own key to be trusted.

The daemon trusts the base64 public keys of `mining.trusted_keys` and nothing else. Under
`optional` trust an unsigned package, or one signed by a key it does not know, is accepted as
unsigned; a signature by a trusted key must verify, or the package is refused. Under `required`
only a valid signature by a trusted key is accepted.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from kernel.errors import MemCastleError

KEY_ID_DIGITS = 16


class SigningFailed(MemCastleError):
    """A local command could not read or write a key, or sign with it."""

    code = "memcastle::source::signing_failed"
    help = "check the key file's path and permissions; make a key with `memcastle source keygen`"


class Untrusted(MemCastleError):
    status = 400
    code = "memcastle::source::untrusted"
    help = (
        "install a package signed by a key of mining.trusted_keys, or ask its publisher; "
        "docs/source-registry.md says how signatures are checked"
    )


@dataclass(frozen=True)
class Signature:
    """A signature as an index carries it: the signing key's id and the base64 signature."""

    key: str
    value: str

    def as_dict(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value}


def key_id(public_key: Ed25519PublicKey) -> str:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:KEY_ID_DIGITS]


def public_text(public_key: Ed25519PublicKey) -> str:
    """The public key as `mining.trusted_keys` takes it: base64 of its 32 raw bytes."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def keygen(path: Path) -> Ed25519PublicKey:
    """Write a new private key to `path`, readable by its owner only, and return its public
    key. An existing file is never overwritten: losing a published key cannot be undone."""
    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise SigningFailed(
            f"{path} exists already: a key is never overwritten",
            help="give another path, or remove that file yourself if it is no longer used",
        ) from None
    except OSError as error:
        raise SigningFailed(f"cannot create {path}: {error.strerror}") from error
    with os.fdopen(descriptor, "wb") as stream:
        stream.write(pem)
    return private.public_key()


def load_private_key(path: Path) -> Ed25519PrivateKey:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise SigningFailed(f"cannot read the key {path}: {error.strerror}") from error
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as error:
        raise SigningFailed(f"{path} is not an unencrypted PEM private key") from error
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningFailed(f"{path} is not an ed25519 private key")
    return key


def sign(private_key: Ed25519PrivateKey, data: bytes) -> Signature:
    value = base64.b64encode(private_key.sign(data)).decode("ascii")
    return Signature(key=key_id(private_key.public_key()), value=value)


class TrustPolicy:
    """`mining.trust` and `mining.trusted_keys`: which signed packages are accepted."""

    def __init__(self, trust: str, trusted_keys: Iterable[str]) -> None:
        self.required = trust == "required"
        self._keys: dict[str, Ed25519PublicKey] = {}
        for text in trusted_keys:
            public_key = Ed25519PublicKey.from_public_bytes(base64.b64decode(text))
            self._keys[key_id(public_key)] = public_key

    def judge(self, name: str, signature: Signature | None, archive: bytes) -> str | None:
        """The id of the trusted key that signed `archive`, None when it is accepted as
        unsigned; raises `Untrusted` when the policy refuses it."""
        public_key = None if signature is None else self._keys.get(signature.key)
        if signature is None or public_key is None:
            if self.required:
                why = (
                    "unsigned" if signature is None else f"signed by an unknown key {signature.key}"
                )
                raise Untrusted(
                    f"the {name} package is {why}, and mining.trust is `required`: only a "
                    "package signed by a key of mining.trusted_keys is installed"
                )
            return None
        try:
            public_key.verify(base64.b64decode(signature.value, validate=True), archive)
        except (InvalidSignature, binascii.Error, ValueError):
            raise Untrusted(
                f"the signature of the {name} package by the trusted key {signature.key} does "
                "not verify: the archive is not what that key signed"
            ) from None
        return signature.key
