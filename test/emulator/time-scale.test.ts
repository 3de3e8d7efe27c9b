import { performance } from 'node:perf_hooks';
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

  it('runs a timer in real time divided by the scale, never sooner', async () => {
    const before = performance.now();
    const clock = createClock(1000);
    // 5 s of service time at a scale of 1000: 5 real ms at the least (the timer fires once real
    // time has moved that far; how much later is the machine's business, so it is not asserted).
    const firedAt = await new Promise<number>((resolve) => {
      clock.after(5000, () => resolve(performance.now()));
    });
    expect(firedAt - before).toBeGreaterThanOrEqual(5);
    clock.close();
  });

  it('freeze() stops service time: only advance() moves it, and timers wait for it', async () => {
    // At this scale one real microsecond is a second of service time: a clock that still
    // followed real time could not read the same twice across turns of the event loop.
    const clock = createClock(1e9);
    clock.freeze();
    expect(clock.frozen).toBe(true);
    const frozenAt = clock.now();
    const fired: number[] = [];
    clock.after(1, () => fired.push(clock.now() - frozenAt));
    clock.after(60_000, () => fired.push(clock.now() - frozenAt));
    for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
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
    // Fired by the clock's own timer, with nothing advancing it.
    await new Promise<void>((resolve) => clock.at(frozenAt, resolve));
    expect(clock.now()).toBe(frozenAt);

    // Ten minutes added while frozen are kept: resuming goes on from there, not back to real time.
    clock.advance(10 * MINUTE);
    const stood = frozenAt + 10 * MINUTE;
    const later = new Promise<number>((resolve) => {
      clock.after(5_000, () => resolve(clock.now()));
    });
    clock.resume();
    expect(clock.frozen).toBe(false);
    expect(clock.now()).toBeGreaterThanOrEqual(stood);
    // And it moves on its own again: the 5 s timer fires with nothing advancing it.
    expect(await later).toBe(stood + 5_000);
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
  it('service time moves on its own, at exactly the scale, with nothing advancing it', async () => {
    const emulator = await startTestEmulator({ timeScale: 1000 });
    try {
      // Each reading of service time is bracketed by two of real time, in a fresh turn of the event
      // loop (service time stands still within one synchronous task): however slow the machine,
      // the service time that passed, divided by the scale, lies between the brackets' distances.
      const reading = async () => {
        await new Promise((resolve) => setImmediate(resolve));
        const realBefore = performance.now();
        const service = emulator.control.now();
        return { realBefore, service, realAfter: performance.now() };
      };
      const first = await reading();
      await waitFor(() => emulator.control.now() - first.service >= MINUTE, 'a minute of service time');
      const second = await reading();
      const passed = (second.service - first.service) / 1000;
      const rounding = 1e-3;
      expect(passed).toBeGreaterThanOrEqual(second.realBefore - first.realAfter - rounding);
      expect(passed).toBeLessThanOrEqual(second.realAfter - first.realBefore + rounding);
      expect(second.service - first.service).toBeGreaterThanOrEqual(MINUTE);
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
