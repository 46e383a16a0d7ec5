"""The ASGI application Daphne serves: the token gate in front of the protocol router."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memcastle_project.settings")

from channels.routing import ProtocolTypeRouter
from django.core.asgi import get_asgi_application

from memcastle_project.gate import TokenGate

application = TokenGate(ProtocolTypeRouter({"http": get_asgi_application()}))
