/**
 * A pipeline's input (contracts/pipeline-input.ts): what parses, with which defaults, and the
 * field and rule of every input that does not, before anything is sent.
 */
import { describe, expect, it } from 'vitest';
import { batchItemOptionsSchema } from '../../contracts/batch-input';
import { MAX_PIPELINE_STAGES, type PipelineInput, parsePipelineInput } from '../../contracts/pipeline-input';
import { stageSetups } from '../../engine/pipeline-state';

const items = { inline: [{ input: { url: 's3://a.wav', lang: 'fr' } }] };
const transcribe = { name: 'transcribe', endpointId: 'whisper' };
const translate = {
  name: 'translate',
  endpointId: 'nllb',
  maxConcurrency: 20,
  map: { 'input.text': '$.previous.output.transcript', 'input.lang': '$.item.input.lang' },
};
const speak = {
  name: 'speak',
  route: {
    endpoints: [
      { endpointId: 'tts-b', pricePerSecond: 2 },
      { endpointId: 'tts-a', pricePerSecond: 1 },
    ],
  },
  transform: { name: 'sentences' },
};

describe('a pipeline input that parses', () => {
  it('fills each stage from the batch defaults, its buffer and the pipeline scheduling', () => {
    const parsed = parsePipelineInput({
      items,
      stages: [transcribe, translate, { ...speak, priority: 1 }],
      priority: 4,
      fairnessKey: 'tenant-a',
      budget: 10,
    } satisfies PipelineInput);
    if (!parsed.ok) throw new Error(`${parsed.field}: ${parsed.rule}`);
    const [first, second, third] = parsed.value.stages;
    expect(first).toMatchObject({
      endpointId: 'whisper',
      maxConcurrency: 100,
      buffer: 0,
      priority: 4,
      fairnessKey: 'tenant-a',
    });
    // The batch's per-item options, with the batch's defaults.
    expect(first?.job).toEqual(batchItemOptionsSchema.parse({}));
    expect(first?.failureTolerance).toEqual({});
    expect(second).toMatchObject({ buffer: 40, priority: 4 });
    // A route's first endpoint is its cheapest; the stage's own priority wins over the pipeline's.
    expect(third).toMatchObject({ endpointId: 'tts-a', buffer: 200, priority: 1, fairnessKey: 'tenant-a' });
    expect(parsed.value).toMatchObject({ pageSize: 100, maxEventsPerRun: 2_000 });
    expect(stageSetups(parsed.value)).toEqual([
      { name: 'transcribe', maxConcurrency: 100, buffer: 0, transform: false },
      { name: 'translate', maxConcurrency: 20, buffer: 40, transform: false },
      { name: 'speak', maxConcurrency: 100, buffer: 200, transform: true },
    ]);
  });

  it("gives a stage its share of the pipeline's budget", () => {
    const parsed = parsePipelineInput({ items, budget: 40, stages: [{ ...transcribe, budgetShare: 0.25 }] });
    expect(parsed.ok && parsed.value.stages[0]?.budget).toBe(10);
  });

  it('takes a map on the first stage that reads the item, and a manifest of items', () => {
    const parsed = parsePipelineInput({
      items: { manifest: { key: 'jobs/audio.jsonl' } },
      stages: [
        { ...transcribe, map: { 'input.audio': '$.item.input.url', 'input.beam': { value: 5 } } },
        translate,
      ],
    });
    expect(parsed.ok).toBe(true);
  });
});

