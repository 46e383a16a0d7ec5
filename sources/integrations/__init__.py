"""MemCastle's integrations with coding agents (Claude Code, Codex CLI, opencode, pi): the
installer behind `memcastle integration`, the agents' descriptions, the session-end hook and the
assets installed from (`assets/<agent>/`)."""
