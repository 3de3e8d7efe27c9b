import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { provisionedServers } from '../../scripts/servers';

// docker-compose.yml cannot run here (no Docker engine); the real Compose CLI validates it offline.
const composeFile = path.join(__dirname, '../../docker-compose.yml');
const serviceEnv = {
  SERVERLESS_API_KEY: 'k',
  SERVERLESS_API_URL: 'https://api.example.test/v2',
  SERVERLESS_GRAPHQL_URL: 'https://api.example.test/graphql',
  SERVERLESS_REST_URL: 'https://rest.example.test/v1',
};

function composeConfig(file: string, env: Record<string, string>) {
  const { composeCli } = provisionedServers();
  if (!composeCli) throw new Error('the Compose CLI is not provisioned: run npm run provision');
  return spawnSync(composeCli, ['-f', file, 'config', '-q'], {
    encoding: 'utf8',
    cwd: path.dirname(composeFile),
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
  });
}

describe('docker-compose.yml', () => {
  it('is a valid Compose file once the service variables are set', () => {
    const result = composeConfig(composeFile, serviceEnv);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('refuses to start without the API key and says which variable is missing', () => {
    const { SERVERLESS_API_KEY: _omitted, ...rest } = serviceEnv;
    const result = composeConfig(composeFile, rest);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('SERVERLESS_API_KEY');
  });

  it('would catch a broken field: the validator names it', () => {
    const broken = readFileSync(composeFile, 'utf8').replace(
      'stop_grace_period: 60s',
      'stop_grace_period: [60s]',
    );
    const copy = path.join(mkdtempSync(path.join(tmpdir(), 'compose-')), 'docker-compose.yml');
    writeFileSync(copy, broken);
    const result = composeConfig(copy, serviceEnv);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('stop_grace_period');
  });
});
