"""The work an operation may cause, estimated from its selection before it runs.

Depth, alias and token limits bound the size of a document, not its work: 30 aliases of
a 100-row page of sessions with their summaries are a small document that renders 3,000
Markdown summaries. Here each operation gets an estimate in points, from the selection
and the schema alone (no variable values, so the estimate is cached with the validation):

- every object the operation may return costs ROW_POINTS (a record, a page, its
  pagination), whatever its scalar fields;
- a record whose summary or description is rendered (any of its Markdown or text fields
  is selected) costs RENDER_POINTS more: rendering is the one costly step of a request,
  and its two fields come from one rendering;
- a list multiplies what one of its items costs by its size: the `limit` of the field that
  returns it (a literal, capped at MAX_LIMIT; a variable counts as MAX_LIMIT, since any
  value may be sent; absent or null, the argument's default), or MAX_LIMIT for a list
  without a limit. Nested lists multiply.
- introspection (`__schema`, `__type`) reads the schema in memory: each object field
  counts once, without list sizes. `__typename` is free.

An operation above MAX_COST is refused before execution with QUERY_TOO_COSTLY.
MAX_COST admits any single page of MAX_LIMIT records with every field of the record
(Markdown included), and little beyond.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    NullValueNode,
    OperationDefinitionNode,
    SchemaMetaFieldDef,
    SelectionSetNode,
    TypeMetaFieldDef,
    ValidationContext,
    ValidationRule,
    get_named_type,
    get_nullable_type,
)

from engine.errors import InvalidLimit
from engine.pagination import MAX_LIMIT, parse_limit
from graphql_schema.errors import RequestErrorCode
from graphql_schema.types import DESCRIPTION_FIELDS, SUMMARY_FIELDS

ROW_POINTS = 1
RENDER_POINTS = 100
# One page of MAX_LIMIT records with every field, Markdown included, costs 10,102 (a
# page, its pagination and 100 rendered records); the rest is room for a few nested ids.
MAX_COST = 12_000

LIMIT_ARGUMENT = "limit"
# Which rendering each Markdown field needs: a record's two fields of one text share it.
_RENDERS = {name: "summary" for name in SUMMARY_FIELDS} | {name: "description" for name in DESCRIPTION_FIELDS}
# The root fields of introspection, which no object type lists among its fields.
_META_FIELDS = {"__schema": SchemaMetaFieldDef, "__type": TypeMetaFieldDef}


@dataclass(slots=True)
class _Cost:
    """What a selection set costs for one object: its fields, and the renderings it needs."""

    points: int = 0
    renders: set[str] = field(default_factory=set)

    def add(self, other: _Cost) -> None:
        self.points += other.points
        self.renders |= other.renders


class _Estimator:
    """Costs of one document's selections; each fragment is measured once."""

    def __init__(self, schema: GraphQLSchema, fragments: dict[str, FragmentDefinitionNode]) -> None:
        self._schema = schema
        self._fragments = fragments
        self._measured: dict[str, _Cost] = {}
        self._measuring: set[str] = set()

    def operation(self, operation: OperationDefinitionNode) -> int:
        root = self._schema.get_root_type(operation.operation)
        if root is None:
            return 0
        return self._selection(operation.selection_set, root, list_size=None, introspection=False).points

    def _selection(
        self, selection_set: SelectionSetNode, parent: GraphQLNamedType, *, list_size: int | None, introspection: bool
    ) -> _Cost:
        cost = _Cost()
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                cost.add(self._field(selection, parent, list_size=list_size, introspection=introspection))
            elif isinstance(selection, InlineFragmentNode):
                condition = parent
                if selection.type_condition is not None:
                    condition = self._schema.get_type(selection.type_condition.name.value) or parent
                cost.add(
                    self._selection(
                        selection.selection_set, condition, list_size=list_size, introspection=introspection
                    )
                )
            elif isinstance(selection, FragmentSpreadNode):
                cost.add(self._fragment(selection.name.value, list_size=list_size, introspection=introspection))
        return cost

    def _fragment(self, name: str, *, list_size: int | None, introspection: bool) -> _Cost:
        # A fragment's cost depends on where it is spread only through these two.
        key = f"{name}\x00{list_size}\x00{introspection}"
        if key in self._measured:
            return self._measured[key]
        fragment = self._fragments.get(name)
        condition = self._schema.get_type(fragment.type_condition.name.value) if fragment is not None else None
        if fragment is None or condition is None or key in self._measuring:
            return _Cost()  # unknown fragment or a cycle: reported by the standard rules
        self._measuring.add(key)
        cost = self._selection(fragment.selection_set, condition, list_size=list_size, introspection=introspection)
        self._measuring.discard(key)
        self._measured[key] = cost
        return cost

    def _field(self, node: FieldNode, parent: GraphQLNamedType, *, list_size: int | None, introspection: bool) -> _Cost:
        name = node.name.value
        if name in _RENDERS:
            return _Cost(renders={_RENDERS[name]})
        if node.selection_set is None or not isinstance(parent, GraphQLObjectType | GraphQLInterfaceType):
            return _Cost()  # a scalar (or a field other rules refuse)
        introspection = introspection or name.startswith("__")
        definition = _META_FIELDS.get(name) or parent.fields.get(name)
        if definition is None:
            return _Cost()
        field_type = get_nullable_type(definition.type)
        own_size = _limit_of(node, definition) if LIMIT_ARGUMENT in definition.args else None
        is_list = isinstance(field_type, GraphQLList)
        items = 1
        if is_list and not introspection:
            items = own_size or list_size or MAX_LIMIT
        # A paged field's limit sizes the lists of the page it returns (`data`).
        inner_size = own_size if not is_list else None
        inner = self._selection(
            node.selection_set, get_named_type(field_type), list_size=inner_size, introspection=introspection
        )
        return _Cost(points=items * (ROW_POINTS + inner.points + RENDER_POINTS * len(inner.renders)))


