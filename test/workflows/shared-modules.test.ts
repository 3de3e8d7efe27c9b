/**
 * The worker shares zod and the schemas between every workflow it runs (workflows/shared/
 * shared-modules.ts). A module outside workflows/ and engine/ that workflow code imports but that
 * list misses is evaluated again for each cached workflow; one the SDK froze deeply would break
 * the first parse of its schemas. engine/ is workflow code that lives beside workflows/ (pure
 * functions and small constants): each workflow evaluates it, as it does workflows/.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LIBRARY_WORKFLOWS, workflowBundleFile } from '../support/workflow-bundles';

const ROOT = path.resolve(__dirname, '../..');

/** The project's modules in a bundle, outside workflows/ and engine/ (webpack names them ./dir/file.ts). */
function bundledLibraryModules(code: string): string[] {
  const ids = [...code.matchAll(/^\/\*\*\*\/ "\.\/([^"]+)"/gm)].map((match) => match[1] ?? '');
  return ids
    .filter(
      (id) => !id.startsWith('node_modules/') && !id.startsWith('workflows/') && !id.startsWith('engine/'),
    )
    .sort();
}

function sharedModules(): string[] {
  const source = readFileSync(path.join(ROOT, 'workflows/shared/shared-modules.ts'), 'utf8');
  return [...source.matchAll(/^import \* as \w+ from '\.\.\/\.\.\/([^']+)';$/gm)]
    .map((match) => `${match[1]}.ts`)
    .sort();
}

describe('modules shared between workflows', () => {
  it('lists every module outside workflows/ that the workflows import, and is preloaded by the bundle', async () => {
    const code = readFileSync(await workflowBundleFile(LIBRARY_WORKFLOWS), 'utf8');
    const bundled = bundledLibraryModules(code);
    expect(bundled.length).toBeGreaterThan(10);
    expect(sharedModules()).toEqual(bundled);
    // The bundler's preload hook requires the list, so the worker evaluates it before any workflow.
    expect(code).toMatch(
      /exports\.preloadModules = function preloadModules\(\) \{\s*__webpack_require__\([^)]*"\.\/workflows\/shared\/shared-modules\.ts"\)/,
    );
  });
});
