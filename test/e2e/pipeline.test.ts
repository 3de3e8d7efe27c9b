/**
 * The example pipeline, run the way a newcomer runs it (`npm run examples -- pipeline`): a child
 * process that starts a dev server and the emulator, then the example, which runs its own worker,
 * a scheduled batch whose end starts an automation, and exits.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../support/built';

function runExample(): Promise<{ code: number | null; output: string }> {
  const root = path.resolve(__dirname, '../..');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/run-examples.ts', 'pipeline'], {
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

describe('npm run examples -- pipeline', () => {
  // The examples import the package by name: Node resolves it to dist/.
  beforeAll(() => ensureBuilt('pipeline'), 600_000);

  it('runs the nightly batch by its schedule and chains the report', async () => {
    const { code, output } = await runExample();
    expect(output).toMatch(/1\. schedule \S+: next run \d{4}-\d\d-\d\dT0[01]:00:00\.000Z/);
    expect(output).toMatch(/1\. scheduled batch \S+: 20 of 20 renders completed, 20 submissions/);
    expect(output).toContain(
      "2. chained: the batch's end event started nightly-report: 1 event, 1 job completed",
    );
    expect(output).toContain('[examples] pipeline: ok');
    expect(code).toBe(0);
  }, 240_000);
});
