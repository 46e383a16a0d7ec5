"""The web dashboard at `/ui`: static files that are a pure client of the REST API."""
