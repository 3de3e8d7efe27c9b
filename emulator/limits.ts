// The service's numbers from SERVICE_SPEC.md, in one place. "MB" is read as MiB (2^20 bytes): the
// more permissive reading, so a client that checks against 10^6-byte megabytes is never refused here.

export const MIB = 1024 * 1024;
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const DAY = 24 * 60 * MINUTE;

export const LIMITS = {
  runMaxBytes: 10 * MIB,
  runSyncMaxBytes: 20 * MIB,
  /** Bodies of operations that take none (cancel, purge...), GraphQL and REST: not in the spec. */
  otherMaxBytes: 1 * MIB,
  streamChunkMaxBytes: 1 * MIB,

  waitMinMs: 1000,
  waitMaxMs: 300_000,
  waitDefaultMs: 90_000,

  executionTimeoutMinMs: 5 * SECOND,
  executionTimeoutMaxMs: 7 * DAY,
  executionTimeoutDefaultMs: 600_000,

  ttlMinMs: 10 * SECOND,
  ttlMaxMs: 7 * DAY,
  ttlDefaultMs: 86_400_000,

  runRetentionMs: 30 * MINUTE,
  runSyncRetentionMs: 1 * MINUTE,
  runSyncRetentionMaxMs: 5 * MINUTE,

  webhookTries: 3,
  webhookRetryDelayMs: 10 * SECOND,

  rateWindowMs: 10 * SECOND,
} as const;

/** Per endpoint and operation; `concurrent: null` is the table's "not applicable". */
export const RATE_LIMITS = {
  runsync: { perWindow: 2000, concurrent: 400 },
  run: { perWindow: 1000, concurrent: 200 },
  status: { perWindow: 2000, concurrent: 400 },
  stream: { perWindow: 2000, concurrent: 400 },
  cancel: { perWindow: 100, concurrent: 20 },
  'purge-queue': { perWindow: 2, concurrent: null },
  openai: { perWindow: 2000, concurrent: 400 },
  requests: { perWindow: 10, concurrent: 2 },
} as const satisfies Record<string, { perWindow: number; concurrent: number | null }>;

export type RateOperation = keyof typeof RATE_LIMITS;

export const GPU_TIERS = [
  'AMPERE_16',
  'AMPERE_24',
  'ADA_24',
  'AMPERE_48',
  'ADA_48_PRO',
  'AMPERE_80',
  'ADA_80_PRO',
] as const;

export const LOCATIONS = ['CZ', 'FR', 'GB', 'NO', 'RO', 'US'] as const;

export const JOB_STATUSES = [
  'IN_QUEUE',
  'IN_PROGRESS',
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'TIMED_OUT',
] as const;
export type JobStatusValue = (typeof JOB_STATUSES)[number];

const TERMINAL: ReadonlySet<JobStatusValue> = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT']);
export const isTerminal = (status: JobStatusValue): boolean => TERMINAL.has(status);

/** A sanity bound so a typo cannot ask the emulator for a million workers. */
export const MAX_WORKERS = 1000;
