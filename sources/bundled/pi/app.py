"""The `pi` source as a component: pi coding agent sessions.

The WIT glue only; what is read, and how, is `pi_format`, in plain Python.
"""

import memcastle_guest as guest
from pi_format import SOURCE

Adapter = guest.adapter_class(SOURCE)
