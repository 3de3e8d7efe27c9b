/**
 * `npm run test:repeat -- [files or folders] --times N [--project P]`: runs the given test files N
 * times in a row (the whole default suite when none are given) and prints, per file, how many of
 * the N runs it passed. A flaky file shows up as fewer than N; nothing is retried.
 *
 * Each run is one `vitest run` with the JSON reporter, so a file counts as passed only when every
 * test in it passed in that run.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';

const vitestReport = z.object({
  testResults: z.array(z.object({ name: z.string(), status: z.string() })),
});

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    times: { type: 'string', default: '5' },
    project: { type: 'string', multiple: true },
  },
});

const times = Number(values.times);
if (!Number.isInteger(times) || times < 1) {
  console.error(`--times must be a whole number of runs, at least 1 (got ${values.times})`);
  process.exit(2);
}

const root = path.resolve(__dirname, '..');
const scratch = mkdtempSync(path.join(tmpdir(), 'test-repeat-'));
const passes = new Map<string, number>();
const seen = new Set<string>();
const runSeconds: number[] = [];

for (let run = 1; run <= times; run++) {
  const outputFile = path.join(scratch, `run-${run}.json`);
  const projectArgs = (values.project ?? []).flatMap((name) => ['--project', name]);
  const started = Date.now();
  spawnSync(
    process.execPath,
    [
      path.join(root, 'node_modules/vitest/vitest.mjs'),
      'run',
      ...positionals,
      ...projectArgs,
      '--reporter=dot',
      '--reporter=json',
      `--outputFile.json=${outputFile}`,
    ],
    { cwd: root, stdio: 'inherit' },
  );
  runSeconds.push((Date.now() - started) / 1000);
  let report: z.infer<typeof vitestReport>;
  try {
    report = vitestReport.parse(JSON.parse(readFileSync(outputFile, 'utf8')));
  } catch (error) {
    console.error(`run ${run}: vitest wrote no readable report (${String(error)}); counted as failed`);
    continue;
  }
  for (const file of report.testResults) {
    const name = path.relative(root, file.name);
    seen.add(name);
    if (file.status === 'passed') passes.set(name, (passes.get(name) ?? 0) + 1);
  }
  console.log(`run ${run} of ${times}: ${runSeconds.at(-1)?.toFixed(0)} s`);
}
rmSync(scratch, { recursive: true, force: true });

const files = [...seen].sort();
const width = Math.max(4, ...files.map((file) => file.length));
console.log(`\n${'file'.padEnd(width)}  passed`);
for (const file of files) {
  console.log(`${file.padEnd(width)}  ${passes.get(file) ?? 0} of ${times}`);
}
const flaky = files.filter((file) => (passes.get(file) ?? 0) < times);
const total = runSeconds.reduce((sum, seconds) => sum + seconds, 0);
console.log(
  `\n${files.length} files, ${times} runs (${runSeconds.map((s) => s.toFixed(0)).join(', ')} s; ${total.toFixed(0)} s in all): ` +
    (flaky.length === 0
      ? `every file passed ${times} of ${times}`
      : `${flaky.length} files failed at least once`),
);
process.exit(flaky.length === 0 && files.length > 0 ? 0 : 1);
