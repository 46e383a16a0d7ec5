"""The WebAssembly host: runs mining sources built as components of `memcastle:source@0.4.0`.

A component is compiled once per daemon and the compiled form kept on disk by the component's
digest, so the second start does not compile again (compiling a componentize-py component takes
5-6 s; loading the compiled form a few milliseconds). The digest of the `.wasm` is checked on every
load, so an altered file is never run.

Every call gets a fresh instance in a fresh store: nothing a source does in one call survives into
the next, and each call is capped in memory (`Store.set_limits`) and in time (epoch interruption:
a ticker advances the engine's epoch while calls are running, and a call whose deadline passes
traps). What a call may touch is its `Grant`: directories preopened read-only at their own path,
the programs `run-process` may start, whether `wasi:http` is linked, whether `access-token`
answers. WASI sockets stay denied (wasmtime grants no socket unless asked), so a granted network is
outgoing HTTP only.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import wasmtime
import wasmtime.component as wc

from kernel.errors import MemCastleError
from sources.adapters import SourceFailed

logger = logging.getLogger(__name__)

CONTRACT_PACKAGE = "memcastle:source"
CONTRACT_VERSION = "0.4.0"
ADAPTER_INTERFACE = f"{CONTRACT_PACKAGE}/adapter@{CONTRACT_VERSION}"
HOST_INTERFACE = f"{CONTRACT_PACKAGE}/host@{CONTRACT_VERSION}"
# Compiled forms are kept per wasmtime version: another one cannot load them.
WASMTIME_VERSION = importlib.metadata.version("wasmtime")
# What `run-process` hands back at most, per stream.
PROCESS_OUTPUT_CAP = 16 * 1024 * 1024
# The epoch advances this often while calls run: the granularity of the time cap.
TICK_SECS = 0.05
# What a trap's message keeps of the source's stderr.
STDERR_TAIL = 2000


class SourceTimeout(MemCastleError):
    code = "memcastle::source::timeout"
    help = (
        "the source took longer than its time limit in one call; raise "
        "mining.source_timeout_secs if it is slow rather than stuck"
    )


class PermissionDenied(MemCastleError):
    code = "memcastle::source::permission_denied"
    help = (
        "the source asked for something its manifest does not list under [permissions]; "
        "a new version of the source must ask for it, and installing it asks your consent"
    )


class ComponentUnusable(MemCastleError):
    """The file is not a component of this contract, or not the one installed."""

    status = 400
    code = "memcastle::source::incompatible"
    help = "reinstall the source from its package; `memcastle source show NAME` says why"


@dataclass(frozen=True)
class Grant:
    """What one call may use. The default grants nothing: what `normalize` runs with."""

    memory_mib: int
    timeout_secs: float
    read_dirs: tuple[str, ...] = ()
    programs: tuple[str, ...] = ()
    # The environment of a program `run-process` starts: PATH, HOME and the listed variables.
    process_env: Mapping[str, str] = field(default_factory=dict)
    # The environment the source itself sees: HOME, so it can find `~/...` defaults.
    guest_env: Mapping[str, str] = field(default_factory=dict)
    network: bool = False
    access_token: Callable[[], str] | None = None


class _Ticker:
    """Advances the engine's epoch while at least one call is running, and sleeps otherwise,
    so an idle daemon pays nothing for the time cap."""

    def __init__(self, engine: wasmtime.Engine) -> None:
        self._engine = engine
        self._running = 0
        self._condition = threading.Condition()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> None:
        with self._condition:
            self._running += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._tick, name="wasm-epoch", daemon=True)
                self._thread.start()
            self._condition.notify()

    def __exit__(self, *exc: object) -> None:
        with self._condition:
            self._running -= 1

    def _tick(self) -> None:
        while True:
            with self._condition:
                while self._running == 0:
                    self._condition.wait()
            time.sleep(TICK_SECS)
            self._engine.increment_epoch()


def record(fields: Mapping[str, Any]) -> wc.Record:
    """A WIT record as wasmtime takes it: an object whose attributes are the fields, named as
    in the WIT file (`external-id`)."""
    made = wc.Record()
    for name, value in fields.items():
        setattr(made, name, value)
    return made


class Call:
    """One call of an export: the host imports it made, and what they were refused."""

    def __init__(self, grant: Grant) -> None:
        self.grant = grant
        self.denied: str | None = None
        self.stderr = bytearray()

    def run_process(self, program: str, args: Sequence[str], stdin: bytes | None) -> Any:
        if program not in self.grant.programs:
            self.denied = f"it ran {program!r}, a program its manifest does not list"
            return f"{program!r} is not a program this source may run"
        resolved = shutil.which(program, path=self.grant.process_env.get("PATH"))
        if resolved is None:
            return f"{program!r} is not installed (not found on PATH)"
        try:
            finished = subprocess.run(
                [resolved, *args],
                input=bytes(stdin) if stdin is not None else None,
                stdin=None if stdin is not None else subprocess.DEVNULL,
                capture_output=True,
                env=dict(self.grant.process_env),
                timeout=self.grant.timeout_secs,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"{program!r} ran longer than the source's time limit"
        except OSError as exc:
            return f"{program!r} could not be started: {exc.strerror}"
        if len(finished.stdout) > PROCESS_OUTPUT_CAP or len(finished.stderr) > PROCESS_OUTPUT_CAP:
            return f"{program!r} wrote more than 16 MiB"
        return record(
            {
                "status": finished.returncode if finished.returncode >= 0 else -1,
                "stdout": finished.stdout,
                "stderr": finished.stderr,
            }
        )

    def access_token(self) -> Any:
        if self.grant.access_token is None:
            self.denied = "it asked for an access token, and its manifest declares no sign-in"
            return wc.Variant("err", "this source declares no sign-in")
        try:
            return wc.Variant("ok", self.grant.access_token())
        except MemCastleError as exc:
            return wc.Variant("err", exc.message)

    def write_stderr(self, data: bytes) -> None:
        self.stderr.extend(data)
        del self.stderr[: -STDERR_TAIL * 2]


class Component:
    """One compiled component, ready to be instantiated per call."""

    def __init__(self, runtime: ComponentRuntime, compiled: wc.Component, digest: str) -> None:
        self._runtime = runtime
        self._compiled = compiled
        self.digest = digest
        adapter = compiled.get_export_index(ADAPTER_INTERFACE)
        if adapter is None:
            raise ComponentUnusable(
                f"the component exports no `{ADAPTER_INTERFACE}`: it was not built for the "
                f"`{CONTRACT_PACKAGE}` contract {CONTRACT_VERSION}"
            )
        self._linkers: dict[tuple[bool, bool], wc.Linker] = {}
        # The `wasi:http/outgoing-handler` a networked source imports, by its versioned name.
        self._http_handler = next(
            (
                name
                for name in compiled.type.imports(runtime.engine)
                if name.startswith("wasi:http/outgoing-handler@")
            ),
            None,
        )
        self._exports: dict[str, Any] = {}
        for name in ("identify", "default-wing", "default-room", "discover", "read", "normalize"):
            index = compiled.get_export_index(name, adapter)
            if index is None:
                raise ComponentUnusable(f"the component's adapter has no `{name}` export")
            self._exports[name] = index

    def call(self, grant: Grant, export: str, *args: Any) -> Any:
        """Call `export` in a fresh instance under `grant`. A trap, a time-out or a refused
        import fails with its own error; what the export returns is handed back as wasmtime
        gives it (records, variants, lists)."""
        call = Call(grant)
        store = wasmtime.Store(self._runtime.engine)
        store.set_limits(memory_size=grant.memory_mib * 1024 * 1024)
        wasi = wasmtime.WasiConfig()
        wasi.env = sorted(grant.guest_env.items())
        wasi.stderr_custom = call.write_stderr
        for directory in grant.read_dirs:
            wasi.preopen_dir(directory, directory, False)
        store.set_wasi(wasi)
        deny_http = not grant.network and self._http_handler is not None
        if grant.network or deny_http:
            store.set_wasi_http()
        store.set_epoch_deadline(max(1, round(grant.timeout_secs / TICK_SECS)))
        linker = self._linker(network=grant.network, deny_http=deny_http)
        _current.call = call
        with self._runtime.ticking:
            try:
                instance = linker.instantiate(store, self._compiled)
                func = instance.get_func(store, self._exports[export])
                if func is None:
                    raise ComponentUnusable(f"the component's `{export}` is not a function")
                result = func(store, *args)
                func.post_return(store)
            except wasmtime.WasmtimeError as exc:
                raise _trap(exc, call, grant) from None
            finally:
                _current.call = None
        if call.denied is not None:
            raise PermissionDenied(f"the source was stopped: {call.denied}")
        return result

    def check_imports(self, *, network: bool) -> None:
        """Refuse a component that imports what this host does not give it under its
        manifest's grant (`wasi:http` without the network, another contract's `host`), at
        install rather than at its first call."""
        store = wasmtime.Store(self._runtime.engine)
        store.set_wasi(wasmtime.WasiConfig())
        if network:
            store.set_wasi_http()
        store.set_epoch_deadline(max(1, round(5 / TICK_SECS)))
        try:
            with self._runtime.ticking:
                self._linker(network=network).instantiate(store, self._compiled)
        except wasmtime.WasmtimeError as exc:
            first = str(exc).strip().splitlines()[0]
            grant = "" if network else " (its manifest does not ask for the network)"
            raise ComponentUnusable(
                f"the component imports what this host does not give it{grant}: {first}"
            ) from None

    def _linker(self, *, network: bool, deny_http: bool = False) -> wc.Linker:
        """A linker with WASI, `wasi:http` when the network is granted, and the host imports,
        built once per component: its functions answer for the call whose store runs them.

        With `deny_http`, `wasi:http` is linked with its `handle` replaced by one that stops the
        call: a networked source imports it, so its calls granted no network (`normalize`,
        `default-wing`) could not be instantiated without it, and may build a request but not
        send one. The replacement is defined under the name the component imports: when that
        is not the name `add_wasi_http` defines, the instance holds `handle` alone and the
        component is refused at instantiation, never given the real one."""
        with self._runtime.lock:
            linker = self._linkers.get((network, deny_http))
            if linker is None:
                linker = wc.Linker(self._runtime.engine)
                linker.add_wasip2()
                if network or deny_http:
                    linker.add_wasi_http()
                linker.allow_shadowing = deny_http
                with linker.root() as root:
                    with root.add_instance(HOST_INTERFACE) as host:
                        host.add_func("run-process", _run_process)
                        host.add_func("access-token", _access_token)
                    if deny_http and self._http_handler is not None:
                        with root.add_instance(self._http_handler) as handler:
                            handler.add_func("handle", _deny_request)
                self._linkers[network, deny_http] = linker
            return linker


# The call a host import answers for: an export runs on the thread that called it, and its
# imports are called back on that thread.
_current = threading.local()


def _run_process(_store: Any, program: str, args: Sequence[str], stdin: bytes | None) -> Any:
    call: Call = _current.call
    return call.run_process(program, args, stdin)


def _access_token(_store: Any) -> Any:
    call: Call = _current.call
    return call.access_token()


def _deny_request(_store: Any, _request: Any, _options: Any) -> Any:
    raise PermissionDenied(
        "the source was stopped: it made an HTTP request in a call granted no network "
        "(`normalize`, `default-wing` and `default-room` are granted nothing)"
    )


def _trap(exc: wasmtime.WasmtimeError, call: Call, grant: Grant) -> MemCastleError:
    cause = str(exc).split("Caused by:")[-1].strip()
    if call.denied is not None:
        return PermissionDenied(f"the source was stopped: {call.denied}")
    if "interrupt" in cause:
        return SourceTimeout(f"the source ran longer than {grant.timeout_secs:g} s in one call")
    said = bytes(call.stderr).decode("utf-8", "replace").strip()[-STDERR_TAIL:]
    if "MemoryError" in said:
        return SourceFailed(f"the source ran out of memory (its cap is {grant.memory_mib} MiB)")
    detail = f"; it wrote: {said}" if said else ""
    return SourceFailed(f"the source trapped ({cause.splitlines()[0]}){detail}")


class ComponentRuntime:
    """One engine for the daemon, and the components it has loaded, by digest."""

    def __init__(self, cache_dir: Path) -> None:
        config = wasmtime.Config()
        config.epoch_interruption = True
        self.engine = wasmtime.Engine(config)
        self.ticking = _Ticker(self.engine)
        self._cache_dir = cache_dir
        self._loaded: dict[str, Component] = {}
        self.lock = threading.RLock()

    def load(self, wasm: Path, digest: str) -> Component:
        """The component in `wasm`, whose SHA-256 must be `digest`."""
        try:
            data = wasm.read_bytes()
        except OSError as exc:
            raise ComponentUnusable(
                f"its component {wasm} cannot be read: {exc.strerror}"
            ) from None
        actual = hashlib.sha256(data).hexdigest()
        if actual != digest:
            raise ComponentUnusable(
                f"its component {wasm} was altered after it was installed "
                f"(SHA-256 {actual}, installed {digest})"
            )
        with self.lock:
            loaded = self._loaded.get(digest)
            if loaded is None:
                loaded = Component(self, self._compile(data, digest), digest)
                self._loaded[digest] = loaded
            return loaded

    def _compile(self, data: bytes, digest: str) -> wc.Component:
        cached = self._cache_dir / f"{digest}.wasmtime-{WASMTIME_VERSION}.cwasm"
        if cached.is_file():
            try:
                return wc.Component.deserialize_file(self.engine, str(cached))
            except wasmtime.WasmtimeError:
                cached.unlink(missing_ok=True)
        logger.info("compiling the component %s, on its first use", digest)
        try:
            compiled = wc.Component(self.engine, data)
        except wasmtime.WasmtimeError as exc:
            first = str(exc).strip().splitlines()[0]
            raise ComponentUnusable(f"the file is not a WebAssembly component: {first}") from None
        self._cache_dir.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(f".{os.getpid()}.partial")
        partial.write_bytes(compiled.serialize())
        partial.replace(cached)
        return compiled
