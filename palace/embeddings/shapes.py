"""The shapes of what the embedding service answers: an attached vector and a profile's
provenance (see `kernel.shapes`; a docstring would become a component's description)."""

from __future__ import annotations

from rest_framework import serializers

from kernel.shapes import Shape


# What is stored with every vector of a profile (`kernel.profiles.Profile.provenance`).
class EmbeddingProvenance(Shape):
    provider = serializers.ChoiceField(["local", "command", "http", "external"])
    model = serializers.CharField(allow_null=True)
    dimensions = serializers.IntegerField()
    pipeline = serializers.CharField()


class EmbeddingAttached(Shape):
    drawer = serializers.UUIDField()
    profile = serializers.CharField()
    dimensions = serializers.IntegerField()
    provenance = EmbeddingProvenance()
