/**
 * The automation activities: the definitions registered on this worker (dependency injection),
 * turned into flow controls for the workflow (describeAutomation) and into runs for a group of
 * events (planAutomationRun: the user's `run` is code the workflow must not run itself); the wait
 * for a run started by an earlier run of the automation (awaitAutomationRun); and the end event of
 * a job, batch or run (emitEvent).
 */
import { Context } from '@temporalio/activity';
import { type Client, WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { ValidationError } from '../api/errors';
import { jobRequestBody } from '../api/jobs';
import type { JobRequestInput } from '../api/schemas/job';
import {
  type AutomationControls,
  type AutomationControlsInput,
  type AutomationEvent,
  automationControlsSchema,
  automationNameSchema,
  automationWorkflowId,
  type EmitOnEnd,
  emitOnEndSchema,
  parseAutomationEvent,
  runCost,
} from '../contracts/automation-input';
import { failedRunCost } from '../contracts/automation-run-cost';
import { automationStartOptions } from '../contracts/automation-start';
import { type BatchInput, parseBatchInput } from '../contracts/batch-input';
import { firstIssue } from '../contracts/input-rules';
import { type JobWorkflowInput, parseJobWorkflowInput } from '../contracts/job-input';
import { type PipelineInput, parsePipelineInput } from '../contracts/pipeline-input';
import { SIGNAL_NAMES } from '../contracts/signal-names';
import { type BatchStore, batchKeyFor, createLocalBatchStore } from '../stores/batch-store';

/** What an automation runs for a group of events: a job, a batch or a pipeline (or nothing: null). */
export type RunPlan =
  | { kind: 'job'; input: JobWorkflowInput }
  | { kind: 'batch'; input: BatchInput }
  | { kind: 'pipeline'; input: PipelineInput };

export interface AutomationRunContext {
  name: string;
  key: string;
  /** The workflow id the run will have. */
  runId: string;
}

export type AutomationDefinition = AutomationControlsInput & {
  name: string;
  run: (events: AutomationEvent[], ctx: AutomationRunContext) => RunPlan | null | Promise<RunPlan | null>;
  /** Each run of this automation emits its end event here (the key defaults to the run's key). */
  emitOnEnd?: EmitOnEnd;
};

/** Checks a definition's name and flow controls (ValidationError naming the field) and returns it. */
export function defineAutomation(definition: AutomationDefinition): AutomationDefinition {
  const name = automationNameSchema.safeParse(definition.name);
  if (!name.success) throw new ValidationError('name', firstIssue(name.error).rule);
  const { name: _n, run, emitOnEnd, ...controls } = definition;
  if (typeof run !== 'function') throw new ValidationError('run', 'must be a function');
  const parsed = automationControlsSchema.safeParse(controls);
  if (!parsed.success) {
    const issue = firstIssue(parsed.error);
    throw new ValidationError(issue.field, issue.rule);
  }
  if (emitOnEnd !== undefined) {
    const end = emitOnEndSchema.safeParse(emitOnEnd);
    if (!end.success) {
      const issue = firstIssue(end.error, 'emitOnEnd');
      throw new ValidationError(issue.field, issue.rule);
    }
  }
  return definition;
}

export interface AutomationActivityDeps {
  automations?: readonly AutomationDefinition[];
  /** The worker's Temporal client: end events are signals, and runs are looked up by id. */
  temporalClient?: Client;
  /** Where a batch run's items go (a manifest); default: `<resultStoreDir>/batches`. */
  batchStore?: BatchStore;
  resultStoreDir?: string;
  /** The task queue of the automation workflows emitEvent starts. */
  taskQueue?: string;
  /** How often awaitAutomationRun looks at a run started by an earlier workflow run. */
  runPollMs?: number;
}

export interface PlanRunInput {
  name: string;
  key: string;
  /** The child workflow id the run will have (the manifest key derives from it). */
  runId: string;
  events: AutomationEvent[];
}

/** A validated plan; a batch's or pipeline's items are always in a manifest, so no item list enters history. */
export type PlannedRun =
  | { kind: 'job'; input: JobWorkflowInput }
  | { kind: 'batch'; input: BatchInput & { items: { manifest: { key: string } } } }
  | { kind: 'pipeline'; input: PipelineInput & { items: { manifest: { key: string } } } };

export const AUTOMATION_NOT_REGISTERED = 'AutomationNotRegistered';
export const AUTOMATION_RUN_RUNNING = 'AutomationRunRunning';

function badPlan(name: string, field: string, rule: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: 'BadRequest',
    message: `automation ${name} planned an invalid run: ${field}: ${rule}`,
    nonRetryable: true,
    details: [{ field, rule }],
  });
}

