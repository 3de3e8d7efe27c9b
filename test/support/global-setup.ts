/**
 * One real Temporal dev server (the CLI built by scripts/servers.ts) for the integration tier's
 * whole run, shared by its test files through `inject('temporalAddress')`. Each file connects
 * with `TestWorkflowEnvironment.createFromExistingServer` and uses its own task queue. The server
 * is spawned and waited for here (dev-server-process.ts) rather than by the SDK, whose 5 s
 * start-up limit a loaded machine can exceed.
 */
import { startDevServerProcess } from './dev-server-process';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
  }
}

// Typed structurally: vitest/node's types are ESM-only and this project compiles as CommonJS.
type ProvidingProject = { provide(key: 'temporalAddress', value: string): void };

export default async function setup(project: ProvidingProject): Promise<() => Promise<void>> {
  const server = await startDevServerProcess('shared', { inMemory: true });
  project.provide('temporalAddress', server.address);
  return () => server.close();
}
