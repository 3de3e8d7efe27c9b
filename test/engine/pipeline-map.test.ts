/**
 * A pipeline stage's declarative map (engine/pipeline-map.ts), alone: tables of (map, item,
 * previous result) -> the stage's job request, or a failure naming the stage, the target and the
 * missing part of the source path. The map's syntax is checked with the input's own schema.
 */
import { describe, expect, it } from 'vitest';
import { type StageMap, stageMapSchema } from '../../contracts/pipeline-input';
import { parseSourcePath } from '../../contracts/pipeline-map-paths';
import { evaluateMap, type MapSources, mapFailureText, readPath } from '../../engine/pipeline-map';

const item = { input: { url: 's3://a.wav', lang: 'fr', tags: ['x', 'y'] }, policy: { ttl: 600_000 } };
const previous = {
  stage: 'transcribe',
  jobId: 'job-1',
  output: { transcript: 'bonjour', segments: [{ text: 'bon' }, { text: 'jour' }], empty: null },
};
const sources: MapSources = { item, previous };

const map = (raw: Record<string, unknown>): StageMap => stageMapSchema.parse(raw);

describe('a map makes the next request', () => {
  it.each([
    [
      'fields from the item and the previous output',
      { 'input.text': '$.previous.output.transcript', 'input.lang': '$.item.input.lang' },
      { input: { text: 'bonjour', lang: 'fr' } },
    ],
    [
      'array elements, nested targets',
      { 'input.first.text': '$.previous.output.segments[0].text', 'input.tag': '$.item.input.tags[1]' },
      { input: { first: { text: 'bon' }, tag: 'y' } },
    ],
    ['a whole object as the input', { input: '$.previous.output' }, { input: previous.output }],
    [
      'the policy alongside the input',
      { 'input.text': '$.previous.output.transcript', policy: '$.item.policy' },
      { input: { text: 'bonjour' }, policy: { ttl: 600_000 } },
    ],
    [
      'a default where the path leads nowhere',
      { 'input.voice': { path: '$.item.input.voice', default: 'alto' }, 'input.lang': '$.item.input.lang' },
      { input: { voice: 'alto', lang: 'fr' } },
    ],
    [
      'the value, not the default, where the path leads somewhere',
      { 'input.lang': { path: '$.item.input.lang', default: 'en' } },
      { input: { lang: 'fr' } },
    ],
    [
      'a constant',
      { 'input.format': { value: { codec: 'opus' } } },
      { input: { format: { codec: 'opus' } } },
    ],
    [
      'null is a value, not a missing one',
      { 'input.empty': '$.previous.output.empty' },
      { input: { empty: null } },
    ],
  ])('%s', (_name, raw, request) => {
    expect(evaluateMap('translate', map(raw), sources)).toEqual({ ok: true, request });
  });

  it('does not write into its sources', () => {
    const frozen = structuredClone(sources);
    evaluateMap('translate', map({ input: '$.item.input', policy: '$.item.policy' }), sources);
    expect(sources).toEqual(frozen);
  });

  it('gives the same request for the same sources (deterministic)', () => {
    const rules = map({ 'input.b': '$.item.input.lang', 'input.a': '$.previous.output.transcript' });
    const first = evaluateMap('s', rules, sources);
    expect(JSON.stringify(evaluateMap('s', rules, sources))).toBe(JSON.stringify(first));
  });
});

