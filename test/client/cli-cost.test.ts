/**
 * The `cost` command's flags: a bad date, a missing end of `cost range` or a range backwards is
 * refused naming the flag, with the bad-input exit code, before anything is contacted (the client
 * factory must never be called).
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../../client/cli';
import { parseCostRange } from '../../client/costs';

async function cli(...args: string[]) {
  let out = '';
  let err = '';
  let connected = 0;
  const code = await runCli(
    args,
    { out: (text) => (out += text), err: (text) => (err += text) },
    async () => {
      connected += 1;
      throw new Error('must not connect');
    },
  );
  return { code, out, err, connected };
}

describe('cost CLI flags', () => {
  it('refuses a bad --since or --until, naming it, before connecting', async () => {
    for (const [flag, value] of [
      ['--since', 'yesterday'],
      ['--until', '2026-13-01T00:00:00Z'],
      ['--since', '2026-11-23 10:00'],
    ] as const) {
      const result = await cli('cost', 'endpoint', 'ep-1', flag, value);
      expect(result.code).toBe(2);
      expect(result.err).toContain(`error: ${flag}: must be an ISO 8601 date`);
      expect(result.connected).toBe(0);
    }
  });

  it('refuses --since after --until before connecting', async () => {
    const result = await cli(
      'cost',
      'endpoint',
      'ep-1',
      '--since',
      '2026-11-24T00:00:00Z',
      '--until',
      '2026-11-23T00:00:00Z',
    );
    expect(result.code).toBe(2);
    expect(result.err).toContain('error: --since: must not be after --until');
    expect(result.connected).toBe(0);
  });

  it('refuses an endpoint id that could break the visibility query', async () => {
    const result = await cli('cost', 'endpoint', 'ep"1');
    expect(result.code).not.toBe(0);
    expect(result.err).toContain('filter.endpointId');
  });

  it('reads dates and date-times with an offset', () => {
    expect(parseCostRange({ since: '2026-11-01', until: '2026-11-23T10:00:00+01:00' })).toEqual({
      since: new Date('2026-11-01T00:00:00Z'),
      until: new Date('2026-11-23T09:00:00Z'),
    });
    expect(parseCostRange({})).toEqual({});
  });

  it('cost range: refuses a missing or bad --since/--until, naming it, before connecting', async () => {
    const good = '2026-11-01T00:00:00Z';
    for (const [args, message] of [
      [['--until', good], 'error: --since: is required'],
      [['--since', good], 'error: --until: is required'],
      [['--since', 'last week', '--until', good], 'error: --since: must be an ISO 8601 date'],
      [['--since', good, '--until', '2026-11-31'], 'error: --until: must be an ISO 8601 date'],
      [['--since', '2026-12-01', '--until', good], 'error: --since: must not be after --until'],
    ] as const) {
      const result = await cli('cost', 'range', ...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.err).toContain(message);
      expect(result.connected).toBe(0);
    }
  });

  it('cost range takes no endpoint', async () => {
    const result = await cli('cost', 'range', 'ep-1', '--since', '2026-11-01', '--until', '2026-11-02');
    expect(result.code).toBe(2);
    expect(result.connected).toBe(0);
  });

  it('cost range connects once its flags are good', async () => {
    const result = await cli('cost', 'range', '--since', '2026-11-01', '--until', '2026-11-02');
    expect(result.connected).toBe(1);
    expect(result.err).toContain('must not connect');
  });

  it('needs a subcommand and an id', async () => {
    expect((await cli('cost', 'job')).code).toBe(2);
    expect((await cli('cost', 'endpoint')).code).toBe(2);
  });
});
