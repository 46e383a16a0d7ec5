"""The `claude` source as a component: Claude Code session transcripts.

The WIT glue only; what is read, and how, is `claude_format`, in plain Python.
"""

import memcastle_guest as guest
from claude_format import SOURCE

Adapter = guest.adapter_class(SOURCE)
