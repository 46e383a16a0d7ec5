"""The shapes of search and recall answers, and of the search indexes in the status report.

Each renders what a service answers and is what the OpenAPI document says of it (see
`kernel.shapes`); a shape explains itself in comments, since a docstring would become its
component's description.
"""

from __future__ import annotations

from rest_framework import serializers

from kernel.shapes import Shape
from palace.search.preferences import LEVELS
from palace.shapes import Drawer


# The criterion of a source preference that set a hit's level, as configured (ADR-048).
class PreferenceCriterion(Shape):
    path = serializers.CharField(help_text="a dot-path into the origin's metadata")
    equals = serializers.JSONField(help_text="the JSON scalar found there")
    level = serializers.ChoiceField(LEVELS)


# How the source preferences leveled a hit; present only when a policy is set.
class PreferenceSignal(Shape):
    level = serializers.ChoiceField(LEVELS, help_text="the effective level")
    # Typed as DRF's `Field.source` to mypy, as `Drawer.source` is.
    source = serializers.CharField(  # type: ignore[assignment]
        required=False, help_text="the mining source (origin.source), when the drawer has one"
    )
    criterion = PreferenceCriterion(required=False)


# Each leg's own score, for the legs that found the hit, and the preference that leveled it.
class SearchSignals(Shape):
    lexical = serializers.FloatField(required=False, help_text="BM25")
    semantic = serializers.FloatField(required=False, help_text="cosine similarity")
    graph = serializers.FloatField(required=False, help_text="an expanded hit's graph signal")
    preference = PreferenceSignal(required=False)


# A hit is the stored drawer verbatim with what ranked it (api.md "Searching").
class SearchHit(Drawer):
    score = serializers.FloatField(help_text="comparable only within one response")
    signals = SearchSignals(required=False)
    via = serializers.ListField(child=serializers.CharField(), required=False)


class SearchResults(Shape):
    query = serializers.CharField()
    ranking = serializers.ChoiceField(["lexical", "semantic", "hybrid"])
    profile = serializers.CharField(allow_null=True)
    # "current", "all", {"as_of": t} or {"between": {"from": t1, "until": t2}}.
    temporal = serializers.JSONField()
    results = serializers.ListField(child=SearchHit())


# One shape for the three states of the indexes: the fields of each state are optional.
class SearchIndexStatus(Shape):
    state = serializers.CharField(help_text="rebuilding, catching_up or ready")
    drawers_read = serializers.IntegerField(required=False, help_text="rebuilding: read so far")
    of = serializers.IntegerField(required=False, help_text="rebuilding: drawers to read")
    changes_read = serializers.IntegerField(
        required=False, help_text="catching_up: changes read so far"
    )
    drawers = serializers.IntegerField(required=False, help_text="ready: drawers indexed")
    vectors = serializers.DictField(
        child=serializers.IntegerField(),
        required=False,
        help_text="ready: vectors indexed in each embedding profile",
    )
    watermark = serializers.IntegerField(
        required=False, help_text="ready: the change the indexes have read up to"
    )
    skipped = serializers.IntegerField(
        required=False,
        help_text="ready: changes passed over since the daemon started, each logged (its "
        "record is not searchable until the indexes are rebuilt)",
    )
