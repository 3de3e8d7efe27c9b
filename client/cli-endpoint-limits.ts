/**
 * `durable-serverless endpoint limits <endpoint-id>`: an endpoint's shared limits as its gate holds
 * them (client/endpoint-limits.ts), and the operator's controls: pause and resume every workload's
 * submits to it, set or clear its /run limit, weigh its fairness keys.
 *
 *   npm run cli -- endpoint limits ep-1
 *   npm run cli -- endpoint limits ep-1 --pause
 *   npm run cli -- endpoint limits ep-1 --run-limit 500 --weight tenant-a=3 --weight tenant-b=1
 *   npm run cli -- endpoint limits ep-1 --resume --clear-run-limit --clear-weight tenant-a
 *
 * JSON out; a bad flag is refused (exit 2) before anything is contacted.
 */
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { ValidationError } from '../api/errors';
import type { GateControls } from '../contracts/endpoint-gate';
import { getEndpointLimits, setEndpointLimits } from './endpoint-limits';

export interface EndpointLimitsCliContext {
  out: (text: string) => void;
  connect: () => Promise<Client>;
  taskQueue: () => string;
}

interface LimitsFlags {
  pause?: boolean;
  resume?: boolean;
  runLimit?: string;
  clearRunLimit?: boolean;
  weight?: string[];
  clearWeight?: string[];
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** The controls the flags ask for; undefined when they ask for none (show only). */
export function limitsControls(flags: LimitsFlags): GateControls | undefined {
  if (flags.pause && flags.resume) throw new ValidationError('--pause', 'cannot go with --resume');
  if (flags.runLimit !== undefined && flags.clearRunLimit) {
    throw new ValidationError('--run-limit', 'cannot go with --clear-run-limit');
  }
  const controls: GateControls = {};
  if (flags.pause) controls.paused = true;
  if (flags.resume) controls.paused = false;
  if (flags.clearRunLimit) controls.runLimit = null;
  if (flags.runLimit !== undefined) {
    const limit = Number(flags.runLimit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1_000_000) {
      throw new ValidationError('--run-limit', 'must be an integer from 1 to 1000000 (requests per 10 s)');
    }
    controls.runLimit = limit;
  }
  const weights: Record<string, number | null> = {};
  for (const pair of flags.weight ?? []) {
    const at = pair.lastIndexOf('=');
    const weight = Number(pair.slice(at + 1));
    if (at < 0 || !(weight > 0 && weight <= 1000)) {
      throw new ValidationError('--weight', 'must be key=weight, with a weight above 0, at most 1000');
    }
    weights[pair.slice(0, at)] = weight;
  }
  for (const key of flags.clearWeight ?? []) weights[key] = null;
  if (Object.keys(weights).length > 0) controls.weights = weights;
  return Object.keys(controls).length === 0 ? undefined : controls;
}

export function addEndpointLimitsCommand(endpoint: Command, ctx: EndpointLimitsCliContext): void {
  endpoint
    .command('limits')
    .description(
      "an endpoint's shared limits (its gate: /run window, fairness keys); pause, resume, set the limit or weights",
    )
    .argument('<endpoint-id>')
    .option('--pause', 'grant no submits to any workload on the endpoint until --resume')
    .option('--resume', 'grant submits again')
    .option('--run-limit <n>', "the endpoint's /run requests per 10 s, over the workers' own")
    .option('--clear-run-limit', "back to the workers' own /run limit")
    .option('--weight <key=weight>', "a fairness key's weight, over the workloads' own (repeatable)", collect)
    .option('--clear-weight <key>', "back to the workloads' own weight for this key (repeatable)", collect)
    .action(async (endpointId: string, flags: LimitsFlags) => {
      const controls = limitsControls(flags);
      const client = await ctx.connect();
      const view = controls
        ? await setEndpointLimits(client, endpointId, controls, { taskQueue: ctx.taskQueue() })
        : await getEndpointLimits(client, endpointId);
      ctx.out(
        `${JSON.stringify(view ?? { endpointId, gate: 'none running: nothing submitted lately, no control set' }, null, 2)}\n`,
      );
    });
}
