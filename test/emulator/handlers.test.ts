import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Emulator, LIMITS, startEmulator } from '../../emulator';
import { jobsApi, KEY, startTestEmulator } from './helpers';

// The handlers chosen by template: echo, sleep, fail, a text-generation stream, and the scripted
// handler whose input says what to do. Plus /stream's draining and the 1 MB chunk split.

let emulator: Emulator;
let counter = 0;

function endpoint(templateId: string, target: Emulator = emulator) {
  const state = target.control.createEndpoint(KEY, {
    name: `handlers-${++counter}`,
    templateId,
    workersMin: 1,
    workersMax: 1,
    flashBootType: 'FLASHBOOT',
  });
  target.control.advance(500);
  return jobsApi(target, state.id);
}
const advance = (ms = 0) => emulator.control.advance(ms);

beforeAll(async () => {
  emulator = await startTestEmulator({ timeScale: 1e-6, streamWaitMs: 0 });
});
afterAll(() => emulator.close());
beforeEach(() => emulator.control.reset());

describe('echo, sleep, fail', () => {
  it('echo returns its input at once', async () => {
    const api = endpoint('echo');
    const result = await api.runsync({ input: { a: [1, 2], b: 'c' } });
    expect(result.body).toMatchObject({
      status: 'COMPLETED',
      output: { a: [1, 2], b: 'c' },
      executionTime: 0,
    });
  });

  it('sleep runs sleepMs of service time (default 1000)', async () => {
    const api = endpoint('sleep');
    const job = await api.run({ input: { sleepMs: 30_000 } });
    advance(0);
    advance(29_999);
    expect((await api.status(job.body.id)).body.status).toBe('IN_PROGRESS');
    advance(1);
    expect((await api.status(job.body.id)).body).toMatchObject({
      status: 'COMPLETED',
      executionTime: 30_000,
      output: { sleptMs: 30_000 },
    });
    const byDefault = await api.run({ input: {} });
    advance(0);
    advance(1000);
    expect((await api.status(byDefault.body.id)).body).toMatchObject({ executionTime: 1000 });
  });

  it('fail ends FAILED with an error string', async () => {
    const api = endpoint('fail');
    const result = await api.runsync({ input: { error: 'CUDA out of memory' } });
    expect(result.body).toMatchObject({ status: 'FAILED', error: 'CUDA out of memory' });
    expect(result.body).not.toHaveProperty('output');
    const plain = await api.runsync({ input: {} });
    expect(plain.body).toMatchObject({ status: 'FAILED', error: 'handler failed' });
  });

  it('a handler that rejects its input fails the job with the reason', async () => {
    const api = endpoint('sleep');
    const result = await api.runsync({ input: { sleepMs: 'long' } });
    expect(result.body.status).toBe('FAILED');
    expect(result.body.error).toMatch(/input rejected by the sleep handler: sleepMs/);
  });
});

describe('stream (text generation)', () => {
  it('emits one chunk per word with the spec output and metrics fields, and completes with the aggregate', async () => {
    const api = endpoint('stream');
    const job = await api.run({
      input: { prompt: 'say hello', text: 'Hello there world', tokenDelayMs: 100 },
    });
    advance(0);
    advance(200);
    const first = await api.stream(job.body.id);
    expect(first.status).toBe(200);
    expect(first.body).toEqual([
      {
        output: { input_tokens: 2, output_tokens: 1, text: ['Hello '] },
        metrics: {
          avg_gen_throughput: expect.any(Number),
          avg_prompt_throughput: expect.any(Number),
          cpu_kv_cache_usage: expect.any(Number),
          gpu_kv_cache_usage: expect.any(Number),
          input_tokens: 2,
          output_tokens: 1,
          pending: 0,
          running: 1,
          stream_index: 0,
          swapped: 0,
          scenario: 'stream',
        },
      },
      expect.objectContaining({ output: { input_tokens: 2, output_tokens: 2, text: ['there '] } }),
    ]);
    // Each call drains what it returned.
    expect((await api.stream(job.body.id)).body).toEqual([]);
    advance(100);
    const last = await api.stream(job.body.id);
    expect(last.body.map((c: { output: { text: string[] } }) => c.output.text[0])).toEqual(['world']);
    expect(last.body[0].metrics.stream_index).toBe(2);
    const status = await api.status(job.body.id);
    expect(status.body.status).toBe('COMPLETED');
    expect(status.body.output.map((o: { text: string[] }) => o.text[0]).join('')).toBe('Hello there world');
  });

  it('splits a chunk larger than 1 MB into several chunks of at most 1 MB', async () => {
    const api = endpoint('stream');
    const huge = 'x'.repeat(Math.floor(2.5 * LIMITS.streamChunkMaxBytes));
    const job = await api.run({ input: { text: [huge, 'tail'], tokenDelayMs: 10 } });
    advance(0);
    advance(20);
    const { body } = await api.stream(job.body.id);
    expect(body.length).toBeGreaterThanOrEqual(3);
    for (const chunk of body) {
      expect(Buffer.byteLength(JSON.stringify(chunk.output))).toBeLessThanOrEqual(LIMITS.streamChunkMaxBytes);
    }
    const texts = body.flatMap((chunk: { output: { text: string[] } }) => chunk.output.text);
    expect(texts.slice(0, -1).join('')).toBe(huge);
    expect(texts.at(-1)).toBe('tail');
    expect(body.map((c: { metrics: { stream_index: number } }) => c.metrics.stream_index)).toEqual(
      body.map((_: unknown, i: number) => i),
    );
  });

  it('splits a large scripted chunk that is not text-shaped as pieces of its JSON', async () => {
    const api = endpoint('scripted');
    const value = { blob: 'é'.repeat(LIMITS.streamChunkMaxBytes) };
    const job = await api.run({ input: { chunks: [value], sleepMs: 10 } });
    advance(0);
    const { body } = await api.stream(job.body.id);
    expect(body.length).toBeGreaterThan(1);
    for (const chunk of body) {
      expect(Buffer.byteLength(JSON.stringify(chunk.output))).toBeLessThanOrEqual(LIMITS.streamChunkMaxBytes);
    }
    expect(JSON.parse(body.map((c: { output: string }) => c.output).join(''))).toEqual(value);
  });

  it("with streamShape 'object' answers { status, stream: [...] }", async () => {
    const other = await startEmulator({ timeScale: 1e-6, streamShape: 'object', streamWaitMs: 0 });
    try {
      const api = endpoint('stream', other);
      const job = await api.run({ input: { tokens: 2, tokenDelayMs: 10 } });
      other.control.advance(0);
      other.control.advance(10);
      expect((await api.stream(job.body.id)).body).toEqual({
        status: 'IN_PROGRESS',
        stream: [
          expect.objectContaining({ output: { input_tokens: 0, output_tokens: 1, text: ['token0 '] } }),
        ],
      });
      other.control.advance(10);
      const last = await api.stream(job.body.id);
      expect(last.body.status).toBe('COMPLETED');
      expect(last.body.stream).toHaveLength(1);
    } finally {
      await other.close();
    }
  });

  it('a job of a handler that does not stream has no chunks', async () => {
    const api = endpoint('echo');
    const { body } = await api.runsync({ input: { a: 1 } });
    expect((await api.stream(body.id)).body).toEqual([]);
  });
});

