/**
 * One real Temporal dev server (the CLI built by scripts/servers.ts) for the whole run, shared by
 * the test files through `inject('temporalAddress')`. Each file connects with
 * `TestWorkflowEnvironment.createFromExistingServer` and uses its own task queue.
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { provisionedServers } from '../../scripts/servers';
import { searchAttributeKeys } from '../../workflows/search-attributes';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
  }
}

// Typed structurally: vitest/node's types are ESM-only and this project compiles as CommonJS.
type ProvidingProject = { provide(key: 'temporalAddress', value: string): void };

export default async function setup(project: ProvidingProject): Promise<() => Promise<void>> {
  const { temporalCli } = provisionedServers();
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      ...(temporalCli ? { executable: { type: 'existing-path' as const, path: temporalCli } } : {}),
      ip: '127.0.0.1',
      searchAttributes: searchAttributeKeys,
      extraArgs: ['--log-level', 'error'],
    },
  });
  project.provide('temporalAddress', env.address);
  return async () => {
    await env.teardown();
  };
}
