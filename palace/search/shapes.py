"""The shapes of search and recall answers.

Each renders what a service answers and is what the OpenAPI document says of it (see
`kernel.shapes`); a shape explains itself in comments, since a docstring would become its
component's description.
"""

from __future__ import annotations

from rest_framework import serializers

from kernel.shapes import Shape
from palace.shapes import Drawer


# A hit is the stored drawer verbatim with what ranked it (api.md "Searching").
class SearchHit(Drawer):
    score = serializers.FloatField(help_text="comparable only within one response")
    signals = serializers.DictField(
        child=serializers.FloatField(), required=False, help_text="each leg's own score"
    )
    via = serializers.ListField(child=serializers.CharField(), required=False)


class SearchResults(Shape):
    query = serializers.CharField()
    ranking = serializers.ChoiceField(["lexical", "semantic", "hybrid"])
    profile = serializers.CharField(allow_null=True)
    # "current", "all", {"as_of": t} or {"between": {"from": t1, "until": t2}}.
    temporal = serializers.JSONField()
    results = serializers.ListField(child=SearchHit())
