import { randomBytes, randomUUID } from 'node:crypto';

// Shapes seen on the hosted service: UUID job ids with a `-u1` suffix, `sync-` for /runsync jobs,
// short lowercase alphanumeric ids for endpoints, volumes and workers.

export const newRunJobId = (): string => `${randomUUID()}-u1`;
export const newSyncJobId = (): string => `sync-${randomUUID()}-u1`;

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

export function newShortId(length = 14): string {
  const bytes = randomBytes(length);
  let id = '';
  for (const byte of bytes) id += ALPHABET[byte % ALPHABET.length];
  return id;
}

/** Ids accepted for endpoints and network volumes given by a seed or the control handle. */
export const RESOURCE_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
