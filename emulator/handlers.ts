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

export const TEMPLATES = ['echo', 'sleep', 'fail', 'stream', 'scripted'] as const;

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

/** Template ids name the handler; any other template id runs the scripted handler. */
export function planFor(templateId: string, input: Record<string, unknown>, attempt: number): Plan {
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
