"""The integration installer behind `memcastle integration list|install|update|remove`.

A change is worked out whole before the first byte is written: the files and their content,
the agent's configuration files with MemCastle's entries put in (or taken out), the agent
commands to run. Every refusal (`agent_not_found`, `incompatible`, `conflict`,
`assets_missing`) therefore leaves everything as it was. The change is then made through a
journal and checked against the manifest it wrote; a step that fails, or a check that does not
hold, is put back step by step (`validation_failed`).
"""

from __future__ import annotations

import re
import shlex
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from functools import cached_property, partial
from pathlib import Path
from typing import Any

from kernel import __version__
from kernel.errors import InputInvalid
from sources.integrations.agents import AGENTS, Agent, Context, Edit, FileSpec, Plan, Registration
from sources.integrations.documents import (
    Block,
    Document,
    Entry,
    Format,
    Item,
    Key,
    read_text,
    umask,
    write_atomically,
)
from sources.integrations.errors import (
    AgentNotFound,
    AssetsMissing,
    Conflict,
    Incompatible,
    ValidationFailed,
)
from sources.integrations.manifest import NAME, EditRecord, FileRecord, Manifest, sha256
from sources.integrations.places import agents_dir, home_dir, integrations_assets

HOOK_SOURCE = Path(__file__).resolve().with_name("session_end.py")
ORIGINALS = "originals"
VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
PROBE_TIMEOUT_SECS = 10
COMMAND_TIMEOUT_SECS = 60


class State(StrEnum):
    NOT_INSTALLED = "not installed"
    INSTALLED = "installed"
    OUTDATED = "outdated"
    MODIFIED = "modified"
    INCOMPATIBLE = "incompatible"
    UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class Status:
    agent: str
    title: str
    state: State
    # The agent's version (when it can be asked), and MemCastle's that installed it.
    agent_version: str | None
    installed_version: str | None
    path: str
    detail: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "state": str(self.state)}


@dataclass(frozen=True)
class Found:
    """What this machine has of an agent."""

    config: Path
    version: tuple[int, ...] | None
    available: bool


@dataclass(frozen=True)
class Write:
    """A file's new content; `None` deletes it."""

    path: Path
    data: bytes | None
    mode: int | None = None


@dataclass(frozen=True)
class Change:
    """Everything one operation does, worked out before any of it is done."""

    writes: tuple[Write, ...]
    # Agent commands, each with the one that undoes it.
    runs: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    make_dirs: tuple[Path, ...] = ()
    remove_dirs: tuple[Path, ...] = ()


class CommandFailed(Exception):
    """An agent command exited with an error (or is not on PATH any more)."""


class Journal:
    """The steps of one change, each with the step that puts it back, undone in reverse."""

    def __init__(self, run: Callable[[Sequence[str]], None]) -> None:
        self._run = run
        self._undo: list[Callable[[], None]] = []

    def make_dir(self, path: Path) -> None:
        path.mkdir()
        self._undo.append(path.rmdir)

    def remove_dir(self, path: Path) -> None:
        """An empty directory MemCastle created; one the user has put files in stays."""
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
            self._undo.append(path.mkdir)

    def write(self, write: Write) -> None:
        try:
            before: bytes | None = write.path.read_bytes()
            mode: int | None = stat.S_IMODE(write.path.stat().st_mode)
        except FileNotFoundError:
            before, mode = None, None
        if before == write.data and (write.mode is None or write.mode == mode):
            return
        _put(write.path, write.data, write.mode)
        self._undo.append(partial(_put, write.path, before, mode))

    def run(self, argv: Sequence[str], undo: Sequence[str]) -> None:
        self._run(argv)
        self._undo.append(partial(self._run, undo))

    def undo(self) -> None:
        """Put back what was done; a step that cannot be put back does not stop the others."""
        for step in reversed(self._undo):
            try:
                step()
            except (OSError, CommandFailed, subprocess.SubprocessError):
                continue
        self._undo.clear()


def _put(path: Path, data: bytes | None, mode: int | None) -> None:
    if data is None:
        path.unlink(missing_ok=True)
    else:
        write_atomically(path, data, mode)


