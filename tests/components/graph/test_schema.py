from __future__ import annotations

from components.graph.schema import GraphSchema


def test_text_rendering_shows_directions_and_types(ladybug_backend) -> None:
    text = ladybug_backend.schema().to_text()
    assert "(:Person)-[:WORKS_AT {since: INT64}]->(:Company) x2" in text
    assert "(:Company)-[:LOCATED_IN]->(:City) x1" in text
    assert "(:Person {id: STRING, name: STRING, age: INT64" in text
    assert "x4" in text
    assert "x4" not in ladybug_backend.schema().to_text(counts=False)


def test_json_round_trip(ladybug_backend) -> None:
    schema = ladybug_backend.schema()
    data = schema.to_json()
    assert data["node_count"] == 7 and data["relationship_count"] == 10
    again = GraphSchema.from_json(schema.dumps())
    assert again == schema
    assert again.triples() == schema.triples()


def test_has_triple_with_unlabelled_endpoints(ladybug_backend) -> None:
    schema = ladybug_backend.schema()
    assert schema.has_triple(None, "LIVES_IN", "City")
    assert schema.has_triple("Company", "LOCATED_IN", None)
    assert not schema.has_triple(None, "LIVES_IN", "Person")
    assert schema.property_type("WORKS_AT", "since") == "INT64"
    assert schema.property_type("Person", "salary") is None