def _limit_of(node: FieldNode, definition: GraphQLField) -> int:
    """The list size a `limit` argument asks for, as the resolvers clamp it."""
    argument = next((argument for argument in node.arguments or () if argument.name.value == LIMIT_ARGUMENT), None)
    value = argument.value if argument is not None else None
    if isinstance(value, IntValueNode):
        try:
            return parse_limit(value.value)  # digits counted, not converted: any length is cheap
        except InvalidLimit:
            return 1  # refused when the field runs; it reads nothing
    if value is None or isinstance(value, NullValueNode):
        default = definition.args[LIMIT_ARGUMENT].default_value
        return default if isinstance(default, int) else MAX_LIMIT
    # A variable may hold any value; a literal of another type is refused by other rules.
    return MAX_LIMIT


def operation_costs(schema: GraphQLSchema, document: DocumentNode) -> dict[OperationDefinitionNode, int]:
    """The estimated cost of each operation of a (valid) document."""
    definitions = document.definitions
    estimator = _Estimator(
        schema, {node.name.value: node for node in definitions if isinstance(node, FragmentDefinitionNode)}
    )
    return {node: estimator.operation(node) for node in definitions if isinstance(node, OperationDefinitionNode)}


def too_costly_error(operation: OperationDefinitionNode, cost: int) -> GraphQLError:
    name = operation.name.value if operation.name else "anonymous"
    return GraphQLError(
        f"'{name}' has an estimated cost of {cost:,}, above the budget of {MAX_COST:,}: "
        "ask for smaller pages, fewer Markdown fields or fewer aliases, or split the query",
        [operation],
        extensions={"code": RequestErrorCode.QUERY_TOO_COSTLY.value, "cost": cost, "budget": MAX_COST},
    )


class QueryCostRule(ValidationRule):
    """Refuses every operation of the document whose estimated cost is above MAX_COST."""

    def __init__(self, context: ValidationContext) -> None:
        super().__init__(context)
        for operation, cost in operation_costs(context.schema, context.document).items():
            if cost > MAX_COST:
                context.report_error(too_costly_error(operation, cost))
