import {
  type ArgumentNode,
  type DocumentNode,
  type FieldNode,
  Kind,
  type ObjectFieldNode,
  OperationTypeNode,
  print,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import { ValidationError } from './errors';

// Queries are built as a graphql-js AST and printed by graphql-js, so escaping of
// string literals is the reference implementation's, not ours. What this module
// adds is refusing anything that print would write without quotes unless it has
// been checked: enum values and names.

const NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;

const ENUM = Symbol('graphql enum literal');

/** A value to be written bare as a GraphQL enum; only enumLiteral makes one, after checking it. */
export interface EnumLiteral {
  readonly [ENUM]: string;
}

export function enumLiteral(field: string, value: string, allowed: readonly string[]): EnumLiteral {
  if (!allowed.includes(value) || !NAME.test(value) || ['true', 'false', 'null'].includes(value)) {
    throw new ValidationError(field, `must be one of ${allowed.join(', ')}`);
  }
  return Object.freeze({ [ENUM]: value });
}

export type LiteralValue =
  | string
  | number
  | boolean
  | null
  | EnumLiteral
  | readonly LiteralValue[]
  | { readonly [key: string]: LiteralValue | undefined };

function name(value: string, field: string) {
  if (!NAME.test(value)) throw new ValidationError(field, 'must be a GraphQL name');
  return { kind: Kind.NAME, value } as const;
}

/** Turns a JS value into a GraphQL literal node; undefined object members are left out. */
export function toValueNode(value: LiteralValue, field: string): ValueNode {
  if (value === null) return { kind: Kind.NULL };
  if (typeof value === 'object' && ENUM in value) return { kind: Kind.ENUM, value: value[ENUM] };
  switch (typeof value) {
    case 'string':
      // A lone surrogate cannot be encoded in the UTF-8 the query travels in.
      if (/[\uD800-\uDFFF]/u.test(value)) throw new ValidationError(field, 'must be well-formed Unicode');
      return { kind: Kind.STRING, value };
    case 'boolean':
      return { kind: Kind.BOOLEAN, value };
    case 'number':
      if (!Number.isFinite(value)) throw new ValidationError(field, 'must be a finite number');
      return Number.isInteger(value)
        ? { kind: Kind.INT, value: String(value) }
        : { kind: Kind.FLOAT, value: String(value) };
  }
  if (Array.isArray(value)) {
    return {
      kind: Kind.LIST,
      values: value.map((item: LiteralValue, index: number) => toValueNode(item, `${field}[${index}]`)),
    };
  }
  if (typeof value === 'object') {
    const fields: ObjectFieldNode[] = [];
    for (const [key, member] of Object.entries(value as Record<string, LiteralValue | undefined>)) {
      if (member === undefined) continue;
      const path = field ? `${field}.${key}` : key;
      fields.push({ kind: Kind.OBJECT_FIELD, name: name(key, path), value: toValueNode(member, path) });
    }
    return { kind: Kind.OBJECT, fields };
  }
  throw new ValidationError(field, 'cannot be written as a GraphQL literal');
}

/** A selection: a field name, or a field with its own sub-selection. */
export type Selection = string | { readonly [field: string]: readonly Selection[] };

function selectionSet(selections: readonly Selection[]): SelectionSetNode {
  const nodes: FieldNode[] = [];
  for (const selection of selections) {
    if (typeof selection === 'string') {
      nodes.push({ kind: Kind.FIELD, name: name(selection, 'selection') });
      continue;
    }
    for (const [field, sub] of Object.entries(selection)) {
      nodes.push({ kind: Kind.FIELD, name: name(field, 'selection'), selectionSet: selectionSet(sub) });
    }
  }
  return { kind: Kind.SELECTION_SET, selections: nodes };
}

/** Prints `query|mutation { field(arg: literal, ...) { selection } }`. */
export function printOperation(
  operation: 'query' | 'mutation',
  field: string,
  args: Record<string, LiteralValue | undefined>,
  selections: readonly Selection[] | undefined,
): string {
  const argumentNodes: ArgumentNode[] = [];
  for (const [key, value] of Object.entries(args)) {
    if (value === undefined) continue;
    argumentNodes.push({ kind: Kind.ARGUMENT, name: name(key, key), value: toValueNode(value, key) });
  }
  const root: FieldNode = {
    kind: Kind.FIELD,
    name: name(field, 'operation'),
    arguments: argumentNodes,
    ...(selections ? { selectionSet: selectionSet(selections) } : {}),
  };
  const document: DocumentNode = {
    kind: Kind.DOCUMENT,
    definitions: [
      {
        kind: Kind.OPERATION_DEFINITION,
        operation: operation === 'query' ? OperationTypeNode.QUERY : OperationTypeNode.MUTATION,
        selectionSet: { kind: Kind.SELECTION_SET, selections: [root] },
      },
    ],
  };
  return print(document);
}
