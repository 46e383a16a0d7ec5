"""The Django project on top of the apps: settings, URLs, the ASGI application, serving, the
composition root that builds the services, and the `memcastle` command line's shared plumbing."""
