"""The MCP tool table: names, behaviour hints, arguments and the instructions made from them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcp_bridge.endpoint import host_name
from mcp_bridge.server import instructions, listing
from mcp_bridge.tools import TOOLS

# api.md "Tool annotations": (read_only, destructive, idempotent, open_world) for every tool.
# A tool without a row fails `test_every_tool_has_a_row`; a row without a tool fails too.
ANNOTATIONS = {
    "memcastle_status": (True, False, True, False),
    "memcastle_set_mode": (False, False, True, False),
    "memcastle_search": (True, False, True, True),
    "memcastle_recall": (True, False, True, True),
    "memcastle_history": (True, False, True, False),
    "memcastle_fact_history": (True, False, True, False),
    "memcastle_wake_up": (True, False, True, False),
    "memcastle_diary_write": (False, False, False, False),
    "memcastle_diary_read": (True, False, True, False),
    "memcastle_checkpoint": (False, True, False, False),
    "memcastle_mine": (False, False, True, True),
    "memcastle_audit": (False, False, False, False),
    "memcastle_repair": (False, True, False, False),
    "memcastle_job_list": (True, False, True, False),
    "memcastle_job_get": (True, False, True, False),
    "memcastle_job_pause": (False, False, True, False),
    "memcastle_job_resume": (False, False, True, False),
    "memcastle_job_cancel": (False, True, True, False),
    "memcastle_job_force_cancel": (False, True, True, False),
    "memcastle_job_retry": (False, False, True, False),
    "memcastle_miner_list": (True, False, True, False),
    "memcastle_miner_get": (True, False, True, False),
    "memcastle_trigger_list": (True, False, True, False),
    "memcastle_trigger_get": (True, False, True, False),
}


def test_every_tool_has_a_row() -> None:
    assert [tool.name for tool in TOOLS] == list(ANNOTATIONS)


@pytest.mark.parametrize("tool", TOOLS, ids=lambda tool: tool.name)
def test_annotations_are_explicit_and_pinned(tool) -> None:
    annotations = listing(tool).annotations
    assert annotations is not None
    assert annotations.title == tool.title and tool.title
    hints = (
        annotations.read_only_hint,
        annotations.destructive_hint,
        annotations.idempotent_hint,
        annotations.open_world_hint,
    )
    assert all(isinstance(hint, bool) for hint in hints), hints
    assert hints == ANNOTATIONS[tool.name]


def test_no_tool_for_what_agents_must_not_do() -> None:
    """api.md: no tool for hierarchy create/delete, supersede, tokens, sources, the database
    endpoint, extract, embed or the demo job; none may mention credentials."""
    forbidden = re.compile(
        r"create|delete|supersede|token|auth|oauth|sign|credential|source|database|db|"
        r"extract|embed|demo|install|shutdown"
    )
    for tool in TOOLS:
        assert not forbidden.search(tool.name), tool.name


@pytest.mark.parametrize("tool", TOOLS, ids=lambda tool: tool.name)
def test_input_schema_is_a_closed_object(tool) -> None:
    schema = tool.input_schema
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert set(schema.get("required", ())) <= set(schema["properties"])


def test_instructions_are_generated_from_the_tools() -> None:
    text = instructions(TOOLS)
    listed = re.findall(r"^- (memcastle_\w+): ", text, flags=re.MULTILINE)
    assert listed == [tool.name for tool in TOOLS]
    for tool in TOOLS:
        assert f"- {tool.name}: {tool.title}. {tool.description}" in text
    mentioned = set(re.findall(r"memcastle_\w+", text))
    assert mentioned == {tool.name for tool in TOOLS}, "only real tools are named"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (b"localhost:8420", "localhost"),
        (b"127.0.0.1", "127.0.0.1"),
        (b"[::1]:8420", "[::1]"),
        (b"LOCALHOST", "localhost"),
        (b"evil.example:8420", "evil.example"),
        (b"localhost.evil.example", "localhost.evil.example"),
    ],
)
def test_host_name(header: bytes, expected: str) -> None:
    assert host_name({"headers": [(b"host", header)]}) == expected


def test_no_host_header() -> None:
    assert host_name({"headers": []}) is None


def test_the_user_guide_lists_every_tool_with_its_hints() -> None:
    """docs/mcp.md's table cannot drift from the tools."""
    guide = (Path(__file__).resolve().parent.parent / "docs" / "mcp.md").read_text()
    rows = re.findall(
        r"^\| `(memcastle_\w+)` \| [^|]+ \| (yes|no) \| (yes|no) \| (yes|no) \| (yes|no) \|$",
        guide,
        flags=re.MULTILINE,
    )
    documented = {name: tuple(cell == "yes" for cell in cells) for name, *cells in rows}
    assert documented == ANNOTATIONS
