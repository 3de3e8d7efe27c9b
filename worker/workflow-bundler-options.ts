/**
 * The options every bundle of the library's workflows is made with: the production build
 * (scripts/build.mjs), a worker that bundles at start, and the tests' bundles. One list, so that
 * what the tests run is what production runs.
 */
import path from 'node:path';

/**
 * Bundler options for workflow code that imports the library's workflows from
 * `libraryWorkflowsDir`: the folder the workflows are bundled from (the TypeScript sources or
 * the compiled dist/workflows), so that the shared modules are the very files the workflows
 * import, not a second copy of them.
 */
export function workflowBundlerOptions(
  libraryWorkflowsDir: string = path.resolve(__dirname, '../workflows'),
): {
  preloadModules: string[];
} {
  // zod and the schemas, loaded once per worker instead of once per cached workflow
  // (workflows/shared/shared-modules.ts says why that is safe).
  return { preloadModules: [path.join(libraryWorkflowsDir, 'shared', 'shared-modules')] };
}
