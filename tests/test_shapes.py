"""`Shape.render`: the answer is what the shape declares, in the order the service made it, or
the request fails as the daemon's bug (kernel/shapes.py)."""

from __future__ import annotations

import json
import logging

import pytest
from rest_framework import serializers

from kernel.errors import MemCastleError
from kernel.shapes import Error, Shape, ShapeMismatch


class Part(Shape):
    label = serializers.CharField()
    note = serializers.CharField(required=False)


class Whole(Shape):
    id = serializers.CharField()
    name = serializers.CharField(allow_null=True)
    ends = serializers.DateTimeField(allow_null=True)
    extra = serializers.CharField(required=False)
    part = Part()
    spare = Part(allow_null=True)
    parts = serializers.ListField(child=Part())
    by_key = serializers.DictField(child=Part(), required=False)
    free = serializers.DictField(required=False)


class Grown(Whole):
    created = serializers.BooleanField()


def whole(**changes: object) -> dict:
    data = {
        "parts": [{"label": "b"}],
        "id": "1",
        "name": "n",
        "ends": None,
        "part": {"note": "x", "label": "a"},
        "spare": None,
    }
    data.update(changes)
    return data


def test_the_keys_keep_the_order_the_data_has_them() -> None:
    data = whole()
    rendered = Whole.render(data)
    assert list(rendered) == ["parts", "id", "name", "ends", "part", "spare"]
    assert list(rendered["part"]) == ["note", "label"]
    assert json.dumps(rendered) == json.dumps(data)


def test_a_required_nullable_field_that_is_absent_is_sent_as_null_at_the_end() -> None:
    data = whole()
    del data["name"], data["ends"]
    rendered = Whole.render(data)
    assert list(rendered) == ["parts", "id", "part", "spare", "name", "ends"]
    assert rendered["name"] is None and rendered["ends"] is None


def test_an_optional_field_that_is_absent_stays_absent() -> None:
    rendered = Whole.render(whole())
    assert "extra" not in rendered and "by_key" not in rendered


def test_a_key_the_shape_does_not_declare_is_refused(caplog: pytest.LogCaptureFixture) -> None:
    with (
        caplog.at_level(logging.ERROR, logger="kernel.shapes"),
        pytest.raises(ShapeMismatch) as raised,
    ):
        Whole.render(whole(secret="s", dedup_head="h"))
    assert raised.value.shape == "Whole"
    assert raised.value.undeclared == ["dedup_head", "secret"]
    assert raised.value.missing == []
    assert "Whole" in caplog.text and "dedup_head" in caplog.text and "secret" in caplog.text


def test_a_required_field_that_is_absent_is_refused() -> None:
    data = whole()
    del data["id"], data["name"]
    with pytest.raises(ShapeMismatch) as raised:
        Whole.render(data)
    # `name` may be absent (it is sent as null); `id` may not.
    assert raised.value.missing == ["id"]


def test_a_mismatch_is_a_server_failure_that_names_nothing_to_the_client() -> None:
    with pytest.raises(ShapeMismatch) as raised:
        Whole.render(whole(secret="s"))
    error = raised.value
    assert isinstance(error, MemCastleError)
    assert error.status == 500
    assert error.body() == {
        "error": "the daemon failed to handle the request",
        "code": "memcastle::server::failed",
        "help": "retry the request; if it keeps failing, read the daemon log",
    }


def test_shapes_inside_are_rendered_and_checked_one_a_list_and_a_mapping() -> None:
    rendered = Whole.render(
        whole(spare={"label": "s"}, by_key={"k": {"label": "v"}}, free={"anything": [1, 2]})
    )
    assert rendered["spare"] == {"label": "s"}
    assert rendered["by_key"] == {"k": {"label": "v"}}
    assert rendered["free"] == {"anything": [1, 2]}
    for inner in (
        {"part": {"label": "a", "secret": 1}},
        {"spare": {"label": "a", "secret": 1}},
        {"parts": [{"label": "a"}, {"label": "b", "secret": 1}]},
        {"by_key": {"k": {"label": "v", "secret": 1}}},
    ):
        with pytest.raises(ShapeMismatch) as raised:
            Whole.render(whole(**inner))
        assert (raised.value.shape, raised.value.undeclared) == ("Part", ["secret"])
    with pytest.raises(ShapeMismatch) as raised:
        Whole.render(whole(parts=[{"note": "no label"}]))
    assert (raised.value.shape, raised.value.missing) == ("Part", ["label"])


def test_the_answer_is_a_new_object_and_the_data_is_left_as_it_was() -> None:
    data = whole()
    del data["name"]
    rendered = Whole.render(data)
    assert "name" not in data
    assert rendered is not data and rendered["part"] is not data["part"]


def test_rendering_a_rendered_answer_changes_nothing() -> None:
    once = Whole.render(whole(name=None))
    assert Whole.render(once) == once


def test_a_shape_that_extends_another_declares_its_fields_too() -> None:
    rendered = Grown.render({**whole(), "created": True})
    assert rendered["created"] is True
    with pytest.raises(ShapeMismatch):
        Whole.render({**whole(), "created": True})
    with pytest.raises(ShapeMismatch) as raised:
        Grown.render(whole())
    assert raised.value.missing == ["created"]


def test_the_error_body_is_what_its_shape_declares() -> None:
    body = MemCastleError("it failed", code="memcastle::x::y", help="do this").body()
    assert Error.render(body) == body
    assert list(Error.render(body)) == ["error", "code", "help"]


def test_select_keeps_what_a_stored_record_holds_of_the_shape_in_its_order() -> None:
    record = {"free": {}, "kept_for_lookups": 3, "id": "1", "written_long_ago": True, "name": None}
    assert list(Whole.select(record).items()) == [("free", {}), ("id", "1"), ("name", None)]
