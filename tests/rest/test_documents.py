"""The fixed GraphQL documents of rest/documents.py: valid, and each used by its route.

A REST body is the document's data as is, so the response keys a document selects must
be exactly the fields of the endpoint's documented (OpenAPI) model; a record's, in the
order whose bytes the write path digests (engine/public_body.py).
"""

from __future__ import annotations

import typing

import graphql
import pytest
from graphql.language import FieldNode, OperationDefinitionNode, SelectionSetNode
from pydantic import BaseModel

from engine.public_body import BODY_FIELDS
from graphql_schema.schema import build_schema
from rest import documents
from rest.routes import CHANGES, RESOURCES, Listing, Resource

DOCUMENTS = {
    name: value
    for name, value in vars(documents).items()
    if name.isupper() and not name.startswith("_") and isinstance(value, str)
}
SCHEMA = build_schema()


def operation_of(document: str) -> OperationDefinitionNode:
    (definition,) = graphql.parse(document).definitions
    assert isinstance(definition, OperationDefinitionNode)
    return definition


def fields_of(selection_set: SelectionSetNode | None) -> dict[str, FieldNode]:
    """Response key (alias or name) -> field node, for a selection set without fragments."""
    assert selection_set is not None
    fields = {}
    for selection in selection_set.selections:
        assert isinstance(selection, FieldNode)
        key = selection.alias.value if selection.alias else selection.name.value
        fields[key] = selection
    return fields


def root_field(document: str) -> FieldNode:
    (field,) = fields_of(operation_of(document).selection_set).values()
    return field


def variables_of(document: str) -> set[str]:
    return {variable.variable.name.value for variable in operation_of(document).variable_definitions}


def item_model(list_model: type[BaseModel]) -> type[BaseModel]:
    (item,) = typing.get_args(list_model.model_fields["data"].annotation)
    return item  # type: ignore[no-any-return]


def test_there_is_a_list_record_and_tag_document_per_resource_and_one_for_the_feed() -> None:
    assert len(DOCUMENTS) == 3 * len(RESOURCES) + 1 == 16


# The schema as published (its SDL), so that the check needs no private Strawberry attribute.
PUBLISHED_SCHEMA = graphql.build_schema(SCHEMA.as_str())


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_document_validates_against_the_schema(name: str) -> None:
    assert graphql.validate(PUBLISHED_SCHEMA, graphql.parse(DOCUMENTS[name])) == []


@pytest.mark.parametrize("resource", RESOURCES, ids=[resource.path for resource in RESOURCES])
class TestRouteDocuments:
    def test_the_route_uses_the_documents_named_after_it(self, resource: Resource) -> None:
        assert resource.list_document is DOCUMENTS[f"{resource.path.upper()}_LIST"]
        assert resource.record_document is DOCUMENTS[f"{resource.record_field.upper()}_RECORD"]
        assert resource.tag_document is DOCUMENTS[f"{resource.record_field.upper()}_TAG"]

    def test_the_list_document_selects_the_list_body(self, resource: Resource) -> None:
        assert_selects_the_list_body(resource.listing)

    def test_the_record_document_selects_the_record_body_then_its_tag(self, resource: Resource) -> None:
        field = root_field(resource.record_document)
        assert field.name.value == resource.record_field
        assert variables_of(resource.record_document) == {"id"}
        assert list(fields_of(field.selection_set)) == [*resource.record_model.model_fields, "etag"]

    def test_the_record_body_is_the_one_the_write_path_digests(self, resource: Resource) -> None:
        record_type = resource.record_field
        selected = list(fields_of(root_field(resource.record_document).selection_set))
        assert selected == [*BODY_FIELDS[record_type], "etag"]

    def test_the_tag_document_looks_the_record_up_alike_and_selects_its_tag(self, resource: Resource) -> None:
        field = root_field(resource.tag_document)
        assert field.name.value == resource.record_field
        assert variables_of(resource.tag_document) == {"id"}
        assert list(fields_of(field.selection_set)) == ["etag"]


def assert_selects_the_list_body(listing: Listing) -> None:
    field = root_field(listing.document)
    assert field.name.value == listing.field
    assert variables_of(listing.document) == {"limit", "cursor"}
    body = fields_of(field.selection_set)
    assert set(body) == {"data", "pagination"}
    assert list(fields_of(body["data"].selection_set)) == list(item_model(listing.model).model_fields)
    assert set(fields_of(body["pagination"].selection_set)) == {"next_cursor", "has_more"}


def test_the_feed_document_selects_the_feed_body() -> None:
    assert CHANGES.document is DOCUMENTS["CHANGES_LIST"]
    assert_selects_the_list_body(CHANGES)


def test_every_document_is_used_by_exactly_one_route() -> None:
    used = [
        document
        for resource in RESOURCES
        for document in (resource.list_document, resource.record_document, resource.tag_document)
    ]
    assert sorted(map(id, [*used, CHANGES.document])) == sorted(map(id, DOCUMENTS.values()))
