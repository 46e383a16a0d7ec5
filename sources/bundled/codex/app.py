"""The `codex` source as a component: Codex CLI rollouts.

The WIT glue only; what is read, and how, is `codex_format`, in plain Python.
"""

import memcastle_guest as guest
from codex_format import SOURCE

Adapter = guest.adapter_class(SOURCE)
