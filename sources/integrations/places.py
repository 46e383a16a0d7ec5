"""Where the integrations live: MemCastle's per-agent directories, and the assets they are
made from (configuration.md section 1)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from sources.integrations.errors import AssetsNotFound

# The assets that ship inside the package, used when no assets directory is installed.
EMBEDDED = Path(__file__).resolve().parent / "assets"
SYSTEM_ASSETS = (Path("/usr/local/share/memcastle"), Path("/usr/share/memcastle"))


def home_dir(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def data_home(env: Mapping[str, str]) -> Path:
    """$XDG_DATA_HOME, ignored when unset, empty or relative."""
    value = env.get("XDG_DATA_HOME", "")
    return Path(value) if value and Path(value).is_absolute() else home_dir(env) / ".local/share"


def agents_dir(env: Mapping[str, str]) -> Path:
    return data_home(env) / "memcastle" / "agents"


def integrations_assets(explicit: str | None, env: Mapping[str, str]) -> Path:
    """The `integrations/` directory of the assets in use: an explicit directory (the flag,
    else MEMCASTLE_ASSETS_DIR), which must exist; else an installed one that has integrations
    (`share/memcastle` beside the interpreter's `bin`, then the system's; an installation may
    ship only some of the assets), never one inside XDG data; else the assets embedded in the
    package."""
    chosen = explicit or env.get("MEMCASTLE_ASSETS_DIR")
    if chosen:
        root = Path(chosen).expanduser()
        if not root.is_dir():
            raise AssetsNotFound(f"the assets directory {root} does not exist")
        return root / "integrations"
    data = data_home(env).resolve()
    for root in (Path(sys.prefix) / "share" / "memcastle", *SYSTEM_ASSETS):
        if (root / "integrations").is_dir() and not root.resolve().is_relative_to(data):
            return root / "integrations"
    return EMBEDDED
