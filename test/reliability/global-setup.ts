/**
 * One production-shaped Temporal (the real server on PostgreSQL, scripts/prod-temporal.ts) for each
 * group of the reliability run (vitest.reliability.config.mts), shared by its files through
 * `inject('prodTemporal')`. A file that kills or restarts the server or PostgreSQL runs alone in
 * its group and leaves both running again.
 */
import {
  type ProdTemporalInstance,
  provisionedProdTemporal,
  startProdTemporal,
  stopProdTemporal,
} from '../../scripts/prod-temporal';
import { ensureBuilt } from '../support/built';

declare module 'vitest' {
  export interface ProvidedContext {
    prodTemporal: ProdTemporalInstance;
  }
}

type ProvidingProject = { provide(key: 'prodTemporal', value: ProdTemporalInstance): void };

export default async function setup(project: ProvidingProject): Promise<() => Promise<void>> {
  // Workers and the gateway run from dist/ (support.ts): built now unless fresh.
  await ensureBuilt('reliability');
  const started = Date.now();
  const instance = await startProdTemporal(provisionedProdTemporal());
  console.log(
    `reliability: Temporal ${instance.address} on PostgreSQL :${instance.pg.port} ready in ${((Date.now() - started) / 1000).toFixed(1)} s (${instance.runDir})`,
  );
  project.provide('prodTemporal', instance);
  return async () => {
    // RELIABILITY_KEEP=1 keeps the instance's directory (server and PostgreSQL logs) for a look.
    await stopProdTemporal(instance, { keep: process.env.RELIABILITY_KEEP === '1' });
  };
}
