"""What the tests (and `bench/`) share, one copy of each; the fixtures live in tests/conftest.py.

- `daemon`: a real daemon in a subprocess (`Daemon`, `REPO`); `waits`: `wait_for`, the one
  polling wait with a deadline.
- `http`: the daemon's HTTP API as the tests check it: `assert_error`, jobs (`submit`, `get_job`,
  `watch`, `wait_job`, `total`), drawers and rooms; the `Job`, `Drawer` and `Json` aliases.
- `events`: a reader of the event stream (`EventStream`, `Frame`); `auth`: the configured secret
  and the 401 check; `cli`: `memcastle` run piped or on a pseudo-terminal; `mcp_client`: the MCP
  client calls.
- `instants`: instants as the daemon writes them; `clock`: a settable clock for services built
  in-process; `files`: trees with exact modification times for the mining tests.
- `palace_services`, `search_palace`, `openapi`: services, a search palace and the OpenAPI
  document, built in-process.
- Stand-ins for what the daemon talks to: `embed_stub` (a command embedding provider),
  `endpoint` (a chat-completions endpoint), `redis_server`, `remote_surreal` (a SurrealDB server
  on the embedded engine) and `surreal_server` (which runs it).
"""