class Integrations:
    """Every agent's integration on one machine: its environment (HOME, the XDG variables,
    PATH, the agents' own variables), the daemon's URL and whether it wants a token, and the
    assets to install from."""

    def __init__(
        self,
        env: Mapping[str, str],
        *,
        url: str,
        auth: bool = False,
        assets: str | None = None,
        python: str = sys.executable,
        version: str = __version__,
    ) -> None:
        self.env = env
        self.url = url.rstrip("/")
        self.auth = auth
        self.explicit_assets = assets
        self.python = python
        self.version = version

    # Reading -------------------------------------------------------------------------------

    def statuses(self) -> list[Status]:
        return [self.status(agent) for agent in AGENTS]

    def status(self, agent_id: str) -> Status:
        agent = AGENTS[agent_id]
        found = self._find(agent)
        manifest = self._manifest(agent)

        def status(state: State, detail: str | None = None) -> Status:
            return Status(
                agent=agent.id,
                title=agent.title,
                state=state,
                agent_version=_dotted(found.version),
                installed_version=manifest.version if manifest else None,
                path=str(self._data(agent)),
                detail=detail,
            )

        if not found.available:
            return status(State.UNAVAILABLE, _missing(agent, found))
        if reason := _incompatibility(agent, found):
            return status(State.INCOMPATIBLE, reason)
        if manifest is None:
            return status(State.NOT_INSTALLED)
        if changes := self._changes(manifest):
            return status(State.MODIFIED, "; ".join(changes))
        if manifest.version != self.version:
            return status(State.OUTDATED, f"installed by MemCastle {manifest.version}")
        if self._stale(agent, manifest):
            return status(State.OUTDATED, "the assets or the daemon's address have changed")
        return status(State.INSTALLED)

    # Changing ------------------------------------------------------------------------------

    def install(self, agent_id: str) -> dict[str, Any]:
        """Install the integration; installing it again, unchanged, does nothing."""
        agent = AGENTS[agent_id]
        if self._manifest(agent) is not None:
            current = self.status(agent_id)
            if current.state is State.INSTALLED:
                return self._report(agent, changed=False)
            if current.state in (State.MODIFIED, State.OUTDATED):
                raise Conflict(
                    f"the {agent.title} integration is already installed ({current.state})",
                    help=f"update it with `memcastle integration update {agent.id}`",
                )
        return self._apply(agent, previous=None)

    def update(self, agent_id: str, *, force: bool = False) -> dict[str, Any]:
        """Bring the installation up to this version; hand edits make it refuse unless
        `force`, which overwrites them."""
        agent = AGENTS[agent_id]
        previous = self._manifest(agent)
        if previous is None:
            raise InputInvalid(
                "AGENT",
                f"{agent.id}: the {agent.title} integration is not installed",
                help=f"install it with `memcastle integration install {agent.id}`",
            )
        changes = self._changes(previous)
        if changes and not force:
            raise Conflict(
                f"the {agent.title} integration was changed by hand: {'; '.join(changes)}",
                help="keep the edits (and do not update), or overwrite them with --force",
            )
        return self._apply(agent, previous=previous)

    def remove(self, agent_id: str) -> dict[str, Any]:
        """Take out exactly what the installation added: a configuration file nobody touched
        since is put back byte for byte, any other loses MemCastle's entries only."""
        agent = AGENTS[agent_id]
        manifest = self._manifest(agent)
        if manifest is None:
            return {"agent": agent.id, "title": agent.title, "removed": False}
        registration = manifest.registration
        if registration is not None and self._which(registration.remove[0]) is None:
            raise AgentNotFound(
                f"`{registration.remove[0]}` is not on PATH: MemCastle's MCP registration can "
                f"only be removed through it",
            )
        data = self._data(agent)
        writes = [write for record in manifest.edits for write in _restore(data, record)]
        writes += [Write(Path(record.path), None) for record in manifest.files]
        writes.append(Write(data / NAME, None))
        registered = registration is not None and self._registered(registration) is not None
        runs = ((registration.remove, registration.add),) if registration and registered else ()
        # MemCastle's own directories go too, when nothing else is in them.
        dirs = {*map(Path, manifest.dirs), data / ORIGINALS, data}
        deepest_first = sorted(dirs, key=lambda path: len(path.parts), reverse=True)
        journal = self._commit(agent, Change(tuple(writes), runs, remove_dirs=tuple(deepest_first)))
        if (
            self._manifest(agent) is not None
            or any(Path(record.path).exists() for record in manifest.files)
            or (registration is not None and self._registered(registration) is not None)
        ):
            journal.undo()
            raise ValidationFailed(f"the {agent.title} integration was not removed")
        return {"agent": agent.id, "title": agent.title, "removed": True}

    # The plan of a change ------------------------------------------------------------------

    def _apply(self, agent: Agent, previous: Manifest | None) -> dict[str, Any]:
        found = self._find(agent)
        if not found.available:
            raise AgentNotFound(_missing(agent, found))
        if reason := _incompatibility(agent, found):
            raise Incompatible(reason)
        context = self._context(agent)
        plan = agent.plan(context)
        manifest, change = self._change(context, plan, previous)
        journal = self._commit(agent, change)
        if changes := self._changes(manifest):
            journal.undo()
            raise ValidationFailed(
                f"the {agent.title} integration did not hold once installed: {'; '.join(changes)}"
            )
        return self._report(agent, changed=True)

    def _change(self, c: Context, plan: Plan, previous: Manifest | None) -> tuple[Manifest, Change]:
        """The manifest of the installation `plan` makes, and the change that makes it."""
        writes: list[Write] = []
        files = []
        owned = {record.path for record in previous.files} if previous else set()
        for spec in plan.files:
            data, mode = self._file(c, spec)
            if str(spec.target) not in owned and _foreign(spec.target, c.data):
                raise Conflict(
                    f"{spec.target} exists and is not MemCastle's",
                    help=f"move {spec.target} away, then retry",
                )
            writes.append(Write(spec.target, data, mode))
            files.append(FileRecord(str(spec.target), sha256(data), mode))
        planned = {str(spec.target) for spec in plan.files}
        writes += [Write(Path(path), None) for path in owned - planned]

        before = {record.path: record for record in previous.edits} if previous else {}
        edits = []
        for index, edit in enumerate(plan.edits):
            record, edit_writes = self._edit(c, index, edit, before.get(str(edit.path)))
            edits.append(record)
            writes += edit_writes
        for path, record in before.items():
            if path not in {str(edit.path) for edit in plan.edits}:
                writes += _restore(c.data, record)

        runs = self._registration(plan.registration, previous)
        make_dirs = _missing_dirs(
            [write.path for write in writes if write.data is not None] + [c.data / NAME]
        )
        manifest = Manifest(
            agent=c.agent,
            version=self.version,
            files=tuple(files),
            edits=tuple(edits),
            registration=plan.registration,
            dirs=tuple(sorted({*(previous.dirs if previous else ()), *map(str, make_dirs)})),
        )
        writes.append(Write(c.data / NAME, manifest.dumps()))
        return manifest, Change(tuple(writes), runs, make_dirs=tuple(make_dirs))

    def _file(self, c: Context, spec: FileSpec) -> tuple[bytes, int]:
        if spec.asset is None:
            return HOOK_SOURCE.read_bytes(), 0o755 & ~umask()
        return c.asset(spec.asset).encode(), 0o644 & ~umask()

    def _edit(
        self, c: Context, index: int, edit: Edit, previous: EditRecord | None
    ) -> tuple[EditRecord, list[Write]]:
        """MemCastle's entries put in one configuration file (replacing the previous ones in
        place, so the user's own entries keep their positions), and how the file was before."""
        current = read_text(edit.path)
        document = Document(edit.path, edit.format, current)
        known = {_identity(entry) for entry in previous.entries} if previous else set()
        wanted = {_identity(entry) for entry in edit.entries}
        for entry in edit.entries:
            new = _identity(entry) not in known
            if new and isinstance(entry, Key) and document.find(entry) is not None:
                where = ".".join(entry.at)
                raise Conflict(
                    f"`{where}` is already in {edit.path}, and MemCastle did not put it there",
                    help=f"take `{where}` out of {edit.path} (MemCastle adds its own), then retry",
                )
        for entry in previous.entries if previous else ():
            if _identity(entry) not in wanted:
                document.drop(entry)
        for entry in edit.entries:
            document.put(entry)
        writes = [Write(edit.path, document.text().encode())]
        record = partial(EditRecord, str(edit.path), edit.format, edit.entries)
        if previous is not None:
            return record(previous.existed, previous.original), writes
        if current is None:
            return record(False, None), writes
        original = f"{ORIGINALS}/{index}-{edit.path.name}"
        writes.append(Write(c.data / original, current.encode(), _mode(edit.path)))
        return record(True, original), writes

    def _registration(
        self, wanted: Registration | None, previous: Manifest | None
    ) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
        """The agent commands that leave MCP registered as `wanted`: nothing when it already
        is; else the previous registration out (when it is there) and the new one in."""
        before = previous.registration if previous else None
        if wanted is not None and wanted == before and self._registered_as(wanted):
            return ()
        runs = []
        if before is not None and self._registered(before) is not None:
            runs.append((before.remove, before.add))
        if wanted is not None:
            if before is None and self._registered(wanted) is not None:
                raise Conflict(
                    f"{wanted.add[0]} already has an MCP server named `{wanted.at[-1]}`, which "
                    f"MemCastle did not register",
                    help=f"remove it with `{shlex.join(wanted.remove)}`, then retry",
                )
            runs.append((wanted.add, wanted.remove))
        return tuple(runs)

    def _commit(self, agent: Agent, change: Change) -> Journal:
        """Make the change; on any failure, put everything back and say what failed."""
        journal = Journal(self._run)
        try:
            for path in change.make_dirs:
                journal.make_dir(path)
            for argv, undo in change.runs:
                journal.run(argv, undo)
            for write in change.writes:
                journal.write(write)
            for path in change.remove_dirs:
                journal.remove_dir(path)
        except (OSError, CommandFailed, subprocess.SubprocessError) as exc:
            journal.undo()
            raise ValidationFailed(
                f"changing the {agent.title} integration failed, and was put back: {exc}"
            ) from exc
        return journal

    # What is on the disk -------------------------------------------------------------------

    def _changes(self, manifest: Manifest) -> list[str]:
        """How the disk differs from the manifest: hand edits since the installation."""
        problems = []
        for file in manifest.files:
            try:
                if sha256(Path(file.path).read_bytes()) != file.sha256:
                    problems.append(f"{file.path} was changed")
            except OSError:
                problems.append(f"{file.path} is missing")
        for record in manifest.edits:
            try:
                document = Document(Path(record.path), record.format, read_text(Path(record.path)))
                problems += [
                    f"MemCastle's {_describe(entry)} in {record.path} was changed or removed"
                    for entry in record.entries
                    if document.find(entry) != _expected(entry)
                ]
            except Conflict as exc:
                problems.append(exc.message)
        registration = manifest.registration
        if registration is not None and not self._registered_as(registration):
            problems.append(
                f"the MCP server registered with {registration.add[0]} was changed or removed"
            )
        return problems

    def _stale(self, agent: Agent, manifest: Manifest) -> bool:
        """Whether an installation now would put other things in place (other assets, another
        address of the daemon); unknown (False) when the assets cannot be read."""
        context = self._context(agent)
        try:
            planned, _ = self._change(context, agent.plan(context), manifest)
        except (AssetsMissing, Conflict):
            return False
        return not manifest.same_content(planned)

    def _registered(self, registration: Registration) -> Any | None:
        """The agent's entry for the MCP server, as its own file shows it."""
        try:
            document = Document(registration.probe, Format.JSON, read_text(registration.probe))
            return document.find(Key(registration.at, None))
        except Conflict:
            return None

    def _registered_as(self, registration: Registration) -> bool:
        found = self._registered(registration)
        return isinstance(found, dict) and found.get("url") == registration.value

    def _manifest(self, agent: Agent) -> Manifest | None:
        return Manifest.read(self._data(agent) / NAME)

    def _find(self, agent: Agent) -> Found:
        program = self._which(agent.program)
        config = agent.config_dir(self.env, home_dir(self.env))
        available = program is not None or (not agent.needs_program and config.is_dir())
        return Found(config, _version(program, self.env) if program else None, available)

    # The machine ---------------------------------------------------------------------------

    def _context(self, agent: Agent) -> Context:
        home = home_dir(self.env)
        return Context(
            agent=agent.id,
            home=home,
            data=self._data(agent),
            config=agent.config_dir(self.env, home),
            assets=self._assets / agent.id,
            url=self.url,
            python=self.python,
            env=self.env,
            auth=self.auth,
        )

    @cached_property
    def _assets(self) -> Path:
        return integrations_assets(self.explicit_assets, self.env)

    def _data(self, agent: Agent) -> Path:
        return agents_dir(self.env) / agent.id

    def _which(self, program: str) -> str | None:
        return shutil.which(program, path=self.env.get("PATH"))

    def _run(self, argv: Sequence[str]) -> None:
        program = self._which(argv[0])
        if program is None:
            raise CommandFailed(f"`{argv[0]}` is not on PATH")
        done = subprocess.run(
            [program, *argv[1:]],
            env=dict(self.env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_SECS,
            check=False,
        )
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip()[:500]
            raise CommandFailed(f"`{shlex.join(argv)}` exited with {done.returncode}: {said}")

    def _report(self, agent: Agent, *, changed: bool) -> dict[str, Any]:
        manifest = self._manifest(agent)
        assert manifest is not None
        return {
            "agent": agent.id,
            "title": agent.title,
            "state": str(State.INSTALLED),
            "version": manifest.version,
            "changed": changed,
            "path": str(self._data(agent)),
            "files": [record.path for record in manifest.files],
            "edited": [record.path for record in manifest.edits],
            "registered": shlex.join(manifest.registration.add) if manifest.registration else None,
            "notes": [*agent.notes, f"Restart {agent.title} to load the integration."],
        }


def _restore(data: Path, record: EditRecord) -> list[Write]:
    """The writes that take MemCastle's entries out of a configuration file: the copy of
    the file as it was, while the file is that copy with the entries put in and nothing
    else; else the file without the entries."""
    path = Path(record.path)
    current = read_text(path)
    writes = [Write(data / record.original, None)] if record.original else []
    if current is None:
        return writes
    original = read_text(data / record.original) if record.original else None
    if (original is not None or not record.existed) and current == _with(record, original):
        return [Write(path, original.encode() if original is not None else None), *writes]
    document = Document(path, record.format, current)
    for entry in record.entries:
        document.drop(entry)
    emptied = not record.existed and document.empty
    return [Write(path, None if emptied else document.text().encode()), *writes]


def _with(record: EditRecord, original: str | None) -> str | None:
    """The file MemCastle's entries make of `original`; None when that cannot be parsed."""
    try:
        document = Document(Path(record.path), record.format, original)
    except Conflict:
        return None
    for entry in record.entries:
        document.put(entry)
    return document.text()


def _identity(entry: Entry) -> tuple[str, ...]:
    """What makes an entry the same one across versions: its key, its list and owner."""
    if isinstance(entry, Block):
        return ("block",)
    return (*entry.at, entry.owner) if isinstance(entry, Item) else entry.at


def _expected(entry: Entry) -> Any:
    return entry.text if isinstance(entry, Block) else entry.value


def _describe(entry: Entry) -> str:
    if isinstance(entry, Block):
        return "instructions block"
    where = ".".join(entry.at)
    return f"entry in `{where}`" if isinstance(entry, Item) else f"`{where}`"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _foreign(target: Path, data: Path) -> bool:
    """A file in the way: one that exists outside MemCastle's own directory (inside it, a
    leftover of an installation whose manifest is gone is MemCastle's)."""
    return target.exists() and not target.is_relative_to(data)


def _missing_dirs(paths: Iterable[Path]) -> list[Path]:
    """The directories to create for `paths`, parents first."""
    missing: set[Path] = set()
    for path in paths:
        parent = path.parent
        while not parent.exists():
            missing.add(parent)
            parent = parent.parent
    return sorted(missing, key=lambda path: len(path.parts))


def _version(program: str, env: Mapping[str, str]) -> tuple[int, ...] | None:
    """The agent's version from `PROGRAM --version`; None when it cannot be told."""
    try:
        done = subprocess.run(
            [program, "--version"],
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_SECS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = VERSION.search(f"{done.stdout}\n{done.stderr}")
    return tuple(int(part or 0) for part in match.groups()) if match else None


def _dotted(version: tuple[int, ...] | None) -> str | None:
    return ".".join(map(str, version)) if version else None


def _incompatibility(agent: Agent, found: Found) -> str | None:
    """Why the agent's version is not supported; None when it is, or cannot be told."""
    version = found.version
    if version is None:
        return None
    if agent.minimum and version < agent.minimum:
        return f"{agent.title} {_dotted(version)} is older than {_dotted(agent.minimum)}"
    if agent.below and version >= agent.below:
        return f"{agent.title} {_dotted(version)} is not supported (below {_dotted(agent.below)})"
    return None


def _missing(agent: Agent, found: Found) -> str:
    if agent.needs_program:
        return f"{agent.title} was not found: `{agent.program}` is not on PATH"
    return (
        f"{agent.title} was not found: `{agent.program}` is not on PATH and {found.config} "
        f"does not exist"
    )
