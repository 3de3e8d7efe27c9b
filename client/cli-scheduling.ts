/**
 * How a CLI-started job or batch shares its endpoints with other work: `--priority` (1 first to 5
 * last, default 3), `--fairness-key` (a tenant) and `--fairness-weight` (its share against the other
 * keys waiting on the same endpoint). Checked by the library's own schema (contracts/endpoint-gate.ts)
 * before anything is sent; an error names the flag.
 *
 *   npm run cli -- batch start nightly --endpoint ep-1 --items @items.jsonl --priority 5 \
 *     --fairness-key tenant-a --fairness-weight 2
 */
import type { Command } from 'commander';
import { ValidationError } from '../api/errors';
import { type Scheduling, schedulingSchema } from '../contracts/endpoint-gate';

export interface SchedulingFlags {
  priority?: unknown;
  fairnessKey?: unknown;
  fairnessWeight?: unknown;
}

/** Adds the scheduling flags to a command that starts a job or a batch. */
export function schedulingOptions(command: Command): Command {
  return command
    .option(
      '--priority <1-5>',
      'submits before lower priorities on the endpoint: 1 first, 5 last (default 3)',
    )
    .option('--fairness-key <key>', "the tenant whose share of the endpoint's submits this draws on")
    .option('--fairness-weight <w>', "the key's weight against the other keys on the endpoint (default 1)");
}

const FLAGS: Record<keyof Scheduling, string> = {
  priority: '--priority',
  fairnessKey: '--fairness-key',
  fairnessWeight: '--fairness-weight',
};

/** The scheduling fields the flags name (none when none is given). */
export function schedulingOf(flags: SchedulingFlags): Scheduling {
  const raw = {
    ...(typeof flags.priority === 'string' ? { priority: Number(flags.priority) } : {}),
    ...(typeof flags.fairnessKey === 'string' ? { fairnessKey: flags.fairnessKey } : {}),
    ...(typeof flags.fairnessWeight === 'string' ? { fairnessWeight: Number(flags.fairnessWeight) } : {}),
  };
  const parsed = schedulingSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = FLAGS[issue?.path[0] as keyof Scheduling] ?? '--priority';
    throw new ValidationError(field, issue?.message ?? 'is invalid');
  }
  return parsed.data;
}
