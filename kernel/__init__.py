"""The ground floor of MemCastle: what every app builds on, and nothing that knows an app.

Errors, the store and its wire format, the schema, configuration (embedding profiles included),
the request context, input validation, change events, the clock, logging, running a provider,
and the REST and ASGI plumbing every transport shares. Nothing here imports `palace`, `jobs`,
`sources`, `graph`, `mcp_bridge` or `memcastle_project`; `make lint` checks it.
"""

__version__ = "0.1.0"
