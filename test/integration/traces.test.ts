/**
 * One connected trace for a job: the client's start, the workflow, its activities and the HTTP
 * calls they make, all collected by an in-memory exporter. Real stack: dev server, emulator over
 * HTTP, a real worker through runWorker with tracing on.
 */
import { randomUUID } from 'node:crypto';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitJob, startJob } from '../../client/jobs';
import { loadWorkerConfig } from '../../worker/config';
import { createLogger } from '../../worker/logger';
import { runWorker } from '../../worker/run-worker';
import { tracingClientInterceptors } from '../../worker/tracing';
import { eventually, FAST_POLLING, type JobStack, startJobStack } from '../support/integration';

describe('traces (dev server, emulator over HTTP, real worker with tracing on)', () => {
  let stack: JobStack;
  const exporter = new InMemorySpanExporter();
  const controller = new AbortController();
  let running: Promise<void> = Promise.resolve();

  beforeAll(async () => {
    stack = await startJobStack({ name: 'traces', timeScale: 100, worker: false });
    let ready!: () => void;
    const isReady = new Promise<void>((resolve) => {
      ready = resolve;
    });
    running = runWorker(loadWorkerConfig(stack.workerEnv), {
      signal: controller.signal,
      logger: createLogger({ level: 'error', secrets: [stack.apiKey] }),
      tracing: { spanProcessor: new SimpleSpanProcessor(exporter) },
      onReady: () => ready(),
    });
    running.catch(() => undefined);
    await Promise.race([isReady, running.then(() => Promise.reject(new Error('the worker stopped early')))]);
  });

  afterAll(async () => {
    controller.abort();
    await running.catch(() => undefined);
    await stack?.close();
  });

  it('links the client start, the workflow, the activities and the HTTP calls in one trace', async () => {
    const client = new Client({
      connection: stack.client.connection,
      namespace: stack.client.options.namespace,
      interceptors: tracingClientInterceptors(),
    });
    const endpointId = stack.endpoint();
    const handle = await startJob(
      client,
      { endpointId, request: { input: { sleepMs: 1_000, output: 'traced' } }, polling: FAST_POLLING },
      { workflowId: `traces-${randomUUID()}`, taskQueue: stack.taskQueue },
    );
    expect(await awaitJob(client, { job: handle })).toMatchObject({ output: 'traced' });

    // Workflow spans leave the sandbox through a sink after their activation: wait for the last one.
    const spans = await eventually(() => {
      const all = exporter.getFinishedSpans();
      return all.some((s) => s.name.startsWith('RunWorkflow')) ? all : undefined;
    });
    const names = spans.map((s) => s.name);
    const root = spans.find((s) => s.name.startsWith('StartWorkflow'));
    expect(root, names.join(', ')).toBeDefined();
    const traceId = root?.spanContext().traceId;
    const inTrace = spans.filter((s) => s.spanContext().traceId === traceId);
    const has = (prefix: string) => inTrace.some((s) => s.name.startsWith(prefix));
    expect(has('RunWorkflow')).toBe(true);
    expect(has('StartActivity:submitJob')).toBe(true);
    expect(has('RunActivity:submitJob')).toBe(true);
    expect(has('RunActivity:waitForJobChange')).toBe(true);
    expect(has('POST run')).toBe(true);
    expect(has('GET status')).toBe(true);

    // Connected: every span of the trace but the root has its parent in the trace.
    const ids = new Set(inTrace.map((s) => s.spanContext().spanId));
    for (const span of inTrace) {
      if (span === root) continue;
      expect(ids.has(span.parentSpanId ?? ''), `${span.name} has no parent in the trace`).toBe(true);
    }
    // The HTTP span of the submit hangs under the submit activity.
    const submit = inTrace.find((s) => s.name === 'POST run');
    const parent = inTrace.find((s) => s.spanContext().spanId === submit?.parentSpanId);
    expect(parent?.name).toBe('RunActivity:submitJob');
    // Nothing secret in the attributes.
    expect(JSON.stringify(inTrace.map((s) => s.attributes))).not.toContain(stack.apiKey);
  });
});
