"""The one error type of MemCastle.

Every failure on every interface is `{error, code, help}` with an HTTP status. Services raise
`MemCastleError` (or a subclass); REST renders it as the response body, MCP as the text of an
error result, and the CLI as a diagnostic. Nothing else decides what a client sees.
"""

from __future__ import annotations


class MemCastleError(Exception):
    """A failure a client can act on: what failed, a stable code, and what to do."""

    status: int = 500
    code: str = "memcastle::server::failed"
    help: str = "retry the request; if it keeps failing, read the daemon log"
    # A refusal that is part of normal operation (a search while the indexes are built at
    # start-up): Django's request log does not report it as a server error.
    expected: bool = False

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        help: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        if help is not None:
            self.help = help

    def body(self) -> dict[str, str]:
        return {"error": self.message, "code": self.code, "help": self.help}


class InputInvalid(MemCastleError):
    """Bad input. The message always names the field, option or header at fault."""

    status = 400
    code = "memcastle::input::invalid"

    def __init__(self, field: str, problem: str, *, help: str | None = None) -> None:
        super().__init__(
            f"`{field}` {problem}",
            help=help or f"correct `{field}` and send the request again",
        )
        self.field = field


# The largest request body any route or MCP call accepts: a checkpoint of the most items a job
# takes (10,000) with long contents fits, and so does a source package (api.md: 64 MiB).
MAX_BODY_BYTES = 64 * 1024 * 1024


class BodyTooLarge(MemCastleError):
    status = 413
    code = "memcastle::input::too_large"
    help = "send less at once: split a checkpoint into several jobs"

    def __init__(self) -> None:
        super().__init__(f"the request body is larger than {MAX_BODY_BYTES // 2**20} MiB")


class NotFound(MemCastleError):
    status = 404


class Conflict(MemCastleError):
    status = 409


class ModeForbidden(MemCastleError):
    status = 403
    code = "memcastle::mode::forbidden"
    help = (
        "switch the session/request to Full mode to allow writes, "
        "or to Full/ReadOnly to allow reads"
    )


class Unauthorized(MemCastleError):
    status = 401
    code = "memcastle::auth::unauthorized"
    help = "send `Authorization: Bearer <token>` with the configured secret or a generated token"


class ConfigInvalid(MemCastleError):
    code = "memcastle::config::invalid"
    help = "fix the setting (config file, MEMCASTLE_* variable or flag) and start again"


class StoreFailed(MemCastleError):
    """The datastore could not be opened or answered with an error."""

    code = "memcastle::store::backend_failed"
    help = "check the daemon log; the palace may be locked by another process"


class ServerFailed(MemCastleError):
    """An unexpected failure. The detail goes to the log, never to the client."""

    code = "memcastle::server::failed"

    def __init__(self) -> None:
        super().__init__("the daemon failed to handle the request")


class EmbedNotConfigured(MemCastleError):
    """Something needs an embedding provider and the profile in question has none."""

    status = 400
    code = "memcastle::embed::not_configured"
    help = (
        "set [embeddings] default_profile to a profile whose provider can embed (local, command "
        "or http), or send vectors of your own with an explicit profile"
    )


class EmbedFailed(MemCastleError):
    """The embedding provider failed: the message says how (exit status and the start of its
    stderr, or the HTTP status)."""

    status = 502
    code = "memcastle::embed::failed"
    help = (
        "check the embedding provider of the profile (its command or endpoint) and the daemon "
        "log, then try again"
    )