describe('a pipeline input that does not parse names the field and the rule', () => {
  const two = (second: Record<string, unknown>) => ({
    items,
    stages: [transcribe, { ...translate, ...second }],
  });

  it.each([
    ['no stage', { items, stages: [] }, 'stages', 'must hold at least one stage'],
    [
      'too many stages',
      {
        items,
        stages: Array.from({ length: MAX_PIPELINE_STAGES + 1 }, (_, at) => ({
          name: `s${at}`,
          endpointId: 'e',
          ...(at ? { transform: { name: 't' } } : {}),
        })),
      },
      'stages',
      `must hold at most ${MAX_PIPELINE_STAGES} stages`,
    ],
    [
      'a name twice',
      two({ name: 'transcribe' }),
      'stages.1.name',
      'must be unique: "transcribe" names an earlier stage',
    ],
    [
      'a bad name',
      two({ name: 'trans late' }),
      'stages.1.name',
      'must be letters, digits, . _ - (starting with a letter or digit)',
    ],
    [
      'no endpoint',
      { items, stages: [{ name: 'a' }] },
      'stages.0.endpointId',
      'exactly one of endpointId and route is required',
    ],
    [
      'both endpoint and route',
      two({ route: { endpoints: [{ endpointId: 'x' }] } }),
      'stages.1.endpointId',
      'exactly one of endpointId and route is required',
    ],
    [
      'neither map nor transform',
      two({ map: undefined }),
      'stages.1.map',
      'exactly one of map and transform is required after the first stage',
    ],
    [
      'both map and transform',
      two({ transform: { name: 'split' } }),
      'stages.1.map',
      'exactly one of map and transform is required after the first stage',
    ],
    [
      'a transform on the first stage',
      { items, stages: [{ ...transcribe, transform: { name: 't' } }] },
      'stages.0.transform',
      'the first stage takes the item as is or by a map',
    ],
    [
      'a buffer on the first stage',
      { items, stages: [{ ...transcribe, buffer: 10 }] },
      'stages.0.buffer',
      'the first stage reads the items: no buffer',
    ],
    [
      'a first-stage map reading $.previous',
      { items, stages: [{ ...transcribe, map: { input: { path: '$.previous.output', default: {} } } }] },
      'stages.0.map.input',
      'the first stage has no previous stage: read from $.item only',
    ],
    [
      'a bad source path',
      two({ map: { 'input.text': '$.previous.output..text' } }),
      'stages.1.map.input.text',
      '"..text" is not a step',
    ],
    [
      'a bad target',
      two({ map: { 'output.text': '$.previous.output' } }),
      'stages.1.map.output.text',
      'is not a target: must be input, policy',
    ],
    [
      'overlapping targets',
      two({ map: { input: '$.item.input', 'input.text': '$.previous.output.text' } }),
      'stages.1.map.input.text',
      'overlaps input',
    ],
    [
      'a map without input',
      two({ map: { 'policy.ttl': { value: 60_000 } } }),
      'stages.1.map',
      'must set input or a field of it',
    ],
    ['an empty map', two({ map: {} }), 'stages.1.map', 'must set 1 to 100 fields'],
    [
      'a source of the wrong shape',
      two({ map: { input: 42 } }),
      'stages.1.map.input',
      'must be a source path ($.item... or $.previous...), { path, default } or { value }',
    ],
    [
      'a budget share without a budget',
      { items, stages: [{ ...transcribe, budgetShare: 0.5 }] },
      'stages.0.budgetShare',
      "is a share of the pipeline's budget: set budget",
    ],
    [
      'a budget share above 1',
      { items, budget: 5, stages: [{ ...transcribe, budgetShare: 1.5 }] },
      'stages.0.budgetShare',
      'must be a number above 0, at most 1',
    ],
    [
      'a bad priority',
      two({ priority: 9 }),
      'stages.1.priority',
      'must be an integer from 1 (first) to 5 (last)',
    ],
    [
      'a bad job option',
      two({ job: { retry: { maxRetries: -1 } } }),
      'stages.1.job.retry.maxRetries',
      'expected number to be >=0',
    ],
    ['an unknown stage field', two({ concurrency: 3 }), 'stages.1', 'unknown field(s) concurrency'],
    [
      'a bad buffer',
      two({ buffer: 0 }),
      'stages.1.buffer',
      'must be a whole number of items from 1 to 10000',
    ],
    [
      'windows too large together',
      {
        items,
        stages: [
          { ...transcribe, maxConcurrency: 6_000 },
          { ...translate, maxConcurrency: 6_000 },
        ],
      },
      'stages',
      "the stages' maxConcurrency together must be at most 10000 (12000)",
    ],
    [
      'buffers too large together',
      {
        items,
        stages: [
          transcribe,
          { ...translate, buffer: 10_000 },
          { ...speak, name: 'a', buffer: 10_000 },
          { ...speak, name: 'b', buffer: 1 },
        ],
      },
      'stages',
      "the stages' buffers together must be at most 20000 (20001)",
    ],
    [
      'a redrive key that is not a key',
      { items: { redrive: { key: '../x' } }, stages: [transcribe] },
      'items.redrive.key',
      'must be a relative path',
    ],
  ])('%s', (_name, input, field, rule) => {
    const parsed = parsePipelineInput(input);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.field).toBe(field);
    expect(parsed.rule).toContain(rule);
  });
});
