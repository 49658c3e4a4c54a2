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
coerced (`get_variable_values`) and the arguments built (`get_argument_values`), except
where every argument is a variable whose value already has its coerced type (a `str` for
an ID or String, an `int` of 32 bits for an Int, None where null is allowed): coercion
would return those very values, so they are passed on as they are (`DirectArguments`,
~6 µs less per request); an error the read raises becomes the located error graphql-core would report, with the
same data. A document that does not have this shape gets no shortcut, and a value the
plans cannot complete exactly (a null in a non-null field, a value that does not
serialize) is left to graphql-core: `run` answers None and the caller executes the
document normally (the read runs again; reads change nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, cast

from graphql import (
    DocumentNode,
    ExecutionResult,
    FieldNode,
    GraphQLBoolean,
    GraphQLField,
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
    VariableNode,
    get_nullable_type,
    is_equal_type,
    located_error,
    type_from_ast,
)
from graphql.execution.values import VariableValues, get_argument_values, get_variable_values
from strawberry.schema.schema_converter import GraphQLCoreConverter

from graphql_schema.context import CampaignContext
from graphql_schema.execution import ORJSON_PLAIN_FIELDS, NotPlain, PlainField, complete_plain, has_directives
from graphql_schema.query import ROOT_READS, RootRead, selected_details

# Argument types whose value Strawberry hands to a resolver as graphql-core coerced it.
_UNCONVERTED_ARGUMENT_TYPES = (GraphQLID, GraphQLString, GraphQLInt, GraphQLBoolean)

# The Python type graphql-core's coercion of a variable's value returns that value
# unchanged for (an ID also takes an int, which it turns into a str: not this type).
_COERCED_AS_IS: dict[Any, type] = {GraphQLID: str, GraphQLString: str, GraphQLInt: int}
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_NOT_GIVEN = object()


@dataclass(frozen=True, slots=True)
class _DirectArgument:
    argument: str
    variable: str
    python_type: type
    nullable: bool


@dataclass(frozen=True, slots=True)
class DirectArguments:
    """A root field whose every argument is a variable of the same type (no defaults):
    its arguments straight from the variables when these are already coerced values."""

    arguments: tuple[_DirectArgument, ...]

    @classmethod
    def of(
        cls, schema: GraphQLSchema, field: GraphQLField, operation: OperationDefinitionNode, node: FieldNode
    ) -> DirectArguments | None:
        definitions = {
            definition.variable.name.value: definition for definition in operation.variable_definitions or ()
        }
        given = node.arguments or ()
        if len(given) != len(field.args) or len(definitions) != len(given):
            return None  # an argument left to its default, or a variable not passed on
        arguments = []
        for argument_node in given:
            argument = field.args.get(argument_node.name.value)
            value = argument_node.value
            if argument is None or not isinstance(value, VariableNode):
                return None
            definition = definitions.get(value.name.value)
            if definition is None or definition.default_value is not None:
                return None
            python_type = _COERCED_AS_IS.get(get_nullable_type(argument.type))
            variable_type = type_from_ast(schema, definition.type)
            if python_type is None or variable_type is None or not is_equal_type(variable_type, argument.type):
                return None
            nullable = not isinstance(argument.type, GraphQLNonNull)
            arguments.append(_DirectArgument(argument_node.name.value, value.name.value, python_type, nullable))
        return cls(tuple(arguments))

    def values(self, variables: dict[str, Any]) -> dict[str, Any] | None:
        """The arguments, when every variable is given as the value its coercion returns;
        None otherwise (then graphql-core coerces them)."""
        values = {}
        for direct in self.arguments:
            value: Any = variables.get(direct.variable, _NOT_GIVEN)
            if value is None:
                if not direct.nullable:
                    return None
            elif type(value) is not direct.python_type:
                return None  # a bool is an int, but not an Int's value
            elif direct.python_type is int and not _INT_MIN <= cast(int, value) <= _INT_MAX:
                return None
            values[direct.argument] = value
        return values


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
    direct: DirectArguments | None

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
            direct=DirectArguments.of(schema, field, operation, node),
        )

    async def run(self, *, variables: dict[str, Any], context: CampaignContext) -> ExecutionResult | None:
        """The document's result, as graphql-core's execution would give it; None where
        graphql-core must decide (variables that do not coerce, a value the plan cannot
        complete exactly)."""
        arguments = None if self.direct is None else self.direct.values(variables)
        coerced: VariableValues | None = None
        if arguments is None:
            variable_values = get_variable_values(self.schema, self.operation.variable_definitions or (), variables)
            if isinstance(variable_values, list):
                return None  # graphql-core reports the variables' errors
            coerced = variable_values
        try:
            if arguments is None:
                field = self.schema.query_type.fields[self.node.name.value]  # type: ignore[union-attr]
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
