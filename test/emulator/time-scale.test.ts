import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { createClock } from '../../emulator/clock';
import { jobsApi, KEY, MINUTE, startTestEmulator, waitFor } from './helpers';

// Service time: the clock's ordering and exactness, the time scale applied to every timer, and a
// close() that leaves nothing behind.

describe('clock', () => {
  it('fires timers in service-time order, each seeing its own due time as now', () => {
    const clock = createClock(1e-6);
    const start = clock.now();
    const seen: Array<[string, number]> = [];
    clock.after(300, () => seen.push(['c', clock.now() - start]));
    clock.after(100, () => {
      seen.push(['a', clock.now() - start]);
      clock.after(100, () => seen.push(['b', clock.now() - start]));
    });
    const cancelled = clock.after(150, () => seen.push(['never', 0]));
    clock.cancel(cancelled);
    clock.advance(1000);
    expect(seen.map(([name]) => name)).toEqual(['a', 'b', 'c']);
    expect(seen.map(([, at]) => Math.round(at))).toEqual([100, 200, 300]);
    expect(clock.pending()).toBe(0);
    clock.close();
  });

  it('runs a timer in real time divided by the scale', async () => {
    const clock = createClock(1000);
    let fired = false;
    clock.after(5000, () => {
      fired = true;
    });
    await waitFor(() => fired, 'a 5 s timer at scale 1000');
    clock.close();
  });

  it('close() drops every pending timer', () => {
    const clock = createClock(1);
    for (let i = 0; i < 100; i++) clock.after(MINUTE, () => undefined);
    expect(clock.pending()).toBe(100);
    clock.close();
    expect(clock.pending()).toBe(0);
    expect(() => createClock(0)).toThrow(RangeError);
  });
});

describe('time scale', () => {
  it('service time runs timeScale times faster than real time', async () => {
    const emulator = await startTestEmulator({ timeScale: 1000 });
    try {
      const before = emulator.control.now();
      await sleep(20);
      // At least 20 ms of real time passed, so at least 20 s of service time.
      expect(emulator.control.now() - before).toBeGreaterThanOrEqual(20_000);
    } finally {
      await emulator.close();
    }
  });

  it('applies to cold starts, execution, retention and the ttl', async () => {
    const emulator = await startTestEmulator({ timeScale: 50_000 });
    try {
      const state = emulator.control.createEndpoint(KEY, {
        name: 'scaled',
        templateId: 'scripted',
        workersMax: 2,
      });
      const api = jobsApi(emulator, state.id);
      const job = await api.run({ input: { sleepMs: 2 * MINUTE, output: 'done' } });
      const doomed = await api.run({
        input: { hang: true },
        policy: { ttl: 10 * MINUTE, executionTimeout: 60 * MINUTE },
      });

      // Observed after the fact, so nothing depends on catching a state inside a few real milliseconds.
      await waitFor(async () => (await api.status(doomed.body.id)).status === 404, 'the ttl');
      expect(emulator.control.job(doomed.body.id)).toMatchObject({
        removedReason: 'ttl',
        status: 'IN_PROGRESS',
      });
      await waitFor(async () => (await api.status(job.body.id)).status === 404, '30 minutes of retention');
      const gone = emulator.control.job(job.body.id);
      // 5 s cold start, 2 min of execution, 30 min of retention: exact, however late the timers ran.
      expect(gone).toMatchObject({
        status: 'COMPLETED',
        expired: true,
        delayTime: 5000,
        executionTime: 2 * MINUTE,
      });
      expect(gone!.resultsExpireAt! - gone!.finishedAt!).toBe(30 * MINUTE);
      expect(gone!.removedAt).toBe(gone!.resultsExpireAt);
    } finally {
      await emulator.close();
    }
  });

  it('applies to idle timeouts', async () => {
    const emulator = await startTestEmulator({ timeScale: 10_000 });
    try {
      const state = emulator.control.createEndpoint(KEY, {
        name: 'idle',
        templateId: 'echo',
        idleTimeout: 60,
      });
      const api = jobsApi(emulator, state.id);
      await api.run({ input: {} });
      await waitFor(async () => (await api.health()).body.jobs.completed === 1, 'the job');
      await waitFor(async () => {
        const { workers } = (await api.health()).body;
        return workers.idle + workers.running + workers.initializing === 0;
      }, 'the idle timeout');
    } finally {
      await emulator.close();
    }
  });
});

describe('bounded memory and clean shutdown', () => {
  it('keeps at most tombstoneLimit removed jobs for introspection', async () => {
    const emulator = await startTestEmulator({ timeScale: 1e-6, tombstoneLimit: 3 });
    try {
      const state = emulator.control.createEndpoint(KEY, { name: 't', templateId: 'echo', workersMin: 1 });
      emulator.control.advance(5000);
      const api = jobsApi(emulator, state.id);
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) ids.push((await api.run({ input: { i } })).body.id);
      emulator.control.advance(0);
      emulator.control.advance(30 * MINUTE);
      expect(ids.map((id) => emulator.control.job(id) !== undefined)).toEqual([
        false,
        false,
        false,
        true,
        true,
        true,
      ]);
      const kept = emulator.control.job(ids[5]!)!;
      expect(kept.expired).toBe(true);
      expect(kept.input).toBeUndefined();
    } finally {
      await emulator.close();
    }
  });

  it('close() clears every timer and socket: nothing keeps the process alive', async () => {
    const handles = () =>
      process.getActiveResourcesInfo().filter((r) => r === 'Timeout' || r.startsWith('TCP')).length;
    const baseline = handles();
    const emulator = await startTestEmulator({ timeScale: 1 });
    const agent = new Agent();
    const state = emulator.control.createEndpoint(KEY, { name: 'c', templateId: 'scripted', workersMin: 2 });
    const api = jobsApi(emulator, state.id);
    await api.run({ input: { hang: true }, webhook: 'http://127.0.0.1:9/never' });
    await api.run({ input: { sleepMs: 60 * MINUTE } });
    // A /runsync left waiting when the emulator closes.
    const waiting = request(`${api.base}/runsync?wait=300000`, {
      method: 'POST',
      headers: { authorization: KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ input: { hang: true } }),
      dispatcher: agent,
    }).catch(() => 'closed');

    await emulator.close();
    await emulator.close();
    await waiting;
    await agent.close();
    await waitFor(() => handles() <= baseline, 'handles to go');
    await expect(api.health()).rejects.toThrow();
  });
});
