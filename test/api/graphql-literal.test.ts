import { type ObjectValueNode, type OperationDefinitionNode, parse, type StringValueNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../api';
import { enumLiteral, printOperation, toValueNode } from '../../api/graphql-literal';
import { NASTY_NAMES } from './helpers';

function argumentValue(query: string) {
  const operation = parse(query).definitions[0] as OperationDefinitionNode;
  const field = operation.selectionSet.selections[0];
  if (field?.kind !== 'Field') throw new Error('no field');
  return field.arguments?.[0]?.value;
}

describe('GraphQL literals', () => {
  it.each(NASTY_NAMES)('writes %j so the reference parser reads it back unchanged', (name) => {
    const query = printOperation('mutation', 'saveEndpoint', { input: { name } }, ['id']);
    const input = argumentValue(query) as ObjectValueNode;
    expect(input.fields).toHaveLength(1);
    expect((input.fields[0]!.value as StringValueNode).value).toBe(name);
  });

  it('writes numbers, booleans, null, lists and nested objects', () => {
    const query = printOperation(
      'mutation',
      'm',
      { input: { a: 1, b: 1.5, c: true, d: null, e: ['x', 2], f: { g: 'h' }, skipped: undefined } },
      undefined,
    );
    expect(query).toBe(
      'mutation {\n  m(input: {a: 1, b: 1.5, c: true, d: null, e: ["x", 2], f: {g: "h"}})\n}',
    );
  });

  it('writes a checked enum bare, and refuses one outside its allowed values', () => {
    const ok = printOperation(
      'mutation',
      'm',
      { input: { t: enumLiteral('t', 'FLASHBOOT', ['FLASHBOOT']) } },
      undefined,
    );
    expect(ok).toContain('{t: FLASHBOOT}');
    for (const bad of ['OTHER', 'FLASHBOOT }) { x', 'true', '']) {
      expect(() => enumLiteral('input.t', bad, ['FLASHBOOT', 'true', ''])).toThrow(ValidationError);
    }
  });

  it('refuses names that are not GraphQL names and values it cannot write', () => {
    expect(() => printOperation('mutation', 'm', { input: { 'a b': 1 } }, undefined)).toThrow(
      ValidationError,
    );
    expect(() => printOperation('mutation', 'm) { x', {}, undefined)).toThrow(ValidationError);
    expect(() => toValueNode(Number.NaN, 'n')).toThrow(ValidationError);
    expect(() => toValueNode('\uD800 lone surrogate', 'name')).toThrow(/well-formed/);
  });
});
