/**
 * The README's example pipeline, run the way a newcomer runs it: a child process that starts its
 * own dev server, emulator, worker and gateway, runs a scheduled batch whose end starts an
 * automation, posts signed events to another automation, and exits.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

function runExample(): Promise<{ code: number | null; output: string }> {
  const root = path.resolve(__dirname, '../..');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'examples/pipeline.ts'], {
      cwd: root,
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, output }));
  });
}

describe('npm run example:pipeline', () => {
  it('runs the nightly batch by its schedule, chains the report, and batches signed events into jobs', async () => {
    const { code, output } = await runExample();
    expect(output).toMatch(/1\. schedule \S+: next run \d{4}-\d\d-\d\dT0[01]:00:00\.000Z/);
    expect(output).toMatch(/1\. scheduled batch \S+: 20 of 20 renders completed, 20 submissions/);
    expect(output).toContain(
      "2. chained: the batch's end event started nightly-report: 1 event, 1 job completed",
    );
    expect(output).toContain(
      '3. 14 events posted: answers 200 200 200 200 200 200 200 200 200 200 200 200 200 401',
    );
    expect(output).toMatch(
      /3\. orders: 12 distinct events in \d+ batches of up to 5; the service ran 33 jobs in all/,
    );
    expect(output).toContain('[pipeline] done');
    expect(code).toBe(0);
  }, 240_000);
});
