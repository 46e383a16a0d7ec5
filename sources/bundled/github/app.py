"""The `github` source as a component: GitHub issues and pull requests.

The WIT glue only: what is read, and how, is `github_issues`, in plain Python; `wasi_fetch`
makes its requests over `wasi:http` and asks the host for the sign-in's token.
"""

import memcastle_guest as guest
import wasi_fetch
from github_issues import GitHub

Adapter = guest.adapter_class(GitHub(fetch=wasi_fetch.fetch, token=wasi_fetch.access_token))
