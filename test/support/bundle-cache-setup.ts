/**
 * A folder for the workflow bundles of one test run, shared by the files of the tiers that run
 * workflows (workflows, integration). Bundling is the slow part of starting a worker (seconds of
 * CPU each time); with this folder each distinct workflows file is bundled once per run, by the
 * first test file that needs it (test/support/workflow-bundles.ts). The folder is made fresh for
 * every run and removed after it, so a bundle is never older than the sources it came from.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

declare module 'vitest' {
  export interface ProvidedContext {
    workflowBundleDir: string;
  }
}

// Typed structurally: vitest/node's types are ESM-only and this project compiles as CommonJS.
type ProvidingProject = { provide(key: 'workflowBundleDir', value: string): void };

export default function setup(project: ProvidingProject): () => void {
  const dir = mkdtempSync(path.join(tmpdir(), 'workflow-bundles-'));
  project.provide('workflowBundleDir', dir);
  return () => rmSync(dir, { recursive: true, force: true });
}
