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

  it('freeze() stops service time: only advance() moves it, and timers wait for it', async () => {
    // At this scale one real microsecond is a second of service time: a clock that still
    // followed real time could not read the same twice across a turn of the event loop.
    const clock = createClock(1e9);
    clock.freeze();
    expect(clock.frozen).toBe(true);
    const frozenAt = clock.now();
    const fired: number[] = [];
    clock.after(1, () => fired.push(clock.now() - frozenAt));
    clock.after(60_000, () => fired.push(clock.now() - frozenAt));
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(clock.now()).toBe(frozenAt);
    expect(fired).toEqual([]);

    clock.advance(1);
    expect(fired).toEqual([1]);
    expect(clock.now()).toBe(frozenAt + 1);
    clock.advance(59_999);
    expect(fired).toEqual([1, 60_000]);
    expect(clock.now()).toBe(frozenAt + 60_000);
    clock.close();
  });

  it('freeze() still fires what is already due; resume() runs on from where time stood', async () => {
    const clock = createClock(1000);
    clock.freeze();
    const frozenAt = clock.now();
    let due = false;
    clock.at(frozenAt, () => {
      due = true;
    });
    await waitFor(() => due, 'a timer due when the clock froze');

    let later = false;
    clock.after(5_000, () => {
      later = true;
    });
    clock.resume();
    expect(clock.frozen).toBe(false);
    // Service time goes on from the frozen reading, and the 5 s timer fires in 5 real ms.
    expect(clock.now()).toBeGreaterThanOrEqual(frozenAt);
    await waitFor(() => later, 'a 5 s timer after resume()');
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
  it('service time moves on its own, at the scale, with nothing advancing it', async () => {
    const emulator = await startTestEmulator({ timeScale: 1000 });
    try {
      const before = emulator.control.now();
      // A minute of service time is 60 ms here; at a scale of 1 the wait would run out (15 s).
      await waitFor(() => emulator.control.now() - before >= MINUTE, 'a minute of service time');
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
