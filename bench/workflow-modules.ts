/**
 * What the workflow modules cost each cached workflow. With `reuseV8Context` (the SDK's default)
 * the worker evaluates the bundle's modules again for every workflow it caches, except the ones it
 * shares (the SDK's own, and those the bundler's `preloadModules` names). This bench bundles the
 * library's workflows with and without `workflowBundlerOptions()`, evaluates each bundle's modules
 * N times in one V8 context the way the SDK does (a module cache per workflow, the shared ones
 * looked up first), and prints the heap each evaluation adds, and the modules that cost most.
 * No server; asserts nothing.
 *
 *   npm run bench:workflow-modules [-- --evaluations 200]
 */
import path from 'node:path';
import vm from 'node:vm';
import { bundleWorkflowCode } from '@temporalio/worker';
import { workflowBundlerOptions } from '../worker/workflow-bundler-options';
import { numberArg, say } from './support';

const EVALUATIONS = Math.round(numberArg('evaluations', 200));
const LIBRARY_WORKFLOWS = path.resolve(__dirname, '../workflows');
const silent = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: console.error };

type ModuleCache = Map<string, unknown>;

/** A V8 context holding the bundle, whose module cache the caller swaps per workflow. */
function contextOf(code: string): { evaluate(cache: ModuleCache): void; shared: ModuleCache } {
  const shared: ModuleCache = new Map();
  let current: ModuleCache | undefined;
  const context = vm.createContext({}, { microtaskMode: 'afterEvaluate' });
  // The SDK routes webpack's module cache through this global: shared modules first, then the
  // cache of the workflow being evaluated (none while the bundle loads and preloads).
  Object.defineProperty(context, '__webpack_module_cache__', {
    value: new Proxy(
      {},
      {
        get: (_, id: string) => shared.get(id) ?? current?.get(id),
        set: (_, id: string, value) => {
          (current ?? shared).set(id, value);
          return true;
        },
        deleteProperty: (_, id: string) => current?.delete(id) ?? false,
      },
    ),
  });
  for (const name of ['TextEncoder', 'TextDecoder', 'AbortController', 'URL', 'URLSearchParams', 'console'])
    (context as Record<string, unknown>)[name] = (globalThis as Record<string, unknown>)[name];
  new vm.Script(code).runInContext(context);
  vm.runInContext('__TEMPORAL__.preloadModules?.()', context);
  return {
    shared,
    evaluate(cache) {
      current = cache;
      vm.runInContext('__TEMPORAL__.importWorkflows()', context);
      current = undefined;
    },
  };
}

function heapAfterGc(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc (npm run bench:workflow-modules does)');
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

async function measure(label: string, preloadModules: string[]): Promise<void> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: LIBRARY_WORKFLOWS,
    logger: silent,
    preloadModules,
  });
  const bundle = contextOf(code);
  bundle.evaluate(new Map()); // the first evaluation compiles what the rest reuse
  const kept: ModuleCache[] = [];
  const before = heapAfterGc();
  for (let n = 0; n < EVALUATIONS; n++) {
    const cache: ModuleCache = new Map();
    bundle.evaluate(cache);
    kept.push(cache);
  }
  const perEvaluation = (heapAfterGc() - before) / EVALUATIONS;
  say(
    `${label}: ${(perEvaluation / 1024).toFixed(0)} KB of heap per cached workflow ` +
      `(${kept[0]?.size ?? 0} modules evaluated per workflow, ${bundle.shared.size} shared; ${EVALUATIONS} evaluations)`,
  );
}

async function main(): Promise<void> {
  say('the workflow modules each cached workflow evaluates (the SDK reuses one V8 context)');
  await measure('  without preloadModules', []);
  await measure('  with workflowBundlerOptions()', workflowBundlerOptions().preloadModules);
}

main().catch((error) => {
  console.error('[bench] failed:', error);
  process.exitCode = 1;
});
