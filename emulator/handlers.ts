import { createHash } from 'node:crypto';
import { z } from 'zod';
import { LIMITS } from './limits';
import { describeZodError } from './schemas';

// What a worker does with a job, as a plan in service time: updates at given offsets from the start
// and an end. Plans are data, so a run is stopped by cancelling its timers (cancel, timeout, ttl).

export interface PlanStep {
  at: number;
  kind: 'progress' | 'chunk';
  value: unknown;
}

export type PlanEnd =
  | { kind: 'complete'; at: number; output: unknown }
  | { kind: 'fail'; at: number; error: string }
  | { kind: 'hang' };

export interface Plan {
  steps: PlanStep[];
  end: PlanEnd;
}

export const TEMPLATES = ['echo', 'sleep', 'fail', 'stream', 'scripted', 'oom'] as const;

const duration = z.int().min(0).max(LIMITS.ttlMaxMs);

export const scriptedInputSchema = z.object({
  sleepMs: duration.optional(),
  output: z.unknown().optional(),
  fail: z.string().optional(),
  failTimes: z.int().min(0).optional(),
  timeoutTimes: z.int().min(0).optional(),
  hang: z.boolean().optional(),
  progress: z.array(z.unknown()).optional(),
  chunks: z.array(z.unknown()).optional(),
});
export type ScriptedInput = z.infer<typeof scriptedInputSchema>;

export const oomInputSchema = scriptedInputSchema.extend({
  oomShare: z.number().min(0).max(1).default(1),
  oomSeed: z.string().default(''),
});
export type OomInput = z.input<typeof oomInputSchema>;

const sleepInputSchema = z.object({ sleepMs: duration.default(1000) });
const failInputSchema = z.object({ error: z.string().optional(), sleepMs: duration.default(0) });
export const streamInputSchema = z.object({
  prompt: z.string().optional(),
  text: z.union([z.string(), z.array(z.string())]).optional(),
  tokens: z.int().min(1).max(100_000).default(8),
  tokenDelayMs: duration.default(100),
});

const rejected = (error: string): Plan => ({ steps: [], end: { kind: 'fail', at: 0, error } });

function parseInput<T>(schema: z.ZodType<T>, input: unknown, template: string): T | Plan {
  const parsed = schema.safeParse(input);
  return parsed.success
    ? parsed.data
    : rejected(`input rejected by the ${template} handler: ${describeZodError(parsed.error)}`);
}

const isPlan = (value: unknown): value is Plan =>
  typeof value === 'object' && value !== null && 'end' in value && 'steps' in value;

/** What a handler knows of where it runs. */
export interface RunContext {
  attempt: number;
  /** The endpoint's GPU tier, e.g. AMPERE_24. */
  gpuIds: string;
}

/** Template ids name the handler; any other template id runs the scripted handler. */
export function planFor(templateId: string, input: Record<string, unknown>, context: RunContext): Plan {
  const { attempt } = context;
  switch (templateId) {
    case 'echo':
      return { steps: [], end: { kind: 'complete', at: 0, output: input } };
    case 'sleep': {
      const args = parseInput(sleepInputSchema, input, 'sleep');
      if (isPlan(args)) return args;
      return { steps: [], end: { kind: 'complete', at: args.sleepMs, output: { sleptMs: args.sleepMs } } };
    }
    case 'fail': {
      const args = parseInput(failInputSchema, input, 'fail');
      if (isPlan(args)) return args;
      return { steps: [], end: { kind: 'fail', at: args.sleepMs, error: args.error ?? 'handler failed' } };
    }
    case 'stream':
      return streamPlan(input);
    case 'oom':
      return oomPlan(input, context);
    default:
      return scriptedPlan(input, attempt);
  }
}

/** Text generation: one chunk per word (or generated token), then the aggregate as the output. */
function streamPlan(input: Record<string, unknown>): Plan {
  const args = parseInput(streamInputSchema, input, 'stream');
  if (isPlan(args)) return args;
  const words =
    args.text === undefined
      ? Array.from({ length: args.tokens }, (_, i) => `token${i} `)
      : Array.isArray(args.text)
        ? args.text
        : (args.text.match(/\S+\s*|\s+/g) ?? []);
  const inputTokens = args.prompt?.split(/\s+/).filter(Boolean).length ?? 0;
  const outputs = words.map((word, i) => ({ input_tokens: inputTokens, output_tokens: i + 1, text: [word] }));
  return {
    steps: outputs.map((output, i) => ({
      at: args.tokenDelayMs * (i + 1),
      kind: 'chunk' as const,
      value: output,
    })),
    end: { kind: 'complete', at: args.tokenDelayMs * outputs.length, output: outputs },
  };
}

function scriptedPlan(input: Record<string, unknown>, attempt: number): Plan {
  const args = parseInput(scriptedInputSchema, input, 'scripted');
  if (isPlan(args)) return args;
  const sleep = args.sleepMs ?? 0;
  const spread = (values: unknown[] | undefined, kind: PlanStep['kind']): PlanStep[] =>
    (values ?? []).map((value, i, all) => ({ at: Math.floor((sleep * i) / all.length), kind, value }));
  const steps = [...spread(args.progress, 'progress'), ...spread(args.chunks, 'chunk')].sort(
    (a, b) => a.at - b.at,
  );

  if (args.hang || attempt <= (args.timeoutTimes ?? 0)) return { steps, end: { kind: 'hang' } };
  const fails = args.failTimes !== undefined ? attempt <= args.failTimes : args.fail !== undefined;
  if (fails) {
    return {
      steps,
      end: { kind: 'fail', at: sleep, error: args.fail ?? `scripted failure on attempt ${attempt}` },
    };
  }
  return {
    steps,
    end: { kind: 'complete', at: sleep, output: args.output !== undefined ? args.output : input },
  };
}

/**
 * A model too big for some inputs: the share `oomShare` of inputs runs out of GPU memory as soon as
 * it starts; the others run as the scripted handler says. Which inputs fail is a pure function of
 * the input (without oomShare and oomSeed) and oomSeed, so a run is repeatable, a retry of the same
 * input fails again, and raising the share only adds failing inputs.
 */
function oomPlan(input: Record<string, unknown>, context: RunContext): Plan {
  const args = parseInput(oomInputSchema, input, 'oom');
  if (isPlan(args)) return args;
  const { oomShare: _share, oomSeed: _seed, ...rest } = input;
  if (unitHash(`${args.oomSeed}\n${canonicalJson(rest)}`) < args.oomShare) {
    return { steps: [], end: { kind: 'fail', at: 0, error: cudaOutOfMemory(context.gpuIds) } };
  }
  return scriptedPlan(input, context.attempt);
}

/** The message a PyTorch worker reports, with the capacity of the endpoint's GPU tier. */
export function cudaOutOfMemory(gpuIds: string): string {
  const gib = Number(/_(\d+)/.exec(gpuIds)?.[1] ?? 24);
  const total = (gib * 0.985).toFixed(2);
  return (
    `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total ` +
    `capacity of ${total} GiB of which 1.17 GiB is free. Of the allocated memory ${(gib * 0.9).toFixed(2)} GiB ` +
    'is allocated by PyTorch. If reserved but unallocated memory is large try setting ' +
    'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.'
  );
}

/** A number in [0, 1) that depends only on `text`. */
function unitHash(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0) / 2 ** 32;
}

/** JSON with object keys sorted, so two equal inputs hash alike whatever their key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.keys(value)
      .sort()
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