describe('scripted handler', () => {
  it('shows progress updates as output while IN_PROGRESS, then the final output', async () => {
    const api = endpoint('scripted');
    const job = await api.run({
      input: { sleepMs: 3000, progress: ['1/3', '2/3', '3/3'], output: { done: true } },
    });
    advance(0);
    expect((await api.status(job.body.id)).body).toMatchObject({ status: 'IN_PROGRESS', output: '1/3' });
    advance(1000);
    expect((await api.status(job.body.id)).body.output).toBe('2/3');
    advance(1000);
    expect((await api.status(job.body.id)).body.output).toBe('3/3');
    advance(1000);
    expect((await api.status(job.body.id)).body).toMatchObject({
      status: 'COMPLETED',
      output: { done: true },
    });
  });

  it('returns its input when no output is given', async () => {
    const api = endpoint('any-other-template-id');
    const input = { sleepMs: 0, payload: 'x' };
    expect((await api.runsync({ input })).body.output).toEqual(input);
  });

  it('emits the given chunks spread over sleepMs', async () => {
    const api = endpoint('scripted');
    const job = await api.run({ input: { sleepMs: 2000, chunks: ['a', 'b'], output: 'ab' } });
    advance(0);
    expect((await api.stream(job.body.id)).body.map((c: { output: unknown }) => c.output)).toEqual(['a']);
    advance(1000);
    expect((await api.stream(job.body.id)).body.map((c: { output: unknown }) => c.output)).toEqual(['b']);
  });

  it('fails with its message; failTimes fails only the first attempts', async () => {
    const api = endpoint('scripted');
    expect((await api.runsync({ input: { fail: 'always' } })).body).toMatchObject({
      status: 'FAILED',
      error: 'always',
    });
    const job = await api.run({ input: { failTimes: 2, output: 'third' } });
    advance(0);
    expect((await api.status(job.body.id)).body).toMatchObject({
      status: 'FAILED',
      error: 'scripted failure on attempt 1',
    });
    await api.retry(job.body.id);
    advance(0);
    expect((await api.status(job.body.id)).body.error).toBe('scripted failure on attempt 2');
    await api.retry(job.body.id);
    advance(0);
    expect((await api.status(job.body.id)).body).toMatchObject({ status: 'COMPLETED', output: 'third' });
  });

  it('hang runs until executionTimeout ends it as TIMED_OUT with an error', async () => {
    const api = endpoint('scripted');
    const hang = await api.run({ input: { hang: true }, policy: { executionTimeout: 5000 } });
    advance(0);
    advance(5000);
    expect((await api.status(hang.body.id)).body).toMatchObject({
      status: 'TIMED_OUT',
      error: expect.stringMatching(/executionTimeout of 5000 ms/),
    });
  });

  it('an invalid script fails the job', async () => {
    const api = endpoint('scripted');
    const result = await api.runsync({ input: { sleepMs: -1 } });
    expect(result.body.status).toBe('FAILED');
    expect(result.body.error).toMatch(/scripted handler: sleepMs/);
  });
});
