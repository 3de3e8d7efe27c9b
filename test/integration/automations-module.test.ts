/**
 * The packaged worker's automations: the real entry point (`npm run worker`, worker/main.ts) in a
 * child process with WORKER_AUTOMATIONS_MODULE naming a fixture module, configured from the
 * environment alone as the docker image is. A signed event over HTTP at its gateway runs the
 * module's automation (a job at the emulator carrying the event's id); a module exporting no
 * automation stops the process with exit code 2, naming the variable, before it connects.
 */
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import path from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { automationWorkflowId } from '../../client/automations';
import { eventHeaders } from '../../client/event-signature';
import { automationStateQuery } from '../../workflows/automation/automation-definitions';
import { eventually, type JobStack, spawnWorker, startJobStack } from '../support/integration';
import { uniqueTaskQueue } from '../support/temporal';

const repoRoot = path.resolve(__dirname, '../..');
const AUTOMATION = 'fixture-echo';

describe('WORKER_AUTOMATIONS_MODULE in the worker process (dev server, emulator over HTTP)', () => {
  let stack: JobStack;
  beforeAll(async () => {
    stack = await startJobStack({ name: 'automations-module', timeScale: 100, worker: false });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it("runs the module's automation for an event sent to its gateway", async () => {
    const endpointId = stack.endpoint();
    const eventSecret = `whsec_${randomBytes(32).toString('base64')}`;
    const { TEMPORAL_ADDRESS: _address, ...service } = stack.workerEnv;
    const worker = spawnWorker({
      ...service,
      TEMPORAL_TASK_QUEUE: uniqueTaskQueue('automations-module'),
      WEBHOOK_SECRET: randomBytes(32).toString('base64url'),
      WEBHOOK_PORT: '0',
      EVENT_SIGNING_SECRETS: eventSecret,
      WORKER_AUTOMATIONS_MODULE: './test/fixtures/automations/echo.mjs',
      FIXTURE_ENDPOINT_ID: endpointId,
    });
    const key = `key-${randomUUID().slice(0, 8)}`;
    const eventId = `evt-${randomUUID()}`;
    try {
      await worker.running;
      const body = JSON.stringify({ key, type: 'upload', data: { n: 1 } });
      const answer = await request(`${worker.gatewayUrl()}/events/${AUTOMATION}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...eventHeaders(eventSecret, eventId, body) },
        body,
      });
      expect({ status: answer.statusCode, body: await answer.body.text() }).toEqual({
        status: 200,
        body: '{"received":true}',
      });

      // The run ends completed, not failed with AutomationNotRegistered.
      const handle = stack.client.workflow.getHandle(automationWorkflowId(AUTOMATION, key));
      const state = await eventually(async () => {
        const current = await handle.query(automationStateQuery).catch(() => undefined);
        // Fail fast where the bug would show: the automation workflow failing at its first event.
        if (!current && (await handle.describe().catch(() => undefined))?.status.name === 'FAILED')
          throw new Error(
            `the automation workflow failed: ${await handle.result().catch((e: Error) => (e.cause instanceof Error ? e.cause : e).message)}`,
          );
        return current && current.counters.runsCompleted + current.counters.runsFailed >= 1
          ? current
          : undefined;
      }, 120_000);
      expect(state.counters).toMatchObject({ received: 1, runsStarted: 1, runsCompleted: 1, runsFailed: 0 });
      expect(stack.control.jobs(endpointId).map((job) => job.input)).toEqual([
        { output: { eventIds: [eventId] } },
      ]);
      const loaded = worker
        .output()
        .split('\n')
        .flatMap((line) => {
          try {
            return [JSON.parse(line) as { msg?: string; automations?: string[] }];
          } catch {
            return [];
          }
        })
        .find((line) => line.msg === 'automations loaded');
      expect(loaded?.automations).toEqual([AUTOMATION]);
    } finally {
      if (worker.child.exitCode === null) {
        const exited = once(worker.child, 'exit');
        worker.child.kill('SIGTERM');
        await exited;
      }
    }
  }, 180_000);

  it('stops with exit code 2, naming the variable, when the module exports no automation', async () => {
    const { TEMPORAL_ADDRESS: _address, ...service } = stack.workerEnv;
    // Not spawnWorker: it waits for a "worker running" line that this process never prints.
    const child = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
      cwd: repoRoot,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...service,
        // Nothing listens here: a worker that got as far as connecting would fail another way.
        TEMPORAL_ADDRESS: '127.0.0.1:1',
        WORKER_AUTOMATIONS_MODULE: './test/fixtures/automations/none.mjs',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(2);
    expect(output).toContain(
      'worker: bad configuration: WORKER_AUTOMATIONS_MODULE: the module exports no automation definition',
    );
    expect(output).not.toContain('none.mjs');
  }, 60_000);
});
