"""A faster completion of plain fields, and of lists of flat objects above all.

graphql-core completes every field of every object on its own: resolve info, resolver
call, value completion, path bookkeeping. For a page of 100 rows of nine plain columns
that is most of a request's CPU. A plain field is a leaf (a scalar or enum, or
`__typename`) without arguments whose value is an attribute of its parent object, or the
result of a synchronous resolver that takes nothing but the parent (no info, arguments,
permissions or field extensions: the Markdown fields). Its result is the same when the
value is read and serialized, which is what this executor does: in one loop for the
items of a list whose every field is plain, field by field otherwise. Anything else (an
async resolver, a nested object, `@defer`, a null in a non-null field, a value that fails
to read or serialize) takes graphql-core's own path, so results and errors are unchanged.

`FixedDocumentExecutor` does the same for results whose data goes to `orjson.dumps` and
nowhere else (the REST documents, graphql_schema/prepared.py). There a UTC timestamp is
left as the `datetime` it is: serializing it (`datetime.isoformat`, about 1.3 µs) was the
largest single cost of a page of sessions, and orjson writes it in C, byte for byte as
the JSON string of its serialization.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any, ClassVar
from weakref import WeakKeyDictionary

from graphql import (
    GraphQLBoolean,
    GraphQLID,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLString,
    Node,
    OperationDefinitionNode,
    get_nullable_type,
    is_leaf_type,
)
from graphql.execution.collect_fields import CollectedFields, FieldDetailsList
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.schema.types.base_scalars import DateTimeDefinition

_TYPENAME = "__typename"


@dataclass(frozen=True, slots=True)
class PlainField:
    """How to produce a plain field's value from its parent object."""

    read: Callable[[Any], Any]  # the value, from the parent object
    serialize: Callable[[Any], Any]
    nullable: bool
    # A value of exactly this type is its own serialization (str for String and ID, bool
    # for Boolean: graphql-core's serializers return it unchanged), so no call is needed.
    passthrough: type | None = None
    # A value of exactly type `datetime` whose tzinfo is `datetime.UTC` is left for orjson
    # to encode (only in FixedDocumentExecutor, only for Strawberry's DateTime serializer).
    utc_datetime_as_is: bool = False


class NotPlain(Exception):
    """The fast path cannot produce graphql-core's exact result: take the normal one."""


_PASSTHROUGH: dict[Callable[[Any], Any], type] = {
    GraphQLString.serialize: str,
    GraphQLID.serialize: str,
    GraphQLBoolean.serialize: bool,
}

# Strawberry's DateTime serializer, `methodcaller("isoformat")` (its Date and Time scalars
# share the object; whatever the scalar, a `datetime` value's serialization is then
# `datetime.isoformat()`). For a UTC `datetime`, orjson's default encoding is that string:
# `YYYY-MM-DDTHH:MM:SS`, the year zero-padded to four digits, `.ffffff` only when the
# microseconds are not zero, then `+00:00` (tests/graphql_schema/test_orjson_data.py).
_DATETIME_SERIALIZE = DateTimeDefinition.serialize


class PlainFields:
    """What `_decide_plain_field` decided, per object type and field name, for one kind of
    executor: it depends only on the schema, which outlives many requests (and whose field
    names are a fixed set); keyed weakly so that a discarded schema's types are released."""

    def __init__(self, *, utc_datetimes_as_is: bool) -> None:
        self._utc_datetimes_as_is = utc_datetimes_as_is
        self._decided: WeakKeyDictionary[GraphQLObjectType, dict[str, PlainField | None]] = WeakKeyDictionary()

    def get(self, object_type: GraphQLObjectType, name: str) -> PlainField | None:
        decided = self._decided.get(object_type)
        if decided is None:
            decided = self._decided[object_type] = {}
        if name not in decided:
            decided[name] = _decide_plain_field(object_type, name, utc_datetimes_as_is=self._utc_datetimes_as_is)
        return decided[name]