describe('a map that cannot be made names the stage, the target and the missing path', () => {
  it.each([
    [
      'a missing field',
      { 'input.text': '$.previous.output.transcrit' },
      sources,
      {
        target: 'input.text',
        source: '$.previous.output.transcrit',
        missing: '$.previous.output.transcrit',
        rule: '$.previous.output has no field "transcrit"',
      },
    ],
    [
      'a missing field deeper than the first gap',
      { 'input.text': '$.previous.result.text.value' },
      sources,
      { missing: '$.previous.result', rule: '$.previous has no field "result"' },
    ],
    [
      'an element past the end',
      { 'input.text': '$.previous.output.segments[2].text' },
      sources,
      { missing: '$.previous.output.segments[2]', rule: '$.previous.output.segments has 2 elements: no [2]' },
    ],
    [
      'a field of a string',
      { 'input.text': '$.previous.output.transcript.text' },
      sources,
      {
        missing: '$.previous.output.transcript.text',
        rule: '$.previous.output.transcript is a string, not an object',
      },
    ],
    [
      'an index into an object',
      { 'input.text': '$.previous.output[0]' },
      sources,
      { missing: '$.previous.output[0]', rule: '$.previous.output is an object, not an array' },
    ],
    [
      'a field of null',
      { 'input.text': '$.previous.output.empty.text' },
      sources,
      { rule: '$.previous.output.empty is null, not an object' },
    ],
    [
      'no previous result',
      { 'input.text': '$.previous.output' },
      { item },
      { missing: '$.previous', rule: '$.previous is missing (the first stage has no previous result)' },
    ],
    [
      'a whole input that is not an object',
      { input: '$.previous.output.transcript' },
      sources,
      { target: 'input', rule: 'input must be a JSON object, not a string' },
    ],
    [
      'an inherited field, never read',
      { 'input.text': '$.item.constructor' },
      sources,
      { missing: '$.item.constructor', rule: '$.item has no field "constructor"' },
    ],
  ])('%s', (_name, raw, given, failure) => {
    const result = evaluateMap('translate', map(raw), given);
    expect(result).toMatchObject({ ok: false, failure: { stage: 'translate', ...failure } });
  });

  it('says it in words for the result line', () => {
    const result = evaluateMap('translate', map({ 'input.text': '$.previous.output.transcrit' }), sources);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(mapFailureText(result.failure)).toBe(
      'stage "translate": input.text from $.previous.output.transcrit: $.previous.output has no field "transcrit"',
    );
  });

  it('refuses overlapping targets even when handed a map the schema did not check', () => {
    const unchecked = { 'input.a': { value: 1 }, 'input.a.b': { value: 2 } } as StageMap;
    expect(evaluateMap('s', unchecked, sources)).toMatchObject({
      ok: false,
      failure: { target: 'input.a.b', rule: 'overlaps another target that set a' },
    });
    const prototype = { 'input.__proto__.x': { value: 1 } } as StageMap;
    expect(evaluateMap('s', prototype, sources)).toMatchObject({
      ok: false,
      failure: { rule: 'must not set "__proto__"' },
    });
  });
});

describe('the path syntax', () => {
  it.each([
    ['$.item', { root: 'item', steps: [] }],
    [
      '$.previous.output.a_b-c[10].d',
      { root: 'previous', steps: [{ key: 'output' }, { key: 'a_b-c' }, { index: 10 }, { key: 'd' }] },
    ],
  ])('reads %s', (text, path) => {
    expect(parseSourcePath(text)).toEqual({ ok: true, path });
  });

  it.each([
    ['item.input', 'must be a path such as'],
    ['$.items.input', 'it must start with $.item or $.previous'],
    ['$[0]', 'it must start with $.item or $.previous'],
    ['$.item..a', '"..a" is not a step'],
    ['$.item[01]', '"[01]" is not a step'],
    ['$.item[-1]', '"[-1]" is not a step'],
    ['$.item.a b', '" b" is not a step'],
    ['$.item.0', '".0" is not a step'],
  ])('refuses %s', (text, rule) => {
    const parsed = parseSourcePath(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.rule).toContain(rule);
  });

  it('reads the value a path leads to', () => {
    const parsed = parseSourcePath('$.previous.output.segments[1].text');
    if (!parsed.ok) throw new Error(parsed.rule);
    expect(readPath(sources, parsed.path)).toEqual({ found: true, value: 'jour' });
  });
});
