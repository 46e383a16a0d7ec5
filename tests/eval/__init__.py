"""The retrieval benchmark: a judged dataset seeded into a real daemon over HTTP and scored.

It lives in the test tree, never in the shipped package, and is not a release gate: it says
how well the search engine ranks what clients get back (scope filters, fusion, time), measured
against a committed quality baseline. `docs/retrieval.md` says how to run it.
"""

TOOL_VERSION = "1"