def _decide_plain_field(object_type: GraphQLObjectType, name: str, *, utc_datetimes_as_is: bool) -> PlainField | None:
    if name == _TYPENAME:
        type_name = object_type.name
        return PlainField(lambda _parent: type_name, str, nullable=False, passthrough=str)
    field = object_type.fields.get(name)
    if field is None or field.args:
        return None
    leaf = get_nullable_type(field.type)
    definition = field.extensions.get(GraphQLCoreConverter.DEFINITION_BACKREF)
    if not is_leaf_type(leaf) or definition is None:
        return None
    read = _reader_of(field.resolve, definition)
    if read is None:
        return None
    serialize = leaf.serialize
    return PlainField(
        read,
        serialize,
        nullable=not isinstance(field.type, GraphQLNonNull),
        passthrough=_PASSTHROUGH.get(serialize),
        utc_datetime_as_is=utc_datetimes_as_is and serialize is _DATETIME_SERIALIZE,
    )


def _reader_of(resolve: Any, definition: Any) -> Callable[[Any], Any] | None:
    """How a field's value is read from its parent, when nothing else is involved."""
    # Strawberry marks the resolver of a field that only reads an attribute.
    if getattr(resolve, "_is_default", False):
        return attrgetter(definition.python_name)
    resolver = definition.base_resolver
    if (
        resolver is None
        or resolver.is_async
        or resolver.arguments
        or resolver.info_parameter is not None
        or resolver.root_parameter is not None
        or resolver.parent_parameter is not None
        or definition.extensions
        or definition.permission_classes
    ):
        return None
    # A method of the type called with the parent as `self`, as Strawberry calls it.
    return resolver.wrapped_func  # type: ignore[no-any-return]


def complete_plain(plan: list[tuple[str, PlainField]], items: list[Any], *, items_nullable: bool) -> list[Any]:
    # Flattened once per list: the inner loop runs for every field of every row.
    steps = [
        (key, field.read, field.passthrough, field.utc_datetime_as_is, field.serialize, field.nullable)
        for key, field in plan
    ]
    completed: list[Any] = []
    for item in items:
        if item is None:
            if not items_nullable:
                raise NotPlain
            completed.append(None)
            continue
        row: dict[str, Any] = {}
        for key, read, passthrough, utc_datetime_as_is, serialize, nullable in steps:
            try:
                value = read(item)
            except Exception as exc:  # graphql-core reports it with the field's path
                raise NotPlain from exc
            if value is None:
                if not nullable:
                    raise NotPlain
                row[key] = None
            elif type(value) is passthrough or (utc_datetime_as_is and type(value) is datetime and value.tzinfo is UTC):
                row[key] = value
            else:
                try:
                    row[key] = serialize(value)
                except Exception as exc:  # graphql-core reports it with the field's path
                    raise NotPlain from exc
        completed.append(row)
    return completed


# The plain fields of results whose data goes to `orjson.dumps` alone (UTC datetimes as is).
ORJSON_PLAIN_FIELDS = PlainFields(utc_datetimes_as_is=True)


class PlainFieldExecutor(StrawberryGraphQLCoreExecutionContext):
    _plain_fields: ClassVar[PlainFields] = PlainFields(utc_datetimes_as_is=False)

    def _flat_plan(self, item_type: GraphQLOutputType, field_details_list: Any) -> list[tuple[str, PlainField]] | None:
        object_type = get_nullable_type(item_type)
        if not isinstance(object_type, GraphQLObjectType) or object_type.is_type_of is not None:
            return None
        collected = self.collect_subfields(object_type, field_details_list)
        if collected.new_defer_usages:
            return None
        return self._object_plan(object_type, collected.grouped_field_set)

    def _object_plan(
        self, object_type: GraphQLObjectType, grouped_field_set: Any
    ) -> list[tuple[str, PlainField]] | None:
        """How to complete the selected fields of an object, if every one of them is plain."""
        plan: list[tuple[str, PlainField]] = []
        for response_key, details in grouped_field_set.items():
            field = self._plain_fields.get(object_type, details[0].node.name.value)
            if field is None:
                return None
            plan.append((response_key, field))
        return plan

    def execute_fields(
        self,
        parent_type: GraphQLObjectType,
        source_value: Any,
        path: Any,
        grouped_field_set: Any,
        position_context: Any,
    ) -> Any:
        # An object whose selected fields are all plain (a record of a REST document): all
        # of them in one loop, as an item of a flat list, rather than field by field.
        # Deferred delivery (a position context) keeps graphql-core's own path.
        if source_value is not None and position_context is None:
            plan = self._object_plan(parent_type, grouped_field_set)
            if plan is not None:
                try:
                    return complete_plain(plan, [source_value], items_nullable=False)[0]
                except NotPlain:
                    pass
        return super().execute_fields(parent_type, source_value, path, grouped_field_set, position_context)

    def execute_field(
        self,
        parent_type: GraphQLObjectType,
        source: Any,
        field_details_list: Any,
        path: Any,
        position_context: Any,
    ) -> Any:
        if source is not None:
            field = self._plain_fields.get(parent_type, field_details_list[0].node.name.value)
            if field is not None:
                try:
                    value = field.read(source)
                    if type(value) is field.passthrough or (
                        field.utc_datetime_as_is and type(value) is datetime and value.tzinfo is UTC
                    ):
                        return value
                    if value is not None:
                        return field.serialize(value)
                    if field.nullable:
                        return None
                except Exception:  # noqa: S110 (graphql-core's path reports it with the field's path)
                    pass
        return super().execute_field(parent_type, source, field_details_list, path, position_context)

    def complete_list_value(
        self,
        return_type: GraphQLList[GraphQLOutputType],
        field_details_list: Any,
        info: Any,
        path: Any,
        result: Any,
        position_context: Any,
    ) -> Any:
        if isinstance(result, list):
            plan = self._flat_plan(return_type.of_type, field_details_list)
            if plan is not None:
                try:
                    items_nullable = not isinstance(return_type.of_type, GraphQLNonNull)
                    return complete_plain(plan, result, items_nullable=items_nullable)
                except NotPlain:
                    pass
        return super().complete_list_value(return_type, field_details_list, info, path, result, position_context)


