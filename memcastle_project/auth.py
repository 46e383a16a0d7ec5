"""Bearer tokens: the configured secret and the generated token.

Two credentials are accepted: the configured secret (`auth.token`) and the generated token, of
which only a SHA-256 digest is stored. The stored digest is read on every request, so generating
or revoking a token takes effect at once.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import logging
import secrets
from typing import Any

from kernel.context import RequestContext
from kernel.errors import MemCastleError
from memcastle_project.repository import TokenRepository
from memcastle_project.shapes import Revoked, Token

logger = logging.getLogger(__name__)

ALGORITHM = "sha256"
VERSION = 1
TOKEN_PREFIX = "mc_"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _presented(authorization: str | None) -> str | None:
    """The digest of the token a `Bearer` header carries; None for any other header."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return digest(token.strip())


class TokenService:
    """The generated token's lifecycle, and the check of a presented credential."""

    def __init__(self, repository: TokenRepository, *, enabled: bool, secret: str | None) -> None:
        self._repository = repository
        self.enabled = enabled
        self._secret_digest = digest(secret) if secret else None

    def has_credential(self) -> bool:
        return self._secret_digest is not None or self._stored_digest() is not None

    def _stored_digest(self) -> str | None:
        row = self._repository.stored()
        if not row or row.get("algorithm") != ALGORITHM or row.get("version") != VERSION:
            return None
        return row.get("digest")

    def verify_secret(self, authorization: str | None) -> bool:
        """True when the header carries the configured secret: no store read, so the ASGI edge
        checks it without leaving the event loop."""
        presented = _presented(authorization)
        return bool(
            presented
            and self._secret_digest
            and hmac.compare_digest(presented, self._secret_digest)
        )

    def verify(self, authorization: str | None) -> bool:
        """True when the header carries a valid token. A store error refuses."""
        presented = _presented(authorization)
        if presented is None:
            return False
        if self.verify_secret(authorization):
            return True
        try:
            stored = self._stored_digest()
        except MemCastleError:
            logger.warning("token check refused a request: the datastore did not answer")
            return False
        return stored is not None and hmac.compare_digest(presented, stored)

    def generate(self, ctx: RequestContext) -> dict[str, Any]:
        """A new token, shown once; it replaces the previous one. Not gated by a memory mode."""
        try:
            token = TOKEN_PREFIX + secrets.token_hex(32)
        except OSError:  # pragma: no cover - the OS random source is unreadable
            raise MemCastleError(
                "the operating system's random source is unavailable; no token was made",
                code="memcastle::auth::entropy_unavailable",
            ) from None
        created_at = dt.datetime.now(dt.UTC)
        self._repository.replace(digest(token), ALGORITHM, VERSION, created_at)
        logger.info("a new API token was generated (requested by %s)", ctx.requested_by)
        return Token.render(
            {"token": token, "algorithm": ALGORITHM, "version": VERSION, "created_at": created_at}
        )

    def revoke(self, ctx: RequestContext) -> dict[str, Any]:
        self._repository.delete()
        logger.info("the API token was revoked (requested by %s)", ctx.requested_by)
        return Revoked.render({"revoked": True})
