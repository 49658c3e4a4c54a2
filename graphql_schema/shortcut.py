"""Fixed documents of one root field, answered without graphql-core's executor.

A REST document (graphql_schema/prepared.py) is one query of one root field whose
selection is plain fields, or objects and lists of objects of plain fields under their
default resolvers (rest/documents.py). Executing it with graphql-core costs more CPU
than its SQL: building an execution context and a publisher, collecting fields, a
resolve info, Strawberry's argument conversion and resolver wrapping, completing each
value, per request. Everything in that is decided by the document, so it is decided
once here: the root field's read (graphql_schema/query.py, ROOT_READS: the function its
resolver calls), which detail fields the selection asks for, and how to complete the
value (the plain-field plans of graphql_schema/execution.py).

Per request, what still depends on it runs as graphql-core runs it: the variables are
coerced (`get_variable_values`) and the arguments built (`get_argument_values`); an
error the read raises becomes the located error graphql-core would report, with the
same data. A document that does not have this shape gets no shortcut, and a value the
plans cannot complete exactly (a null in a non-null field, a value that does not
serialize) is left to graphql-core: `run` answers None and the caller executes the
document normally (the read runs again; reads change nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from graphql import (
    DocumentNode,
    ExecutionResult,
    FieldNode,
    GraphQLBoolean,
    GraphQLID,
    GraphQLInt,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLString,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    get_nullable_type,
    located_error,
)
from graphql.execution.values import get_argument_values, get_variable_values
from strawberry.schema.schema_converter import GraphQLCoreConverter

from graphql_schema.context import CampaignContext
from graphql_schema.execution import ORJSON_PLAIN_FIELDS, NotPlain, PlainField, complete_plain, has_directives
from graphql_schema.query import ROOT_READS, RootRead, selected_details

# Argument types whose value Strawberry hands to a resolver as graphql-core coerced it.
_UNCONVERTED_ARGUMENT_TYPES = (GraphQLID, GraphQLString, GraphQLInt, GraphQLBoolean)


@dataclass(frozen=True, slots=True)
class _Nested:
    """A selected field whose value is an object, or a list of objects, of plain fields."""

    key: str
    read: Callable[[Any], Any]
    nullable: bool
    plan: _ObjectPlan
    # None: a single object; else whether the list's items may be null.
    items_nullable: bool | None


@dataclass(frozen=True, slots=True)
class _ObjectPlan:
    """How to complete the selection of an object: all plain fields (one call), or each
    field in selection order."""

    plain: list[tuple[str, PlainField]] | None
    fields: tuple[tuple[str, PlainField] | _Nested, ...]

    def complete(self, source: Any) -> dict[str, Any]:
        if self.plain is not None:
            return complete_plain(self.plain, [source], items_nullable=False)[0]  # type: ignore[no-any-return]
        completed: dict[str, Any] = {}
        for field in self.fields:
            if isinstance(field, _Nested):
                completed[field.key] = _complete_nested(field, source)
            else:
                completed.update(complete_plain([field], [source], items_nullable=False)[0])
        return completed


def _complete_nested(field: _Nested, source: Any) -> Any:
    value = field.read(source)
    if value is None:
        if not field.nullable:
            raise NotPlain
        return None
    if field.items_nullable is None:
        return field.plan.complete(value)
    if not isinstance(value, list):
        raise NotPlain
    if field.plan.plain is not None:
        return complete_plain(field.plan.plain, value, items_nullable=field.items_nullable)
    completed: list[dict[str, Any] | None] = []
    for item in value:
        if item is None:
            if not field.items_nullable:
                raise NotPlain
            completed.append(None)
        else:
            completed.append(field.plan.complete(item))
    return completed


def _object_plan(object_type: GraphQLObjectType, selection_set: SelectionSetNode | None) -> _ObjectPlan | None:
    if selection_set is None or object_type.is_type_of is not None:
        return None
    fields: list[tuple[str, PlainField] | _Nested] = []
    keys: set[str] = set()
    for selection in selection_set.selections:
        if not isinstance(selection, FieldNode):
            return None
        key = selection.alias.value if selection.alias else selection.name.value
        if key in keys:  # merged selections: graphql-core's field collection decides
            return None
        keys.add(key)
        plain = ORJSON_PLAIN_FIELDS.get(object_type, selection.name.value)
        if plain is not None:
            if selection.selection_set is not None:
                return None
            fields.append((key, plain))
            continue
        nested = _nested_field(object_type, selection, key)
        if nested is None:
            return None
        fields.append(nested)
    all_plain = all(not isinstance(field, _Nested) for field in fields)
    plain_fields = [field for field in fields if not isinstance(field, _Nested)]
    return _ObjectPlan(plain=plain_fields if all_plain else None, fields=tuple(fields))


def _nested_field(parent_type: GraphQLObjectType, node: FieldNode, key: str) -> _Nested | None:
    """A field read by its default resolver whose value is an object or a list of them."""
    field = parent_type.fields.get(node.name.value)
    if field is None or field.args or not getattr(field.resolve, "_is_default", False):
        return None
    definition = field.extensions.get(GraphQLCoreConverter.DEFINITION_BACKREF)
    if definition is None or definition.extensions or definition.permission_classes:
        return None
    value_type = get_nullable_type(field.type)
    items_nullable = None
    if isinstance(value_type, GraphQLList):
        items_nullable = not isinstance(value_type.of_type, GraphQLNonNull)
        value_type = get_nullable_type(value_type.of_type)
    if not isinstance(value_type, GraphQLObjectType):
        return None
    plan = _object_plan(value_type, node.selection_set)
    if plan is None:
        return None
    return _Nested(
        key=key,
        read=attrgetter(definition.python_name),
        nullable=not isinstance(field.type, GraphQLNonNull),
        plan=plan,
        items_nullable=items_nullable,
    )


@dataclass(frozen=True, slots=True)
class RootFieldShortcut:
    """One document's root field: its read, its arguments, how to complete its value."""

    schema: GraphQLSchema
    operation: OperationDefinitionNode
    node: FieldNode
    read: RootRead
    details: frozenset[str]
    # The root field's value as a field of nothing: completed like any nested field.
    root: _Nested

    @classmethod
    def of(cls, schema: GraphQLSchema, document: DocumentNode) -> RootFieldShortcut | None:
        """The shortcut of a validated document, if it has the shape above."""
        operations = document.definitions
        if len(operations) != 1 or not isinstance(operations[0], OperationDefinitionNode):
            return None  # fragments, or several operations
        operation = operations[0]
        selections = operation.selection_set.selections
        if operation.operation != OperationType.QUERY or has_directives(operation) or len(selections) != 1:
            return None
        node = selections[0]
        query_type = schema.query_type
        if not isinstance(node, FieldNode) or query_type is None or node.name.value not in ROOT_READS:
            return None
        field = query_type.fields[node.name.value]
        definition = field.extensions.get(GraphQLCoreConverter.DEFINITION_BACKREF)
        # Field extensions and permissions run in Strawberry's resolver wrapper: not bypassed.
        if definition is None or definition.extensions or definition.permission_classes:
            return None
        for name, argument in field.args.items():
            strawberry_argument = argument.extensions.get(GraphQLCoreConverter.DEFINITION_BACKREF)
            if (
                strawberry_argument is None
                or strawberry_argument.python_name != name
                or get_nullable_type(argument.type) not in _UNCONVERTED_ARGUMENT_TYPES
            ):
                return None
        object_type = get_nullable_type(field.type)
        if not isinstance(object_type, GraphQLObjectType):
            return None
        plan = _object_plan(object_type, node.selection_set)
        if plan is None:
            return None
        root = _Nested(
            key=node.alias.value if node.alias else node.name.value,
            read=lambda value: value,
            nullable=not isinstance(field.type, GraphQLNonNull),
            plan=plan,
            items_nullable=None,
        )
        return cls(
            schema=schema,
            operation=operation,
            node=node,
            read=ROOT_READS[node.name.value],
            details=selected_details([node], {}),
            root=root,
        )

    async def run(self, *, variables: dict[str, Any], context: CampaignContext) -> ExecutionResult | None:
        """The document's result, as graphql-core's execution would give it; None where
        graphql-core must decide (variables that do not coerce, a value the plan cannot
        complete exactly)."""
        coerced = get_variable_values(self.schema, self.operation.variable_definitions or (), variables)
        if isinstance(coerced, list):
            return None  # graphql-core reports the variables' errors
        field = self.schema.query_type.fields[self.node.name.value]  # type: ignore[union-attr]
        try:
            arguments = get_argument_values(field, self.node, coerced)
            value = await self.read(context, self.details, **arguments)
        except Exception as exc:  # as graphql-core reports an error raised by a resolver
            key = self.root.key
            error = located_error(exc, [self.node], [key])
            return ExecutionResult(data={key: None} if self.root.nullable else None, errors=[error])
        try:
            return ExecutionResult(data={self.root.key: _complete_nested(self.root, value)})
        except NotPlain:
            return None
