"""`/ui`: the dashboard's files, when `web.enable` is set.

Disabled, nothing is there: the path is an unknown route like any other (a 404, or the token
gate's 401 when authentication is on). Enabled without its files (a broken install), the daemon
still serves the API and `/ui` answers 503 saying how to get them back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from kernel.rest import handler404
from web.files import DIST, DashboardFiles

logger = logging.getLogger("memcastle.web")

MISSING = (
    "<!doctype html><title>MemCastle</title>"
    "<p>The dashboard's files are not installed: reinstall MemCastle "
    "(<code>pip install --force-reinstall memcastle</code>, or <code>make run</code> in a "
    "checkout). The REST API and MCP are unaffected.</p>"
)


def dashboard(*, web_enabled: bool, root: Path = DIST) -> Callable[..., HttpResponse]:
    """The view of `/ui` and everything under it, on the files read once here."""
    files = DashboardFiles(root) if web_enabled else None
    if files is not None and not files.installed:
        logger.warning("web.enable is set but the dashboard's files are missing from %s", root)

    def view(request: HttpRequest, path: str | None = None) -> HttpResponse:
        if files is None or request.method not in ("GET", "HEAD"):
            return handler404(request)
        if not files.installed:
            return HttpResponse(MISSING, status=503, content_type="text/html; charset=utf-8")
        if path is None:
            # `/ui` itself: the page's address is the directory, as its links expect.
            return HttpResponseRedirect("/ui/")
        asset = files.get(path or "")
        if asset is None:
            return handler404(request)
        response = HttpResponse(asset.body, content_type=asset.content_type)
        # Revalidated on every load, so an upgraded daemon never runs yesterday's script.
        response["Cache-Control"] = "no-cache"
        response["X-Content-Type-Options"] = "nosniff"
        response["Content-Security-Policy"] = files.content_security_policy
        response["Referrer-Policy"] = "no-referrer"
        return response

    return view
