import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { createEndpoint, createVolume } from './endpoints';
import type { Engine } from './engine';
import { describeZodError, type SeedFile, seedFileSchema } from './schemas';
import { addAccount } from './store';

export type ParsedSeed = z.output<typeof seedFileSchema>;

/** A seed given as an object, as JSON text, or as the path of a JSON file. */
export function loadSeed(seed: SeedFile | string): ParsedSeed {
  let value: unknown = seed;
  if (typeof seed === 'string') {
    const text = seed.trim().startsWith('{') ? seed : readFileSync(seed, 'utf8');
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new Error(`seed is not valid JSON: ${(error as Error).message}`);
    }
  }
  const parsed = seedFileSchema.safeParse(value);
  if (!parsed.success) throw new Error(`invalid seed: ${describeZodError(parsed.error)}`);
  return parsed.data;
}

export function applySeed(engine: Engine, seed: ParsedSeed): void {
  for (const [gpu, available] of Object.entries(seed.gpuAvailability)) {
    engine.store.gpuAvailability.set(gpu, available);
  }
  for (const entry of seed.accounts) {
    const account = addAccount(engine.store, entry.apiKey, entry.id, entry.serverlessDiscount);
    // Volumes first: endpoints may name one.
    for (const volume of entry.networkVolumes) {
      createVolume(engine, account, typeof volume === 'string' ? volume : volume.id);
    }
    for (const endpoint of entry.endpoints) createEndpoint(engine, account, endpoint);
  }
}
