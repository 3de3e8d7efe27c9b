import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type SeedFile, startEmulator } from '../../emulator';
import { suiteTempDir } from '../support/temp-dir';
import { graphqlApi, http, jobsApi, waitFor } from './helpers';

// The standalone emulator (emulator/main.ts) and seed files: accounts, endpoints and network volumes.

const ROOT = resolve(__dirname, '../..');

const seed: SeedFile = {
  accounts: [
    {
      apiKey: 'seed-key',
      id: 'acme',
      serverlessDiscount: { discountFactor: 0.8, type: 'CREDIT', expirationDate: '2030-01-01' },
      networkVolumes: ['vol-seeded', { id: 'vol-spare' }],
      endpoints: [
        {
          id: 'seeded-echo',
          name: 'echo endpoint',
          templateId: 'echo',
          workersMin: 1,
          flashBootType: 'FLASHBOOT',
          networkVolumeId: 'vol-seeded',
        },
      ],
    },
  ],
  gpuAvailability: { AMPERE_16: false },
};

const dir = suiteTempDir('emulator-seed');
const seedPath = join(dir, 'seed.json');

beforeAll(() => {
  writeFileSync(seedPath, JSON.stringify(seed));
});

interface Started {
  child: ChildProcess;
  output: () => string;
  urls: { jobs: string; graphql: string; rest: string };
  exit: Promise<number | null>;
}

async function startCli(args: string[]): Promise<Started> {
  // tsx as a loader in one process (its CLI would start a second node): signals reach main.ts as
  // they would a built emulator.
  const child = spawn(process.execPath, ['--import', 'tsx', 'emulator/main.ts', ...args], {
    cwd: ROOT,
    stdio: 'pipe',
  });
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr.on('data', (chunk) => {
    output += chunk;
  });
  const exit = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  const url = (name: string) => new RegExp(`^${name}\\s+(\\S+)$`, 'm').exec(output)?.[1];
  await waitFor(
    () => url('rest') !== undefined || child.exitCode !== null,
    'the CLI to print its URLs',
    30_000,
  );
  return {
    child,
    output: () => output,
    urls: { jobs: url('jobs') ?? '', graphql: url('graphql') ?? '', rest: url('rest') ?? '' },
    exit,
  };
}

describe('emulator/main.ts', () => {
  it('prints its three base URLs, serves the seeded accounts, and exits 0 on SIGINT', async () => {
    const cli = await startCli(['--port', '0', '--api-key', 'k1', '--api-key', 'k2', '--seed', seedPath]);
    try {
      expect(cli.urls.jobs).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v2$/);
      expect(cli.urls.graphql).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/graphql$/);
      expect(cli.urls.rest).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      expect(cli.output()).toContain('endpoint seeded-echo (echo endpoint, template echo)');
      expect(cli.output()).not.toContain('seed-key');

      const health = await http('GET', `${cli.urls.jobs}/seeded-echo/health`, {
        headers: { authorization: 'seed-key' },
      });
      expect(health.status).toBe(200);
      // Each --api-key is its own account: k1 does not see the seeded endpoint.
      expect(
        (await http('GET', `${cli.urls.jobs}/seeded-echo/health`, { headers: { authorization: 'k1' } }))
          .status,
      ).toBe(404);
      const k2 = await http('POST', `${cli.urls.graphql}?api_key=k2`, {
        json: { query: '{ myself { endpoints { id } } }' },
      });
      expect(k2.body).toEqual({ data: { myself: { endpoints: [] } } });
    } finally {
      cli.child.kill('SIGINT');
    }
    expect(await cli.exit).toBe(0);
    expect(cli.output()).toContain('SIGINT: closing');
  });

  it('exits 0 on SIGTERM and honours --time-scale and --stream-shape', async () => {
    const cli = await startCli([
      '--port',
      '0',
      '--api-key',
      'k',
      '--time-scale',
      '1000',
      '--stream-shape',
      'object',
    ]);
    try {
      const create = await http('POST', `${cli.urls.rest}/endpoints`, {
        headers: { authorization: 'Bearer k' },
        json: { name: 's', templateId: 'stream', gpuTypeIds: ['AMPERE_16'] },
      });
      const base = `${cli.urls.jobs}/${create.body.id}`;
      const job = await http('POST', `${base}/run`, {
        headers: { authorization: 'k' },
        json: { input: { tokens: 2, tokenDelayMs: 1000 } },
      });
      const stream = await http('GET', `${base}/stream/${job.body.id}`, { headers: { authorization: 'k' } });
      expect(stream.body).toEqual({ status: expect.any(String), stream: expect.any(Array) });
    } finally {
      cli.child.kill('SIGTERM');
    }
    expect(await cli.exit).toBe(0);
  });

  it('refuses an invalid option with a message and a non-zero exit', async () => {
    const cli = await startCli(['--port', '0', '--stream-shape', 'sideways']);
    expect(await cli.exit).not.toBe(0);
    expect(cli.output()).toMatch(/streamShape/);
  });
});

describe('seed files', () => {
  for (const [how, value] of [
    ['a path', () => seedPath],
    ['JSON text', () => JSON.stringify(seed)],
    ['an object', () => seed],
  ] as const) {
    it(`loads accounts, network volumes, endpoints, discounts and GPU availability from ${how}`, async () => {
      const emulator = await startEmulator({ seed: value(), timeScale: 1e-6 });
      try {
        // Seeded accounts replace the default 'test-key' account.
        expect((await jobsApi(emulator, 'seeded-echo', 'test-key').health()).status).toBe(401);
        const api = jobsApi(emulator, 'seeded-echo', 'seed-key');
        emulator.control.advance(500);
        expect((await api.health()).body.workers.idle).toBe(1);
        const me = await graphqlApi(
          emulator,
          'seed-key',
        )(
          '{ myself { id endpoints { id networkVolumeId } serverlessDiscount { discountFactor type expirationDate } } }',
        );
        expect(me.body.data.myself).toEqual({
          id: 'acme',
          endpoints: [{ id: 'seeded-echo', networkVolumeId: 'vol-seeded' }],
          serverlessDiscount: { discountFactor: 0.8, type: 'CREDIT', expirationDate: '2030-01-01' },
        });
        const volume = await http('DELETE', `${emulator.restUrl}/networkvolumes/vol-spare`, {
          headers: { authorization: 'Bearer seed-key' },
        });
        expect(volume.status).toBe(204);
        const created = await http('POST', `${emulator.restUrl}/endpoints`, {
          headers: { authorization: 'Bearer seed-key' },
          json: { name: 'r', templateId: 'echo', gpuTypeIds: ['AMPERE_16', 'AMPERE_24'] },
        });
        expect(created.body.gpuIds).toBe('AMPERE_24');
      } finally {
        await emulator.close();
      }
    });
  }

  it('refuses an invalid seed with a message naming the field', async () => {
    await expect(
      startEmulator({ seed: { accounts: [{ apiKey: 'k', endpoints: [{ name: 'x' } as never] }] } }),
    ).rejects.toThrow(/accounts\.0\.endpoints\.0\.templateId/);
    await expect(startEmulator({ seed: join(dir, 'missing.json') })).rejects.toThrow(/ENOENT/);
    await expect(startEmulator({ seed: '{ not json' })).rejects.toThrow(/not valid JSON/);
  });

  it('refuses invalid options', async () => {
    await expect(startEmulator({ timeScale: 0 })).rejects.toThrow(/timeScale/);
  });
});
