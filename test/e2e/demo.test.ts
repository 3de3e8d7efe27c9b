/**
 * The README's demo command, run the way a newcomer runs it: a child process that starts its own
 * dev server, emulator, worker and gateway, runs four jobs and a batch of 300 items, and exits.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

function runDemo(uiPort: string): Promise<{ code: number | null; output: string }> {
  const root = path.resolve(__dirname, '../..');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/demo.ts'], {
      cwd: root,
      env: { ...process.env, DEMO_UI_PORT: uiPort },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, output }));
  });
}

describe('npm run demo', () => {
  it('runs a completion, a retried failure, a cancellation, a streamed job and a batch, then exits 0', async () => {
    // 0: no port of ours (none is free for sure): the dev server puts the UI at its port + 1000.
    const { code, output } = await runDemo('0');
    expect(output).toMatch(/1\. completed: job \S+ -> \{"prompt":"hello, durable world"\}/);
    expect(output).toMatch(/2\. failed once, retried: job \S+ COMPLETED after 2 attempts -> \{"ok":true\}/);
    expect(output).toMatch(/3\. cancelled: workflow CANCELLED, remote job \S+ CANCELLED/);
    expect(output).toMatch(
      /4\. streamed: job \S+, 11 chunks to the sink: "once upon a time a job ran durably to the end"/,
    );
    // The batch: its progress bar (a line per update without a terminal) ends at 300 of 300.
    expect(output).toMatch(/5\. batch demo-batch-\d+: 300 items, at most 60 in flight/);
    expect(output).toMatch(/\[#{24}\] 300\/300 done, 3 failed, 0 in flight/);
    expect(output).toMatch(
      /5\. batch done: 297 completed, 3 failed for good \(tolerated\), 300 submissions for 300 items, 300 result lines \(297 outputs matching their item\)/,
    );
    const frontend = Number(/Temporal dev server at 127\.0\.0\.1:(\d+)/.exec(output)?.[1]);
    expect(output).toContain(`web UI at http://127.0.0.1:${frontend + 1000}`);
    expect(output).toContain(
      `in the Temporal UI: http://127.0.0.1:${frontend + 1000}/namespaces/default/workflows`,
    );
    expect(output).toMatch(/webhook gateway at http:\/\/127\.0\.0\.1:\d+/);
    expect(output).toContain('[demo] done');
    expect(code).toBe(0);
  }, 180_000);
});
