/**
 * 20% of every job operation's requests faulted (5xx answers, 429s, connections dropped before or
 * after the service acted, slow answers) for 1,000 jobs, a tenth of which fail once and are retried
 * through /retry. Each job completes with its output and one /run, or ends with the typed
 * SubmitUncertain failure (the default onUncertainSubmit 'fail': a submit whose answer was lost is
 * never sent again); none is submitted twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB_FAILURE } from '../../client/jobs';
import type { FaultRuleInput } from '../../emulator/schemas';
import {
  examples,
  type ManagedProcess,
  report,
  runJobs,
  type Stack,
  scriptedJob,
  startStack,
  tally,
} from './support';

const JOBS = 1_000;
const FAULT_RATE = 0.2;
const KINDS: Array<{ name: string; rule: Omit<FaultRuleInput, 'operation' | 'probability'> }> = [
  { name: '500', rule: { kind: 'status', httpStatus: 500 } },
  { name: '503', rule: { kind: 'status', httpStatus: 503 } },
  { name: '429', rule: { kind: 'status', httpStatus: 429, retryAfterSeconds: 1 } },
  { name: 'drop-before', rule: { kind: 'drop-before' } },
  { name: 'drop-after', rule: { kind: 'drop-after' } },
  { name: 'slow 2 s', rule: { kind: 'slow', delayMs: 2_000 } },
];
/** Each rule is rolled in turn until one applies: together they fault FAULT_RATE of the requests. */
const PER_RULE = 1 - (1 - FAULT_RATE) ** (1 / KINDS.length);

/**
 * Seeded dice (mulberry32) that also count what they decide. The rules are all '*' with the same
 * probability and matched synchronously, so each request is a run of rolls ending at the first
 * pass (that rule's fault) or after one failed roll per rule (no fault).
 */
function countingDice(seed: number) {
  let state = seed >>> 0;
  const counts = { requests: 0, faulted: 0, byKind: KINDS.map(() => 0) };
  let position = 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const random = () => {
    const value = next();
    if (value < PER_RULE) {
      counts.requests += 1;
      counts.faulted += 1;
      counts.byKind[position] = (counts.byKind[position] ?? 0) + 1;
      position = 0;
    } else if (++position === KINDS.length) {
      counts.requests += 1;
      position = 0;
    }
    return value;
  };
  return { random, counts };
}

describe('reliability: 20% injected faults on every job operation (real server on PostgreSQL)', () => {
  let stack: Stack;
  let worker: ManagedProcess;
  const dice = countingDice(20_260_512);
  beforeAll(async () => {
    // Jobs of 5 s service time run 0.5 s; the orphan of a lost answer reports itself within 3 s.
    stack = await startStack({ name: 'faults', timeScale: 10, random: dice.random });
    worker = stack.startWorker();
    await worker.running;
  });
  afterAll(async () => {
    await stack?.close();
  });

  it(`${JOBS} jobs: each completes right or fails as SubmitUncertain; none run twice`, async () => {
    const startedAt = Date.now();
    for (const { rule } of KINDS)
      stack.control.injectFault({ ...rule, operation: '*', probability: PER_RULE });
    const run = runJobs(stack, {
      name: 'faults',
      count: JOBS,
      spec: (index, endpointId) =>
        scriptedJob(index, endpointId, {
          sleepMs: 5_000,
          failOnce: index % 10 === 0,
          polling: { initialInterval: 250, maxInterval: 1_000, backoffCoefficient: 1.5 },
          // A lost answer's orphan is adopted when its webhook comes; otherwise SubmitUncertain.
          uncertainSubmitWaitMs: 10_000,
          // Time scale 10: see scriptedJob's submitLease.
          submitLease: false,
        }),
      timeoutMs: 540_000,
    });
    const outcomes = await run.done;
    const figures = tally(stack, outcomes, [JOB_FAILURE.submitUncertain]);
    const { counts } = dice;
    const kinds = KINDS.map(({ name }, i) => `${counts.byKind[i]} ${name}`).join(', ');
    // An uncertain submit that did reach the service left one orphan job (run once, left to its
    // ttl); one that did not left none. Neither is a job run twice.
    const uncertain = outcomes.filter((o) => o.failure?.type === JOB_FAILURE.submitUncertain);
    const orphans = uncertain.filter((o) => stack.control.submissions(o.endpointId) === 1).length;
    report(
      'faults',
      figures,
      `SubmitUncertain: ${orphans} with one orphan job, ${uncertain.length - orphans} never reached the service; ` +
        `${counts.faulted} of ${counts.requests} requests faulted (${((100 * counts.faulted) / counts.requests).toFixed(1)}%: ${kinds})`,
      startedAt,
    );
    expect(counts.faulted / counts.requests).toBeGreaterThan(0.17);
    expect(counts.faulted / counts.requests).toBeLessThan(0.23);
    expect(figures.ranTwice, examples(outcomes, stack, [JOB_FAILURE.submitUncertain])).toBe(0);
    expect(figures.wrong + figures.noOutcome, examples(outcomes, stack, [JOB_FAILURE.submitUncertain])).toBe(
      0,
    );
    expect(figures.lost, examples(outcomes, stack, [JOB_FAILURE.submitUncertain])).toBe(0);
  });
});
