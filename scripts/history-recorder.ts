/**
 * The scaffold of the scripts that record workflow histories for the replay guard: a throwaway dev
 * server (with the library's search attributes), one worker on the workflows and activities given,
 * and a `save` that writes a finished run's history into test/fixtures. Each script says which run
 * it records and why; this says how.
 *
 * A published version's histories are kept, never re-recorded: a change to a workflow's commands
 * ships with a patch or a Worker Versioning build, and its new histories are added beside the old
 * ones (docs/operations/workflow-changes.md).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { searchAttributeKeys } from '../workflows/shared/search-attributes';
import { ensureTemporalCli } from './servers';

export interface Recording {
  client: Client;
  taskQueue: string;
  /** Waits for the run's end (a failure is a recorded outcome too) and writes its history. */
  save(name: string, handle: WorkflowHandle): Promise<void>;
}

export async function recordHistories(
  options: { taskQueue: string; workflowsPath: string; activities: object },
  run: (recording: Recording) => Promise<void>,
): Promise<void> {
  const cli = await ensureTemporalCli(console.log);
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      ...(cli ? { executable: { type: 'existing-path' as const, path: cli } } : {}),
      searchAttributes: searchAttributeKeys,
    },
  });
  try {
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: options.taskQueue,
      workflowsPath: options.workflowsPath,
      activities: options.activities,
    });
    await worker.runUntil(
      run({
        client: env.client,
        taskQueue: options.taskQueue,
        async save(name, handle) {
          console.log(`${name}:`, await handle.result().catch((error: unknown) => error));
          const history = await handle.fetchHistory();
          const target = path.join(__dirname, `../test/fixtures/${name}.history.json`);
          writeFileSync(target, `${historyToJSON(history)}\n`);
          console.log(`wrote ${target} (${history.events?.length} events)`);
        },
      }),
    );
  } finally {
    await env.teardown();
  }
}

/** A recording script's entry point: exit 1 with the error on failure. */
export function runRecording(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