class FixedDocumentExecutor(PlainFieldExecutor):
    """The executor of fixed documents (graphql_schema/prepared.py, with `data_to_orjson`):
    parsed once when the process starts, run for many requests, their data handed to
    `orjson.dumps` (without options that change how it writes datetimes) and nothing else.

    - UTC `datetime` values stay `datetime`s in the result: the JSON is the same as with the
      serialized strings, but the data is not what GraphQL's result would be.
    - The fields of a selection are collected once, not per execution, for documents without
      directives or fragments (then nothing that collection looks at depends on variables),
      and so are their plain-field plans. Entries are keyed by the identity of the
      document's nodes and keep them, so a key cannot be reused; a fixed set of documents
      keeps the caches as small as their selections.
    """

    _plain_fields = ORJSON_PLAIN_FIELDS
    # (object type, ids of the field nodes) -> (the nodes, the collected subfields)
    _collected: ClassVar[dict[tuple[Any, ...], tuple[tuple[Any, ...], CollectedFields]]] = {}
    # id(a cached grouped field set) -> (that set, its plan, or None: not all plain)
    _plans: ClassVar[dict[int, tuple[Any, list[tuple[str, PlainField]] | None]]] = {}
    # id(operation) -> (the operation, whether its field collection is fixed)
    _fixed_operations: ClassVar[dict[int, tuple[OperationDefinitionNode, bool]]] = {}

    def _collection_is_fixed(self) -> bool:
        known = self._fixed_operations.get(id(self.operation))
        if known is None:
            fixed = not self.fragments and not has_directives(self.operation)
            known = self._fixed_operations[id(self.operation)] = (self.operation, fixed)
        return known[1]

    def collect_subfields(
        self, return_type: GraphQLObjectType, field_details_list: FieldDetailsList
    ) -> CollectedFields:
        if not self._collection_is_fixed():
            return super().collect_subfields(return_type, field_details_list)
        nodes = tuple(details.node for details in field_details_list)
        key = (return_type, *map(id, nodes))
        cached = self._collected.get(key)
        if cached is None:
            collected = super().collect_subfields(return_type, field_details_list)
            grouped = collected.grouped_field_set
            self._plans[id(grouped)] = (grouped, super()._object_plan(return_type, grouped))
            cached = self._collected[key] = (nodes, collected)
        return cached[1]

    def _object_plan(
        self, object_type: GraphQLObjectType, grouped_field_set: Any
    ) -> list[tuple[str, PlainField]] | None:
        cached = self._plans.get(id(grouped_field_set))
        if cached is not None and cached[0] is grouped_field_set:
            return cached[1]
        return super()._object_plan(object_type, grouped_field_set)


def has_directives(node: Node) -> bool:
    """Whether `node` or any node below it carries a directive."""
    if getattr(node, "directives", None):
        return True
    for key in node.keys:
        value = getattr(node, key, None)
        children = value if isinstance(value, tuple | list) else (value,)
        if any(isinstance(child, Node) and has_directives(child) for child in children):
            return True
    return False
