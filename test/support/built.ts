/**
 * The built package (dist/, from `npm run build`) for tests that run it as users do: the tarball
 * test and the reliability suite's worker and gateway processes. CI builds first; a missing or
 * stale dist/ is rebuilt here.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const repoRoot = path.resolve(__dirname, '../..');
const LIBRARY_FOLDERS = [
  'index.ts',
  'api',
  'contracts',
  'engine',
  'activities',
  'workflows',
  'worker',
  'client',
  'emulator',
];

/** The newest modification time under `target` (a file or a folder). */
function newest(target: string): number {
  const stat = statSync(target);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(target).map((name) => newest(path.join(target, name))));
}

/** dist/workflow-bundle.js is written last by the build: older than any input means stale. */
export async function ensureBuilt(who: string): Promise<void> {
  const stamp = path.join(repoRoot, 'dist', 'workflow-bundle.js');
  const inputs = [
    ...LIBRARY_FOLDERS,
    'package.json',
    'tsconfig.json',
    'tsconfig.build.json',
    'scripts/build.mjs',
  ].map((name) => path.join(repoRoot, name));
  if (existsSync(stamp) && statSync(stamp).mtimeMs >= Math.max(...inputs.map(newest))) return;
  console.log(`[${who}] dist/ is missing or older than the sources: npm run build`);
  await run(process.execPath, ['scripts/build.mjs'], { cwd: repoRoot, maxBuffer: 16 << 20 });
}
