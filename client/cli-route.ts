/**
 * Where a CLI command's work runs: one endpoint (`--endpoint ep-1`) or a route through several
 * (`--route ep-a,ep-b`, or `--route-file route.json` for weights, prices, shares and input
 * overrides), with `--queue-delay-limit` and `--capacity-failure` on top. The route is checked by
 * the library's own schema (contracts/route.ts) before anything is sent; an error names the flag
 * and the field behind it.
 *
 *   npm run cli -- job start my-job --route ep-a100,ep-h100 --queue-delay-limit 2m \
 *     --capacity-failure 'out of memory' --input '{"prompt":"hi"}'
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { ValidationError } from '../api/errors';
import { firstIssue } from '../contracts/input-rules';
import { type RouteInput, routeSchema } from '../contracts/route';

/** The flags of a command that takes an endpoint or a route (commander's camelCase names). */
export interface TargetFlags {
  endpoint?: unknown;
  route?: unknown;
  routeFile?: unknown;
  queueDelayLimit?: unknown;
  capacityFailure?: unknown;
}

/** Where the work runs, as the job and batch inputs take it (nothing when no flag names it). */
export type Target = { endpointId: string } | { route: RouteInput } | Record<string, never>;

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** Adds the route flags (after the command's --endpoint) to a command that starts a job or a batch. */
export function routeOptions(command: Command, prefix = ''): Command {
  return command
    .option(
      '--route <ids>',
      `${prefix}or a route: endpoint ids in the order work goes to them, e.g. ep-a,ep-b`,
    )
    .option(
      '--route-file <path>',
      `${prefix}or a route as JSON (endpoints with weight, pricePerSecond, maxShare, inputOverrides)`,
    )
    .option(
      '--queue-delay-limit <duration>',
      `${prefix}route: withdraw a job queued this long with no idle worker, to the next endpoint (default 60s)`,
    )
    .option(
      '--capacity-failure <text>',
      `${prefix}route: an error text that moves a FAILED job to the next endpoint (repeatable)`,
      collect,
    );
}

/** The route's help, shown after a command's options. */
export const ROUTE_HELP = `
A route names endpoints that run the same worker image: work goes to the first with room; a job
queued past --queue-delay-limit while its endpoint has no idle worker is withdrawn (moved only
once the service confirms it never started) and sent to the next; a FAILED job whose error
contains a --capacity-failure text moves on instead of being retried on the same endpoint.
--route-file takes the whole route, e.g.
  {"endpoints": [{"endpointId": "ep-a", "pricePerSecond": 0.0004},
                 {"endpointId": "ep-b", "pricePerSecond": 0.0009, "maxShare": 0.5}],
   "queueDelayLimit": "2m", "capacityFailures": ["out of memory"]}
The flags --queue-delay-limit and --capacity-failure override the file's fields.
`;

function readRouteFile(raw: string): Record<string, unknown> {
  const file = raw.startsWith('@') ? raw.slice(1) : raw;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ValidationError(
      '--route-file',
      `cannot read ${file}: ${(error as NodeJS.ErrnoException).code}`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ValidationError('--route-file', 'must be a JSON file');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ValidationError('--route-file', 'must hold a JSON object: { "endpoints": [...], ... }');
  return value as Record<string, unknown>;
}

function routeIds(raw: string): { endpointId: string }[] {
  const ids = raw.split(',').map((id) => id.trim());
  if (ids.some((id) => id === ''))
    throw new ValidationError('--route', 'must be endpoint ids separated by commas, e.g. ep-a,ep-b');
  return ids.map((endpointId) => ({ endpointId }));
}

/** The flag behind a field of the route, so that an error names what the user typed. */
function flagOf(field: string, fromFile: boolean): string {
  if (field.startsWith('queueDelayLimit')) return '--queue-delay-limit';
  if (field.startsWith('capacityFailures')) return '--capacity-failure';
  return fromFile ? '--route-file' : '--route';
}

/**
 * `{ endpointId }` from --endpoint, `{ route }` from --route or --route-file (with the route flags
 * on top), or `{}` when none is given and `required` is false (the whole input may come from
 * --input). The route is handed on as written: the workflow parses it again.
 */
export function targetOf(flags: TargetFlags, { required }: { required: boolean }): Target {
  const endpoint = typeof flags.endpoint === 'string' ? flags.endpoint : undefined;
  const ids = typeof flags.route === 'string' ? flags.route : undefined;
  const file = typeof flags.routeFile === 'string' ? flags.routeFile : undefined;
  const delay = typeof flags.queueDelayLimit === 'string' ? flags.queueDelayLimit : undefined;
  const failures = Array.isArray(flags.capacityFailure) ? (flags.capacityFailure as string[]) : undefined;
  if (endpoint !== undefined && (ids !== undefined || file !== undefined))
    throw new ValidationError(
      ids !== undefined ? '--route' : '--route-file',
      'give either --endpoint or a route, not both',
    );
  if (ids !== undefined && file !== undefined)
    throw new ValidationError('--route-file', 'give either --route a,b or --route-file, not both');
  if (ids === undefined && file === undefined) {
    if (delay !== undefined || failures !== undefined)
      throw new ValidationError(
        delay !== undefined ? '--queue-delay-limit' : '--capacity-failure',
        'applies to a route: give --route a,b or --route-file',
      );
    if (endpoint !== undefined) return { endpointId: endpoint };
    if (required)
      throw new ValidationError('--endpoint', 'give --endpoint <id>, --route a,b or --route-file <path>');
    return {};
  }
  const route: Record<string, unknown> =
    file !== undefined ? readRouteFile(file) : { endpoints: routeIds(ids!) };
  if (delay !== undefined) route.queueDelayLimit = delay;
  if (failures !== undefined) route.capacityFailures = failures;
  const parsed = routeSchema.safeParse(route);
  if (!parsed.success) {
    const { field, rule } = firstIssue(parsed.error, 'route');
    throw new ValidationError(`${flagOf(field.slice('route.'.length), file !== undefined)} (${field})`, rule);
  }
  return { route: route as RouteInput };
}
