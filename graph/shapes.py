"""The shapes of the knowledge graph's answers: entities, their mentions and candidates, the
assertions between them with their lifecycle, and the graph at a glance.

Each renders what a service answers and is what the OpenAPI document says of it (see
`kernel.shapes`); a shape explains itself in comments, since a docstring would become its
component's description.
"""

from __future__ import annotations

from rest_framework import serializers

from graph import lifecycle
from kernel.shapes import Shape
from palace.shapes import DrawerListing


class Entity(Shape):
    id = serializers.UUIDField()
    name = serializers.CharField(help_text="the canonical name, never rewritten")
    kind = serializers.CharField()
    aliases = serializers.ListField(
        child=serializers.CharField(), help_text="the other spellings it was seen under"
    )
    properties = serializers.DictField()
    created_at = serializers.DateTimeField()


class EntityRef(Shape):
    id = serializers.UUIDField()
    name = serializers.CharField()
    kind = serializers.CharField()


class FactLink(Shape):
    # `from` is a Python keyword, so the field is declared by its name.
    locals()["from"] = serializers.UUIDField()
    to = serializers.UUIDField()
    kind = serializers.CharField(
        help_text="confirms, contradicts, supersedes, refines or invalidates"
    )
    origin = serializers.ChoiceField(list(lifecycle.ORIGINS))
    reason = serializers.CharField()
    at = serializers.DateTimeField()
    evidence = serializers.UUIDField(required=False, help_text="a drawer id")


class FactLifecycle(Shape):
    state = serializers.ChoiceField(list(lifecycle.STATES))
    links = serializers.ListField(child=FactLink())
    preferred = serializers.UUIDField(
        required=False, help_text="conflicting only: a ranking hint, never a verdict"
    )
    basis = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="the tie-break chain that chose `preferred`: explicit, confidence, "
        "valid_from, id",
    )


# Where an extractor read an assertion or a mention (api.md "The knowledge graph").
class ExtractionProvenance(Shape):
    drawer = serializers.UUIDField(help_text="the drawer read")
    extractor = serializers.CharField()
    job_id = serializers.UUIDField(required=False, help_text="the extract job, when one read it")
    extracted_at = serializers.DateTimeField()
    # The drawer's mining origin, as its source describes it: free-form by design.
    origin = serializers.DictField(required=False, help_text="a mined drawer's document")


class Relationship(Shape):
    id = serializers.UUIDField()
    locals()["from"] = serializers.UUIDField(help_text="the subject entity")
    to = serializers.UUIDField(help_text="the object entity")
    predicate = serializers.CharField()
    confidence = serializers.FloatField()
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(allow_null=True)
    provenance = ExtractionProvenance(
        required=False, help_text="where an extractor read it; absent on asserted facts"
    )
    assertion = serializers.UUIDField(
        required=False, help_text="the checkpoint drawer that asserted it"
    )
    lifecycle = FactLifecycle()


class EntityList(Shape):
    entities = serializers.ListField(child=Entity())
    limit = serializers.IntegerField()


class EntityCounts(Shape):
    mentions = serializers.IntegerField()
    relationships = serializers.IntegerField()


class EntityShown(Entity):
    counts = EntityCounts()


class EntityRelationships(Shape):
    entity = Entity()
    as_of = serializers.DateTimeField(allow_null=True)
    include_expired = serializers.BooleanField()
    relationships = serializers.ListField(child=Relationship())
    entities = serializers.DictField(
        child=EntityRef(), help_text="the entities the relationships relate, by id"
    )


# How a name as a drawer wrote it was tied to the entity.
class Observation(Shape):
    name = serializers.CharField(help_text="the name as written")
    rule = serializers.CharField(help_text="exact, normalized, alias, typo or new")
    confidence = serializers.FloatField()


class Mention(Shape):
    drawer = DrawerListing()
    observation = Observation(help_text="{name (as written), rule, confidence}")
    provenance = ExtractionProvenance(required=False, help_text="absent on a person-made link")
    created_at = serializers.DateTimeField()


class EntityMentions(Shape):
    entity = Entity()
    mentions = serializers.ListField(child=Mention())


class EntityCandidate(Shape):
    entity = Entity()
    side = serializers.ChoiceField(["older", "newer"])
    similarity = serializers.FloatField()
    created_at = serializers.DateTimeField()


class EntityCandidates(Shape):
    entity = Entity()
    candidates = serializers.ListField(child=EntityCandidate())


class EntityAliased(Entity):
    created = serializers.BooleanField()


# The same answer when the spelling was recorded already (a 200): a name of its own in the
# OpenAPI document, rendered as `EntityAliased`.
class EntityAlreadyAliased(EntityAliased):
    pass


class MentionLinked(Shape):
    drawer = serializers.UUIDField()
    entity = Entity()
    observation = Observation()
    created = serializers.BooleanField()


# The same answer when the drawer mentioned the entity already (a 200), rendered as
# `MentionLinked`.
class MentionAlreadyLinked(MentionLinked):
    pass


class FactHistory(Shape):
    relationship = serializers.UUIDField()
    as_of = serializers.DateTimeField(allow_null=True)
    assertions = serializers.ListField(child=Relationship())
    entities = serializers.DictField(
        child=EntityRef(), help_text="the entities the relationships relate, by id"
    )


class GraphCounts(Shape):
    entities = serializers.IntegerField()
    relationships = serializers.IntegerField()
    mentions = serializers.IntegerField()
    fact_links = serializers.IntegerField()


class GraphTopEntity(Entity):
    relationships = serializers.IntegerField(help_text="relationships valid now")


class GraphNeighbour(Entity):
    distance = serializers.IntegerField(help_text="hops from the centre entity")


class GraphCentre(Entity):
    pass


# The graph at a glance (counts, top) or an entity's neighbourhood (entity, depth, as_of,
# entities, relationships, truncated): one shape for both, each field present in one of them.
class Graph(Shape):
    counts = GraphCounts(
        required=False, help_text="overview: entities, relationships, mentions, fact_links"
    )
    top = serializers.ListField(
        required=False,
        child=GraphTopEntity(),
        help_text="overview: the most connected entities, with relationships",
    )
    entity = GraphCentre(required=False)
    depth = serializers.IntegerField(required=False)
    as_of = serializers.DateTimeField(required=False, allow_null=True)
    entities = serializers.ListField(required=False, child=GraphNeighbour())
    relationships = serializers.ListField(required=False, child=Relationship())
    truncated = serializers.BooleanField(required=False)
