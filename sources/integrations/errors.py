"""The integration installer's failures (`memcastle::integration::*`).

Every one of them but `validation_failed` is raised before anything is changed: the installer
works out every file it would write, and every command it would run, before it writes or runs
the first one. `validation_failed` comes after a change that did not hold, which was put back.
"""

from __future__ import annotations

from kernel.errors import MemCastleError


class AgentNotFound(MemCastleError):
    code = "memcastle::integration::agent_not_found"
    help = "install the agent (its program on PATH, or its configuration directory), then retry"


class Incompatible(MemCastleError):
    code = "memcastle::integration::incompatible"
    help = "upgrade the agent (or MemCastle) to a version the integration supports"


class Conflict(MemCastleError):
    code = "memcastle::integration::conflict"
    help = "move what is in the way (or pass --force to `update` to overwrite hand edits)"


class AssetsMissing(MemCastleError):
    code = "memcastle::integration::assets_missing"
    help = "point --assets-dir (or MEMCASTLE_ASSETS_DIR) at a complete assets directory"


class ValidationFailed(MemCastleError):
    code = "memcastle::integration::validation_failed"
    help = "everything was put back as it was; fix the cause shown and run it again"


class AssetsNotFound(MemCastleError):
    """An assets directory named explicitly does not exist (configuration.md: no fallback)."""

    code = "memcastle::assets::not_found"
    help = "give an existing directory to --assets-dir or MEMCASTLE_ASSETS_DIR"
