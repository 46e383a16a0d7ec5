"""Shapes: the declared form of every answer, which both renders it and documents it.

A shape is a DRF serializer, so drf-spectacular documents it like any other, under its class's
name. It never converts anything: the services compute values the JSON renderer sends as they
are (DRF's field-by-field `to_representation` costs tens of microseconds an object), and
`Shape.render` makes the answer from them while checking it against the declaration. The
declaration is the truth: an answer with a key it does not declare, or without one it
requires, is a bug of the daemon, so it fails loudly instead of sending what the OpenAPI
document does not say.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from rest_framework import serializers

from kernel.errors import ServerFailed

logger = logging.getLogger(__name__)

# How a field holds a shape: one, a list of them, or a mapping of keys to them.
Holding = Literal["one", "list", "map"]


class ShapeMismatch(ServerFailed):
    """An answer that is not what its shape declares: the daemon's bug, never the client's.
    The client gets the usual server failure; the log says which shape and which keys."""

    def __init__(
        self, shape: str, *, undeclared: Iterable[str] = (), missing: Iterable[str] = ()
    ) -> None:
        super().__init__()
        self.shape = shape
        self.undeclared = sorted(undeclared)
        self.missing = sorted(missing)
        logger.error(
            "an answer does not match its shape %s: undeclared keys %s, missing required keys %s",
            shape,
            self.undeclared,
            self.missing,
        )


@dataclass(frozen=True, slots=True)
class _Form:
    """What `render` needs of a shape, worked out once from its declared fields."""

    fields: frozenset[str]
    required: frozenset[str]
    # Required but nullable, in declaration order: sent as null when the data lacks them.
    nullable: tuple[str, ...]
    nullable_set: frozenset[str]
    nested: tuple[tuple[str, type[Shape], Holding], ...]


def _holding(field: serializers.Field) -> tuple[type[Shape], Holding] | None:
    """The shape a field holds and how, or None for a field of plain values."""
    if isinstance(field, Shape):
        return type(field), "one"
    child = getattr(field, "child", None)
    if not isinstance(child, Shape):
        return None
    if isinstance(field, serializers.ListField | serializers.ListSerializer):
        return type(child), "list"
    if isinstance(field, serializers.DictField):
        return type(child), "map"
    return None


# The base of every shape: subclasses declare fields as on any DRF serializer.
# (A comment, not a docstring: drf-spectacular would give it to every component as its
# description. For the same reason a shape explains itself in comments.)
class Shape(serializers.Serializer):
    _form: ClassVar[_Form] = _Form(frozenset(), frozenset(), (), frozenset(), ())

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # DRF's metaclass has collected the declared fields, the inherited ones first.
        declared: dict[str, serializers.Field] = cls._declared_fields
        nested = []
        for name, field in declared.items():
            holding = _holding(field)
            if holding is not None:
                nested.append((name, *holding))
        nullable = tuple(
            name for name, field in declared.items() if field.required and field.allow_null
        )
        cls._form = _Form(
            fields=frozenset(declared),
            required=frozenset(name for name, field in declared.items() if field.required),
            nullable=nullable,
            nullable_set=frozenset(nullable),
            nested=tuple(nested),
        )

    @classmethod
    def render(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """The answer made of `data`: its keys in its order, the shapes it holds rendered in
        turn, and a required nullable field it lacks added as null (at the end). Raises
        `ShapeMismatch` for a key the shape does not declare or a required one it lacks."""
        form = cls._form
        keys = data.keys()
        if not form.fields.issuperset(keys):
            raise cls._mismatch(keys)
        # Every field present (the common case) needs no look at which are required.
        missing = (
            frozenset()
            if len(keys) == len(form.fields) or form.required <= keys
            else form.required - keys
        )
        if missing and not missing <= form.nullable_set:
            raise cls._mismatch(keys)
        answer = dict(data)
        for name, shape, holding in form.nested:
            value = answer.get(name)
            if value is None:
                continue
            if holding == "one":
                answer[name] = shape.render(value)
            elif holding == "list":
                answer[name] = [shape.render(item) for item in value]
            else:
                answer[name] = {key: shape.render(item) for key, item in value.items()}
        if missing:
            for name in form.nullable:
                if name in missing:
                    answer[name] = None
        return answer

    @classmethod
    def select(cls, record: Mapping[str, Any]) -> dict[str, Any]:
        """The fields of a stored record this shape declares, in the record's order. A record
        may hold what the daemon keeps for itself, or what an earlier version wrote: no answer
        shows it, and a read never fails on it."""
        fields = cls._form.fields
        return {key: value for key, value in record.items() if key in fields}

    @classmethod
    def _mismatch(cls, keys: Iterable[str]) -> ShapeMismatch:
        present = set(keys)
        return ShapeMismatch(
            cls.__name__,
            undeclared=present - cls._form.fields,
            missing=cls._form.required - cls._form.nullable_set - present,
        )


class Error(Shape):
    """The error body of every interface."""

    # Made by `MemCastleError.body`. The one shape with a docstring: it is the component's
    # description, as it always was.
    error = serializers.CharField(help_text="what failed")
    code = serializers.CharField(help_text="stable identifier, e.g. memcastle::mode::forbidden")
    help = serializers.CharField(help_text="what to do about it")
