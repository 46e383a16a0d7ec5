"""The `opencode` source as a component: opencode sessions, read by running the `opencode` CLI
through the host. The WIT glue only; what is asked and how it is read is `opencode_format`."""

from __future__ import annotations

import memcastle_guest as guest
from componentize_py_types import Err
from opencode_format import PROGRAM, OpencodeSource, Output, ProcessRefused
from wit_world.imports import host


def run(args: list[str]) -> Output:
    """`opencode` with `args`, no shell and no input; the host's refusal (the program is not
    installed, its output is past 16 MiB) is `ProcessRefused`."""
    try:
        finished = host.run_process(PROGRAM, args, None)
    except Err as refused:
        raise ProcessRefused(str(refused.value)) from None
    return Output(finished.status, bytes(finished.stdout), bytes(finished.stderr))


Adapter = guest.adapter_class(OpencodeSource(run))
