"""MemCastle: a memory daemon for AI agents.

This package holds what the apps share: settings, the ASGI application, configuration loading,
the store, the memory-mode context, errors and the daemon's runtime.
"""

__version__ = "0.1.0"
