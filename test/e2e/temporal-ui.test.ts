/**
 * What a user sees in the Temporal UI, in a real browser: the system's Chromium (npm run
 * provision installs it) driven by playwright-core against a dev server of this file's own that
 * serves the UI. A running batch shows its counts in its current details, and they change as items
 * finish, and its activities show what they do in this run (the items a submit carried); a job
 * shows its summary; an automation shows its runs in flight and the groups waiting
 * for one. The emulator's clock is frozen while the page is read, so the
 * counts stand still until the test moves them; the test waits on the batch's own query.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAutomation } from '../../activities/automation';
import { getAutomationState, sendEvent } from '../../client/automations';
import { getBatchProgress, startBatch } from '../../client/batches';
import { CHROMIUM_PATH } from '../../scripts/chromium';
import { type DevServerProcess, startDevServerProcess } from '../support/dev-server-process';
import { eventually, type JobStack, startJobStack } from '../support/integration';
import { pollUntil } from '../support/poll';

// A scratch folder, so a test run leaves the tree clean; `UI_SCREENSHOTS=docs/images` refreshes the
// pictures the docs show.
const SCREENSHOTS = path.resolve(process.env.UI_SCREENSHOTS ?? path.join(tmpdir(), 'durable-serverless-ui'));
const SHORT_MS = 1_000;
const MEDIUM_MS = 5 * 60_000;
const LONG_MS = 60 * 60_000;
const AUTOMATION = 'ui-resize';

describe('progress in the Temporal UI (real browser, dev server with its UI)', () => {
  let server: DevServerProcess;
  let stack: JobStack;
  let browser: Browser;
  let page: Page;
  /** The endpoint the automation's jobs run on (made once the stack's emulator runs). */
  let automationEndpoint = '';

  beforeAll(async () => {
    if (!existsSync(CHROMIUM_PATH))
      throw new Error(`no browser at ${CHROMIUM_PATH}: run npm run provision (it installs chromium)`);
    // State in a SQLite file: a dev server's in-memory database (shared-cache SQLite) lives only
    // while one of its connections does, and this server's was seen to lose the `default`
    // namespace mid-file (NamespaceNotFound) on a loaded machine.
    server = await startDevServerProcess('ui', { ui: true });
    stack = await startJobStack({
      name: 'ui',
      timeScale: 1,
      temporalAddress: server.address,
      // One job per event, one at a time: the jobs run for an hour, so the rest of the events wait.
      automations: [
        defineAutomation({
          name: AUTOMATION,
          concurrency: 1,
          run: () => ({
            kind: 'job',
            input: { endpointId: automationEndpoint, request: { input: { sleepMs: LONG_MS } } },
          }),
        }),
      ],
    });
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH });
    page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
    mkdirSync(SCREENSHOTS, { recursive: true });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
    await server?.close();
  });

  /**
   * The text of a current details table row (e.g. "Completed 4"). The UI renders each Markdown
   * text in a sandboxed frame of its own; the row is looked for in every frame.
   */
  async function detailsRow(label: string): Promise<string> {
    for (const frame of page.frames()) {
      const rows = frame.locator('tr').filter({ hasText: new RegExp(`^\\s*${label}\\b`) });
      if ((await rows.count()) === 0) continue;
      return ((await rows.first().textContent()) ?? '').replace(/\s+/g, ' ').trim();
    }
    return '';
  }

  /** Whether some frame of the page shows `text` (the summary is Markdown in a frame too). */
  async function showsText(text: string): Promise<boolean> {
    for (const frame of page.frames()) {
      if ((await frame.getByText(text).count()) > 0) return true;
    }
    return false;
  }

  /** Opens the workflow's page with its User Metadata (summary, details, current details) shown. */
  async function openMetadata(url: string): Promise<void> {
    await page.goto(url);
    await page.getByText('User Metadata', { exact: true }).first().click();
  }

  /**
   * Reloads the workflow's page until its current details show `label` with `value`. The details
   * render in a frame of their own after the page (the UI queries the workflow for them): each load
   * is read until they show, for a few seconds, before the page is loaded again.
   */
  async function showsCount(url: string, label: string, value: number): Promise<void> {
    const wanted = `${label} ${value}`;
    await eventually(
      async () => {
        await openMetadata(url);
        const shown = await pollUntil(
          `row ${label}`,
          async () => ((await detailsRow(label).catch(() => '')) === wanted ? wanted : undefined),
          { timeoutMs: 5_000, intervalMs: 100 },
        ).catch(() => undefined);
        return shown;
      },
      60_000,
      `the page shows "${wanted}"`,
    );
  }

  it('a running batch shows its counts in the current details, and they change as items finish; its activities show what they do', async () => {
    const endpointId = stack.endpoint({ workersMax: 20 });
    const sleeps = [...Array(4).fill(SHORT_MS), ...Array(3).fill(MEDIUM_MS), ...Array(3).fill(LONG_MS)];
    const handle = await startBatch(
      stack.client,
      {
        endpointId,
        items: { inline: sleeps.map((sleepMs) => ({ input: { sleepMs } })) },
        maxConcurrency: 10,
      },
      { workflowId: `ui-batch-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    // The short items finish in service time as it runs; then the clock stops, and the rest wait.
    await eventually(async () => {
      const progress = await getBatchProgress(stack.client, { batch: handle }).catch(() => undefined);
      return progress?.counts.completed === 4 && progress.inFlight === 6 ? progress : undefined;
    }, 60_000);
    stack.control.freeze();
    const { runId } = await handle.describe();
    const url = `${server.uiUrl}/namespaces/default/workflows/${handle.workflowId}/${runId}/history`;

    await showsCount(url, 'Completed', 4);
    expect(await detailsRow('In flight')).toBe('In flight 6');
    expect(await detailsRow('Queued')).toBe('Queued 0');
    await expect.poll(() => showsText('Batch of 10 items on endpoint'), { timeout: 30_000 }).toBe(true);
    // The event list names what each activity did in this run: one page submitted all ten items.
    await expect
      .poll(() => showsText(`submit items 1–10 to endpoint ${endpointId}`), { timeout: 30_000 })
      .toBe(true);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'batch-current-details.png'), fullPage: true });

    // Three more items finish at the service: the batch's query sees it, then the page does.
    stack.control.advance(MEDIUM_MS);
    await eventually(async () => {
      const progress = await getBatchProgress(stack.client, { batch: handle });
      return progress.counts.completed === 7 ? progress : undefined;
    }, 60_000);
    await showsCount(url, 'Completed', 7);
    expect(await detailsRow('In flight')).toBe('In flight 3');
    await handle.cancel();
  }, 240_000);

  it('a job shows its summary', async () => {
    const endpointId = stack.endpoint();
    stack.control.resume();
    const handle = await stack.start(
      { endpointId, request: { input: { sleepMs: LONG_MS } } },
      { label: 'job' },
    );
    const { runId } = await handle.describe();
    await openMetadata(`${server.uiUrl}/namespaces/default/workflows/${handle.workflowId}/${runId}/history`);
    await expect.poll(() => showsText(`Job on endpoint ${endpointId}`), { timeout: 30_000 }).toBe(true);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'job-summary.png'), fullPage: true });
    await handle.cancel();
  });

  it('an automation shows its runs in flight and the groups waiting for one in its current details', async () => {
    automationEndpoint = stack.endpoint();
    const target = { automation: AUTOMATION, key: 'user-7' };
    for (const id of ['a', 'b', 'c'])
      await sendEvent(stack.client, { id }, { ...target, taskQueue: stack.taskQueue });
    await eventually(async () => {
      const state = await getAutomationState(stack.client, target).catch(() => undefined);
      return state?.inFlight === 1 && state.ready === 2 ? state : undefined;
    }, 60_000);
    const handle = stack.client.workflow.getHandle(`automation:${AUTOMATION}:user-7`);
    const { runId } = await handle.describe();
    const url = `${server.uiUrl}/namespaces/default/workflows/${handle.workflowId}/${runId}/history`;
    await showsCount(url, 'Runs in flight', 1);
    expect(await detailsRow('Groups waiting for a run')).toBe('Groups waiting for a run 2');
    expect(await detailsRow('Runs started')).toBe('Runs started 1');
    await expect
      .poll(() => showsText(`Automation ${AUTOMATION} for key user-7`), { timeout: 30_000 })
      .toBe(true);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'automation-current-details.png'), fullPage: true });
    await handle.terminate();
  });
});
