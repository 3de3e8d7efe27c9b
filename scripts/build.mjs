// `npm run build`: the package as users install it. Plain JavaScript, so it runs with node alone.
//
// 1. dist/ from scratch: tsc with tsconfig.build.json (JavaScript and .d.ts of the library's
//    folders, nothing of test/, bench/ or scripts/);
// 2. dist/workflow-bundle.js: the workflow code bundled once, here, so that production workers
//    load it (Worker.create's workflowBundle) instead of running webpack at every start, as
//    Temporal advises;
// 3. the bins made executable.
import { spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const require = createRequire(import.meta.url);
const started = Date.now();
const step = (what) => console.log(`[build] ${what} (${((Date.now() - started) / 1000).toFixed(1)} s)`);

rmSync(dist, { recursive: true, force: true });

const tsc = spawnSync(
  process.execPath,
  [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
  {
    cwd: root,
    stdio: 'inherit',
  },
);
if (tsc.status !== 0) {
  console.error('[build] tsc failed');
  process.exit(tsc.status ?? 1);
}
step('compiled to dist/');

const { bundleWorkflowCode } = require('@temporalio/worker');
const quiet = { trace() {}, debug() {}, info() {}, log() {}, warn: console.warn, error: console.error };
// From the TypeScript sources, as Temporal's own samples do: the inline source map then points
// workflow stack traces (the UI's stack trace query, failures) at workflows/*.ts lines.
const { workflowBundlerOptions } = require(path.join(dist, 'worker/workflow-bundler-options.js'));
const workflowsPath = path.join(root, 'workflows');
const { code } = await bundleWorkflowCode({
  workflowsPath,
  logger: quiet,
  ...workflowBundlerOptions(workflowsPath),
});
const bundlePath = path.join(dist, 'workflow-bundle.js');
writeFileSync(bundlePath, relativeSourceMap(code));
step(`bundled the workflows: dist/workflow-bundle.js, ${(statSync(bundlePath).size / 1024).toFixed(0)} KiB`);

const { bin } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
for (const file of Object.values(bin ?? {})) chmodSync(path.join(root, file), 0o755);
step('done');

/** The inline source map names files relative to the package, not by this machine's paths. */
function relativeSourceMap(bundle) {
  const marker = '//# sourceMappingURL=data:application/json;charset=utf-8;base64,';
  const at = bundle.lastIndexOf(marker);
  if (at < 0) return bundle;
  const map = JSON.parse(Buffer.from(bundle.slice(at + marker.length).trim(), 'base64').toString('utf8'));
  const prefix = `${root}${path.sep}`;
  map.sources = map.sources.map((source) => {
    const inModules = source.indexOf(`${path.sep}node_modules${path.sep}`);
    if (inModules >= 0)
      return source
        .slice(inModules + 1)
        .split(path.sep)
        .join('/');
    return source.startsWith(prefix) ? source.slice(prefix.length).split(path.sep).join('/') : source;
  });
  return `${bundle.slice(0, at)}${marker}${Buffer.from(JSON.stringify(map)).toString('base64')}\n`;
}