export function createAutomationActivities(deps: AutomationActivityDeps) {
  const byName = new Map((deps.automations ?? []).map((definition) => [definition.name, definition]));
  const store = () => deps.batchStore ?? createLocalBatchStore(`${deps.resultStoreDir ?? 'results'}/batches`);
  const client = (): Client => {
    if (!deps.temporalClient)
      throw ApplicationFailure.nonRetryable(
        'this worker has no Temporal client for automations',
        'BadRequest',
      );
    return deps.temporalClient;
  };

  function definitionOf(name: string): AutomationDefinition {
    const definition = byName.get(name);
    if (definition) return definition;
    const known = [...byName.keys()].sort().join(', ') || 'none';
    throw ApplicationFailure.create({
      type: AUTOMATION_NOT_REGISTERED,
      message: `no automation named "${name}" is registered on this worker (registered: ${known}); pass it in runWorker's automations`,
      nonRetryable: true,
    });
  }

  return {
    async describeAutomation(name: string): Promise<AutomationControls> {
      const { name: _n, run: _r, emitOnEnd: _e, ...controls } = definitionOf(name);
      return automationControlsSchema.parse(controls);
    },

    async planAutomationRun(input: PlanRunInput): Promise<PlannedRun | null> {
      const definition = definitionOf(input.name);
      const plan = await definition.run(input.events, {
        name: input.name,
        key: input.key,
        runId: input.runId,
      });
      if (plan === null || plan === undefined) return null;
      const emitOnEnd = definition.emitOnEnd
        ? {
            emitOnEnd: {
              automation: definition.emitOnEnd.automation,
              key: definition.emitOnEnd.key ?? input.key,
            },
          }
        : {};
      if (plan.kind === 'job') {
        const job = { ...plan.input, ...emitOnEnd } as JobWorkflowInput;
        const parsed = parseJobWorkflowInput(job);
        if (!parsed.ok) throw badPlan(input.name, `input.${parsed.field}`, parsed.rule);
        return { kind: 'job', input: job };
      }
      if (plan.kind !== 'batch' && plan.kind !== 'pipeline')
        throw badPlan(input.name, 'kind', "must be 'job', 'batch' or 'pipeline'");
      const batch = { ...plan.input, ...emitOnEnd } as BatchInput | PipelineInput;
      const parsed = plan.kind === 'batch' ? parseBatchInput(batch) : parsePipelineInput(batch);
      if (!parsed.ok) throw badPlan(input.name, `input.${parsed.field}`, parsed.rule);
      const items = batch.items as { inline?: JobRequestInput[] };
      if (!items.inline) return { kind: plan.kind, input: batch } as PlannedRun;
      const lines = items.inline.map((request, k) => {
        try {
          return jobRequestBody(request, 'run');
        } catch (error) {
          if (error instanceof ValidationError)
            throw badPlan(input.name, `input.items.inline.${k}.${error.field}`, error.rule);
          throw error;
        }
      });
      // Keyed by the run's workflow id: a retried plan rewrites the same manifest.
      const key = `automations/${batchKeyFor(input.runId)}.jsonl`;
      await store().writeLines(key, lines);
      return { kind: plan.kind, input: { ...batch, items: { manifest: { key } } } } as PlannedRun;
    },

    /**
     * How a run started by an earlier run of the automation ended. One look per attempt: while it
     * runs, a benign retryable failure asks for the next look later, so no slot is held and no
     * history is written until it ends (the job wait's pattern, activities/job-wait.ts).
     */
    async awaitAutomationRun(input: {
      workflowId: string;
    }): Promise<{ outcome: 'completed' | 'failed'; cost: number }> {
      const handle = client().workflow.getHandle(input.workflowId);
      let status: string;
      try {
        status = (await handle.describe()).status.name;
      } catch (error) {
        if (error instanceof WorkflowNotFoundError) return { outcome: 'failed', cost: 0 };
        throw error;
      }
      // The run's cost rides in its result (a job's or a batch's summary), for the budget.
      if (status === 'COMPLETED') return { outcome: 'completed', cost: runCost(await handle.result()) };
      if (status === 'RUNNING' || status === 'CONTINUED_AS_NEW') {
        throw ApplicationFailure.create({
          type: AUTOMATION_RUN_RUNNING,
          message: `run ${input.workflowId} is still running`,
          nonRetryable: false,
          nextRetryDelay: deps.runPollMs ?? 5_000,
          category: ApplicationFailureCategory.BENIGN,
        });
      }
      // Failed (or terminated, cancelled, timed out): a failure's details may carry its cost, as
      // for a run that ends while the workflow waits on it.
      const cost = await handle.result().then(runCost, (error: unknown) => {
        if (error instanceof WorkflowFailedError) return failedRunCost(error);
        throw error;
      });
      return { outcome: 'failed', cost };
    },

    /** Sends an end event to an automation, starting it if needed (idempotent by the event's id). */
    async emitEvent(input: { automation: string; key: string; event: AutomationEvent }): Promise<void> {
      const parsed = parseAutomationEvent(input.event);
      if (!parsed.ok)
        throw ApplicationFailure.nonRetryable(`end event: ${parsed.field}: ${parsed.rule}`, 'BadRequest');
      const taskQueue = deps.taskQueue ?? Context.current().info.taskQueue;
      await client().workflow.signalWithStart('automationWorkflow', {
        workflowId: automationWorkflowId(input.automation, input.key),
        taskQueue,
        args: [{ name: input.automation, key: input.key }],
        // As sendEvent starts one: the same summary, details and search attributes.
        ...automationStartOptions(input.automation, input.key),
        signal: SIGNAL_NAMES.automationEvent,
        signalArgs: [parsed.event],
      });
    },
  };
}

export type AutomationActivities = ReturnType<typeof createAutomationActivities>;
