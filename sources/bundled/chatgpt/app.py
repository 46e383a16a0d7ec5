"""The `chatgpt` source as a component: the conversations of a ChatGPT data export.

The WIT glue only; what is read, and how, is `chatgpt_format`, in plain Python.
"""

import memcastle_guest as guest
from chatgpt_format import SOURCE

Adapter = guest.adapter_class(SOURCE)
