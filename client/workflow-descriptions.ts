/**
 * What each of the library's workflows says about itself in the Temporal UI from the moment it
 * starts: a one-line static summary and Markdown static details (`staticSummary` /
 * `staticDetails` of the start options and of schedule actions). Pure: rendered from the input
 * the facade has already checked, so a test reads them without a server.
 */
import type { WorkflowDescription } from '../contracts/automation-start';
import { type BatchInput, parseBatchInput } from '../contracts/batch-input';
import type {
  EphemeralEndpointInput,
  ProvisionEndpointInput,
  TeardownEndpointInput,
  UpdateEndpointInput,
} from '../contracts/endpoint-input';
import { type JobWorkflowInput, parseJobWorkflowInput } from '../contracts/job-input';
import { type PipelineInput, parsePipelineInput } from '../contracts/pipeline-input';
import {
  code,
  formatBytes,
  formatCount,
  formatDuration,
  formatMoney,
  markdownTable,
} from '../contracts/progress-markdown';
import { endpointWindows, type Route } from '../contracts/route';

// An automation's texts are built in contracts/, where the activity that starts one reads them too.
export { describeAutomation, type WorkflowDescription } from '../contracts/automation-start';

const jsonBytes = (value: unknown): number =>
  value === undefined ? 0 : Buffer.byteLength(JSON.stringify(value));

function retryText(retry: {
  maxRetries: number;
  initialInterval: number;
  backoffCoefficient: number;
  on: string[];
}): string {
  if (retry.maxRetries === 0) return 'none (a FAILED or TIMED_OUT run ends the job)';
  const times = retry.maxRetries === 1 ? 'once' : `up to ${retry.maxRetries} times`;
  return `${times} on ${retry.on.join(', ')}, first after ${formatDuration(retry.initialInterval)}, backoff ×${retry.backoffCoefficient}`;
}

/** A route's endpoints in the order work goes to them: `a → b → c`. */
function routeText(route: Route): string {
  return route.endpoints.map((endpoint) => endpoint.endpointId).join(' → ');
}

/** Where the work runs, for a summary: `endpoint a` or `route a → b`. */
function targetText(input: { endpointId: string; route?: Route | undefined }): string {
  return input.route ? `route ${routeText(input.route)}` : `endpoint ${input.endpointId}`;
}

/** The details' first row: the endpoint, or the route's endpoints in order. */
function targetRow(input: { endpointId: string; route?: Route | undefined }): [string, string] {
  return input.route
    ? ['Route', input.route.endpoints.map((endpoint) => code(endpoint.endpointId)).join(' → ')]
    : ['Endpoint', code(input.endpointId)];
}

/** The rows a route adds to the details (none for a single endpoint). */
function routeRows(route: Route | undefined): [string, string | undefined][] {
  if (!route) return [];
  return [
    ['Queue delay limit', `${formatDuration(route.queueDelayLimit)} (then withdrawn to the next endpoint)`],
    [
      'Capacity failures',
      route.capacityFailures.length > 0
        ? route.capacityFailures.map((text) => code(text)).join(', ')
        : 'none (a failure is retried on the same endpoint)',
    ],
  ];
}

/** A job: endpoint or route, input size, ttl, retry policy (the input must be valid: validateJobInput first). */
export function describeJob(input: JobWorkflowInput): WorkflowDescription {
  const parsed = parseJobWorkflowInput(input);
  if (!parsed.ok) throw new Error(`describeJob needs a valid input (${parsed.field} ${parsed.rule})`);
  const { options, ttlMs } = parsed.value;
  const inputText = options.request
    ? formatBytes(jsonBytes(options.request.input))
    : `item ${options.requestRef?.index} of manifest ${code(options.requestRef?.manifestKey ?? '')}`;
  return {
    staticSummary: `Job on ${targetText(options)} (${options.mode}, input ${options.request ? formatBytes(jsonBytes(options.request.input)) : 'by reference'})`,
    staticDetails: [
      '**Serverless job**',
      '',
      markdownTable([
        targetRow(options),
        ...routeRows(options.route),
        ['Mode', options.mode],
        ['Input', inputText],
        ['ttl', formatDuration(ttlMs)],
        ['Retry', retryText(options.retry)],
        ['Expired job', options.onExpired === 'resubmit' ? 'submitted again' : 'fails the job'],
        ['Submissions allowed', formatCount(options.maxSubmissions)],
        ['Ends with event to', options.emitOnEnd ? code(options.emitOnEnd.automation) : undefined],
      ]),
    ].join('\n'),
  };
}

function itemSource(items: BatchInput['items']): { summary: string; detail: string } {
  if ('inline' in items) {
    const count = formatCount(items.inline.length);
    return { summary: `${count} items`, detail: `${count} inline items` };
  }
  if ('manifest' in items)
    return {
      summary: 'items of a manifest',
      detail: `manifest ${code(items.manifest.key)} (counted at start)`,
    };
  return {
    summary: 'redrive of a batch',
    detail: `the failed items of the batch at ${code(items.redrive.key)} (counted at start)`,
  };
}

function toleranceText(tolerance: { count?: number | undefined; percentage?: number | undefined }): string {
  const bounds = [
    tolerance.count !== undefined ? `${formatCount(tolerance.count)} failed items` : undefined,
    tolerance.percentage !== undefined ? `${tolerance.percentage}% of items` : undefined,
  ].filter((bound): bound is string => bound !== undefined);
  return bounds.length === 0
    ? 'none: the first failed item fails the batch'
    : `at most ${bounds.join(' and ')}`;
}

