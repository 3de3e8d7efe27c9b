/**
 * Workflow bundles shared by the test files of one run (see bundle-cache-setup.ts): a workflows
 * file is bundled by the first file that asks for it and read from the run's folder by the rest.
 * Two files that ask at the same moment both bundle it; the rename makes the last one win whole.
 */
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { inject } from 'vitest';
import { workflowBundlerOptions } from '../../worker/workflow-bundler-options';

const silent = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

/** The library's own workflows (workflows/index.ts), as a worker of the package loads them. */
export const LIBRARY_WORKFLOWS = path.resolve(__dirname, '../../workflows/index.ts');

/**
 * The bundle file of `workflowsPath` for this run (vitest needs the path with its .ts extension).
 * Outside a tier that provides the run's folder, it bundles into a fresh temporary file.
 */
export async function workflowBundleFile(workflowsPath: string): Promise<string> {
  const dir = inject('workflowBundleDir') ?? mkdtempSync(path.join(tmpdir(), 'workflow-bundle-'));
  const file = path.join(dir, `${createHash('sha256').update(workflowsPath).digest('hex').slice(0, 16)}.js`);
  if (existsSync(file)) return file;
  const { code } = await bundleWorkflowCode({ workflowsPath, logger: silent, ...workflowBundlerOptions() });
  const partial = `${file}.${randomUUID()}.partial`;
  writeFileSync(partial, code);
  renameSync(partial, file);
  return file;
}

/** The bundle of `workflowsPath` as Worker.create's `workflowBundle` takes it. */
export async function sharedWorkflowBundle(workflowsPath: string): Promise<WorkflowBundleWithSourceMap> {
  const code = readFileSync(await workflowBundleFile(workflowsPath), 'utf8');
  return { code, sourceMap: '' };
}