/** Each endpoint's window of a batch over a route, from the shares: `a` 50, `b` 50 (of the starting concurrency). */
function windowsText(route: Route, maxConcurrency: number): string {
  const windows = endpointWindows(route, maxConcurrency);
  const each = route.endpoints
    .map((endpoint, k) => `${code(endpoint.endpointId)} ${formatCount(windows[k] ?? 0)}`)
    .join(', ');
  // The batch reads each endpoint's workersMax when it starts, which may lower these.
  return `${each}, at most each endpoint's workers and a quarter more`;
}

/** A batch: item source and count, endpoint or route, concurrency, tolerance, budget. */
export function describeBatch(input: BatchInput): WorkflowDescription {
  const parsed = parseBatchInput(input);
  if (!parsed.ok) throw new Error(`describeBatch needs a valid input (${parsed.field} ${parsed.rule})`);
  const batch = parsed.value;
  const source = itemSource(input.items);
  const perEndpoint = batch.mode === 'activities' ? batch.route : undefined;
  return {
    staticSummary: `Batch of ${source.summary} on ${targetText(batch)}, ${formatCount(batch.maxConcurrency)} at once`,
    staticDetails: [
      '**Serverless batch**',
      '',
      markdownTable([
        targetRow(batch),
        // Mode 'children' hands the route to each item's job workflow: no windows, no drains.
        ['Endpoint windows', perEndpoint ? windowsText(perEndpoint, batch.maxConcurrency) : undefined],
        ...routeRows(batch.route),
        [
          'Recheck a drained endpoint after',
          perEndpoint ? formatDuration(perEndpoint.recheckAfter) : undefined,
        ],
        ['Items', source.detail],
        ['Mode', batch.mode === 'children' ? 'one child job workflow per item' : 'activities'],
        ['Concurrency', `${formatCount(batch.maxConcurrency)} jobs in flight (changeable while running)`],
        ['Failure tolerance', toleranceText(batch.failureTolerance)],
        ['Budget', batch.budget !== undefined ? formatMoney(batch.budget) : 'none'],
        ['Item retry', retryText(batch.job.retry)],
        ['Ends with event to', batch.emitOnEnd ? code(batch.emitOnEnd.automation) : undefined],
      ]),
    ].join('\n'),
  };
}

/** A pipeline: its stages in order, each on its endpoint or route, and its items. */
export function describePipeline(input: PipelineInput): WorkflowDescription {
  const parsed = parsePipelineInput(input);
  if (!parsed.ok) throw new Error(`describePipeline needs a valid input (${parsed.field} ${parsed.rule})`);
  const pipeline = parsed.value;
  const redrive = 'redrive' in input.items;
  const source = redrive
    ? {
        summary: 'redrive of a pipeline',
        detail: `the pieces of the pipeline at ${code((input.items as { redrive: { key: string } }).redrive.key)} that did not complete, each at its stage`,
      }
    : itemSource(input.items);
  return {
    staticSummary: `Pipeline of ${source.summary} through ${pipeline.stages.length} stages: ${pipeline.stages.map((stage) => stage.name).join(' → ')}`,
    staticDetails: [
      '**Serverless pipeline**',
      '',
      markdownTable([
        ['Items', source.detail],
        ...pipeline.stages.map((stage, at): [string, string] => [
          `Stage ${at + 1}: ${code(stage.name)}`,
          `on ${targetText(stage)}, ${formatCount(stage.maxConcurrency)} at once` +
            (stage.transform
              ? `, input by transform ${code(stage.transform.name)}`
              : stage.map
                ? ', input by a map'
                : ''),
        ]),
        ['Budget', pipeline.budget !== undefined ? formatMoney(pipeline.budget) : 'none'],
        ['Ends with event to', pipeline.emitOnEnd ? code(pipeline.emitOnEnd.automation) : undefined],
      ]),
    ].join('\n'),
  };
}

export type EndpointStep =
  | { step: 'provision'; input: ProvisionEndpointInput }
  | { step: 'update'; input: UpdateEndpointInput }
  | { step: 'teardown'; input: TeardownEndpointInput }
  | { step: 'ephemeral'; input: EphemeralEndpointInput };

/** An endpoint lifecycle workflow: the endpoint and the step. */
export function describeEndpointStep(what: EndpointStep): WorkflowDescription {
  const rows: [string, string | undefined][] = [['Step', what.step]];
  let summary: string;
  switch (what.step) {
    case 'provision': {
      const name = what.input.name ?? '(named after the workflow)';
      summary = `Provision endpoint ${name} from template ${what.input.templateId}`;
      rows.push(['Endpoint name', code(name)], ['Template', code(what.input.templateId)]);
      break;
    }
    case 'update':
      summary = `Update endpoint ${what.input.endpointId}`;
      rows.push(
        ['Endpoint', code(what.input.endpointId)],
        ['Changes', Object.keys(what.input.changes ?? {}).join(', ') || 'none'],
      );
      break;
    case 'teardown': {
      const target = what.input.endpointId ?? `named ${what.input.name}`;
      summary = `Tear down endpoint ${target}`;
      rows.push(['Endpoint', code(target)]);
      break;
    }
    case 'ephemeral': {
      const work = what.input.batch
        ? 'a batch'
        : `${formatCount(what.input.jobs?.length ?? 0)} job workflow(s)`;
      summary = `Ephemeral endpoint from template ${what.input.endpoint.templateId} for ${work}`;
      rows.push(
        ['Template', code(what.input.endpoint.templateId)],
        ['Runs', work],
        ['Then', 'the endpoint is torn down, whatever happened'],
      );
      break;
    }
  }
  return {
    staticSummary: summary,
    staticDetails: ['**Endpoint lifecycle**', '', markdownTable(rows)].join('\n'),
  };
}
