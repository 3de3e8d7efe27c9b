/**
 * Asks the endpoint's gate (workflows/endpoint/endpoint-gate.ts) for room to send: an update-with-start
 * from the activity that will send, so the first ask on an endpoint starts its gate. While the ask
 * waits, the activity beats straight to the server with no details, as a submit waiting to send
 * does (submit-beat.ts): nothing is out yet.
 */
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import {
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { ServiceClient } from '../api';
import { type LibraryMetrics, noopMetrics } from '../api/metrics';
import {
  ASK_TO_SEND_UPDATE,
  ASK_WAIT_MS,
  DEFAULT_FAIRNESS_KEY,
  ENDPOINT_GATE_WORKFLOW,
  type EndpointGateInput,
  endpointGateId,
  GATE_IDLE_MS,
  type Scheduling,
  SEND_SLACK_MS,
  type SendAsk,
  type SendGrant,
  type ServiceQueue,
  sendGrantSchema,
} from '../contracts/endpoint-gate';
import { SUBMIT_NOT_SENT } from '../contracts/failures';
import { GATE_PRIORITY } from '../contracts/task-priority';
import { type HeldSpare, SPARE_MAX, takeSpare } from '../engine/endpoint-grants';
import { type QueueReader, serviceQueueReading, serviceQueueReadingSoon } from './service-queue-look';

/** How long a submit of more than one request waits for a first reading of the service's queue. */
const FIRST_READING_WAIT_MS = 1_000;

/** A gate that could not answer (busy, continuing as new): ask again after this, with some jitter. */
const BUSY_RETRY_MS = 200;

/** How long one ask may take to be answered (a gate answers at once; its worker may be gone). */
const ANSWER_MS = 5_000;

/** The gate's answer, or a failure once it is late: an update no worker runs would be waited for without end. */
function answeredInTime<T>(call: Promise<T>): Promise<T> {
  call.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${ANSWER_MS} ms`)), ANSWER_MS);
  });
  return Promise.race([call, late]).finally(() => clearTimeout(timer));
}

/**
 * How a submit asks its endpoint's gate for room: askToSend below; a test may give its own gate.
 * `reading` gives the service's queue as this process last read it, sent with each ask.
 */
export type AskToSend = (
  ask: Omit<SendAsk, 'id' | 'queue'>,
  reading?: () => ServiceQueue | undefined,
) => Promise<SendGrant>;

/** One submit of this process waiting for room, served in the order it came. */
interface Waiter {
  count: number;
  giveUpAt: number;
  resolve(grant: SendGrant): void;
  reject(reason: unknown): void;
}

/**
 * The submits of this process that ask one gate alike (task queue, endpoint, priority, fairness key
 * and weight): they ask as one, one update in flight at a time, under one id until it is granted,
 * and share each grant in the order they came. However many submits wait, the gate sees a handful
 * of asks per process, well under the server's limit of updates in flight on one workflow.
 */
interface Lane {
  waiters: Waiter[];
  asking: boolean;
  id: string;
  /** Whether its gate answers, shared with the other lanes of the gate. */
  gate: GateHealth;
  /**
   * Spare room, used before asking again: the gate's, given with its last grant, or the room of a
   * gate this process started afresh, which the gate has yet to count (`uncounted`).
   */
  spare?: (HeldSpare & { uncounted?: boolean }) | undefined;
  /** Requests sent on uncounted spare room: the gate is asked to count them next. */
  owed: number;
}

/** How a gate has answered this process lately. */
interface GateHealth {
  /** Since when the gate has not answered (undefined: it answered the last ask). */
  silentSince?: number | undefined;
  /** Until when its lanes send without the gate: it did not answer for UNREACHABLE_MS. */
  ungatedUntil?: number | undefined;
  /** When it last answered this process, or this process last tried to start it. */
  heardAt?: number | undefined;
}

/** Per task queue and endpoint: kept across lanes, so that a gate found silent stays so known. */
const gates = new Map<string, GateHealth>();

/**
 * A gate that answers nothing for this long is passed by: the lane's submits go out under their
 * process's own limiter for UNGATED_MS, then ask it again. Liveness before the shared window: no
 * submit waits on a gate that cannot answer.
 *
 * The gate runs on the task queue of the workers that ask it, so any of them can run it; but when
 * the process whose cache holds it dies, the server hands its next workflow task to another only
 * after the sticky queue's schedule-to-start timeout (the worker's
 * `stickyQueueScheduleToStartTimeout`, 10 s by default). Passed by within that time, the gate
 * would let every surviving process send at its own full limit at once, and the endpoint answer
 * 429s; so only a gate silent for twice that is passed by.
 */
const UNREACHABLE_MS = 20_000;
const UNGATED_MS = 60_000;

/** What an ungated submit is granted: all it asked, with no time to keep. */
const ungated = (count: number): SendGrant => ({ count, at: Date.now(), sendBy: Number.MAX_SAFE_INTEGER });

const lanes = new Map<string, Lane>();

/**
 * A gate this process has not heard from for as long as an idle gate lives may have ended. Started
 * afresh here (another process may have started it first: then it is asked as ever), it has had
 * nothing in its window for that long, so the lane's first requests, up to SPARE_MAX, go out at
 * once, and the gate counts them at the lane's next ask. A new gate's first workflow task no longer
 * stands between an endpoint's first job and its submit; at worst, processes that start gates at
 * the same moment send SPARE_MAX requests the gate counts a moment late.
 */
async function startAfresh(lane: Lane, start: () => Promise<boolean>, limit: number): Promise<void> {
  const now = Date.now();
  if (lane.gate.heardAt !== undefined && now - lane.gate.heardAt <= GATE_IDLE_MS) return;
  lane.gate.heardAt = now;
  const started = await answeredInTime(start()).catch(() => false);
  // Taken by the waiters there now (pump's spare turn); the lane's next ask replaces it.
  if (started)
    lane.spare = { count: Math.min(SPARE_MAX, limit), until: Date.now() + SEND_SLACK_MS, uncounted: true };
}

/** Asks the gate for the lane's waiters until none is left: each is granted, or gives up. */
async function pump(
  lane: Lane,
  key: string,
  ask: (count: number, id: string) => Promise<unknown>,
  start: () => Promise<boolean>,
  limit: number,
) {
  lane.asking = true;
  try {
    await startAfresh(lane, start, limit);
    while (lane.waiters.length > 0 || lane.owed > 0) {
      let now = Date.now();
      for (const waiter of lane.waiters.filter((entry) => entry.giveUpAt <= now)) {
        lane.waiters.splice(lane.waiters.indexOf(waiter), 1);
        waiter.resolve({ count: 0, at: now, sendBy: now });
      }
      // Spare room first: on an idle endpoint, most submits need not ask.
      for (;;) {
        const first = lane.waiters[0];
        const spared = first && takeSpare(lane.spare, first.count, now);
        if (!first || !spared) break;
        lane.waiters.shift();
        if (lane.spare?.uncounted) lane.owed += spared.count;
        first.resolve(spared);
      }
      if (lane.owed > 0) {
        // What went out on uncounted room, counted now: the answer's spare room replaces that room.
        const owed = lane.owed;
        lane.owed = 0;
        lane.spare = undefined;
        try {
          const answer = sendGrantSchema.parse(await answeredInTime(ask(owed, randomUUID())));
          lane.gate.heardAt = Date.now();
          if (answer.spare !== undefined) lane.spare = { ...answer.spare };
        } catch {
          // Already sent, into a window that was empty: nothing to plan again.
        }
        continue;
      }
      if (lane.waiters.length === 0) break;
      const wanted = Math.min(
        lane.waiters.reduce((sum, waiter) => sum + waiter.count, 0),
        limit,
      );
      if ((lane.gate.ungatedUntil ?? 0) > now) {
        for (const waiter of lane.waiters.splice(0)) waiter.resolve(ungated(waiter.count));
        break;
      }
      let retryAt: number;
      try {
        const answer = sendGrantSchema.parse(await answeredInTime(ask(wanted, lane.id)));
        lane.gate.silentSince = undefined;
        lane.gate.heardAt = Date.now();
        if (answer.spare !== undefined) lane.spare = { ...answer.spare };
        if (answer.count > 0) {
          lane.id = randomUUID();
          let left = answer.count;
          while (left > 0 && lane.waiters.length > 0) {
            const waiter = lane.waiters.shift() as Waiter;
            const taken = Math.min(left, waiter.count);
            left -= taken;
            waiter.resolve({ count: taken, at: answer.at, sendBy: answer.sendBy });
          }
          continue;
        }
        // A paused endpoint: every waiter leaves its worker slot at once, with no room and the
        // reason, and its workflow waits and tries again (a job's tries, a batch's held pages).
        if (answer.paused) {
          for (const waiter of lane.waiters.splice(0)) waiter.resolve(answer);
          break;
        }
        retryAt = answer.retryAt ?? Date.now() + BUSY_RETRY_MS;
      } catch (error) {
        // The gate refused the ask itself (its validator): a bug to report, not to wait out.
        if (error instanceof WorkflowUpdateFailedError) {
          for (const waiter of lane.waiters.splice(0)) waiter.reject(error);
          break;
        }
        lane.gate.silentSince ??= now;
        if (Date.now() - lane.gate.silentSince >= UNREACHABLE_MS) {
          lane.gate.ungatedUntil = Date.now() + UNGATED_MS;
          lane.gate.silentSince = undefined;
          continue;
        }
        retryAt = Date.now() + BUSY_RETRY_MS * (1 + Math.random());
      }
      now = Date.now();
      const firstGiveUp = Math.min(...lane.waiters.map((waiter) => waiter.giveUpAt));
      await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.min(retryAt, firstGiveUp) - now)));
    }
  } finally {
    lane.asking = false;
    // A lane with spare room is kept for the process's next submit.
    if (lane.waiters.length === 0 && lane.owed === 0 && (lane.spare?.until ?? 0) <= Date.now())
      lanes.delete(key);
  }
}

/**
 * Asks until the gate grants room or ASK_WAIT_MS have passed (then a grant of 0: the caller plans
 * its requests again), in its lane with this process's other submits that ask alike. While it
 * waits, the activity beats straight to the server with no details: nothing is out yet.
 */
export async function askToSend(
  ask: Omit<SendAsk, 'id' | 'queue'>,
  reading?: () => ServiceQueue | undefined,
): Promise<SendGrant> {
  const ctx = Context.current();
  const { taskQueue } = ctx.info;
  const key = JSON.stringify([taskQueue, ask.endpointId, ask.priority, ask.fairnessKey, ask.fairnessWeight]);
  let lane = lanes.get(key);
  if (!lane) {
    const gateKey = JSON.stringify([taskQueue, ask.endpointId]);
    let gate = gates.get(gateKey);
    if (!gate) {
      gate = {};
      gates.set(gateKey, gate);
    }
    lane = { waiters: [], asking: false, id: randomUUID(), gate, owed: 0 };
    lanes.set(key, lane);
  }
  const client = ctx.client;
  const gateOptions = {
    workflowId: endpointGateId(ask.endpointId),
    taskQueue,
    priority: GATE_PRIORITY,
    args: [{ endpointId: ask.endpointId } satisfies EndpointGateInput] as [EndpointGateInput],
  };
  const send = (count: number, id: string) => {
    const queue = reading?.();
    return client.workflow.executeUpdateWithStart(ASK_TO_SEND_UPDATE, {
      args: [{ ...ask, count, id, ...(queue === undefined ? {} : { queue }) } satisfies SendAsk],
      startWorkflowOperation: new WithStartWorkflowOperation(ENDPOINT_GATE_WORKFLOW, {
        ...gateOptions,
        workflowIdConflictPolicy: 'USE_EXISTING',
      }),
    });
  };
  // Whether this call started the gate: false when it runs already.
  const start = () =>
    client.workflow.start(ENDPOINT_GATE_WORKFLOW, { ...gateOptions, workflowIdConflictPolicy: 'FAIL' }).then(
      () => true,
      (error: unknown) => {
        if (error instanceof WorkflowExecutionAlreadyStartedError) return false;
        throw error;
      },
    );
  const beatEvery = Math.max(ctx.info.heartbeatTimeoutMs ?? 30_000, 1_000) / 3;
  // The last beat sent, awaited before the grant is returned: a beat with no details that reached
  // the server after the caller's `sending` beat would erase it, and a page cut by a crash would
  // then look unsent and go out twice.
  let beating: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    beating = ctx.client.activity.heartbeat(ctx.info.taskToken).catch(() => undefined);
  }, beatEvery);
  let waiter: Waiter | undefined;
  const granted = new Promise<SendGrant>((resolve, reject) => {
    waiter = { count: ask.count, giveUpAt: Date.now() + ASK_WAIT_MS, resolve, reject };
  });
  lane.waiters.push(waiter as Waiter);
  if (!lane.asking) void pump(lane, key, send, start, ask.limit);
  try {
    // A cancelled activity (a worker shutting down) stops waiting at once, and leaves its lane.
    return await Promise.race([granted, ctx.cancelled]);
  } catch (error) {
    const at = lane.waiters.indexOf(waiter as Waiter);
    if (at >= 0) lane.waiters.splice(at, 1);
    throw error;
  } finally {
    clearInterval(timer);
    await beating;
  }
}

/** What a submit asks its endpoint's gate with. */
export interface GateDeps {
  /**
   * Its /run limit (the gate holds it; without a finite one, nothing to hold), and what reads the
   * service's queue for the gate (without it, the gate holds no queue back for this process).
   */
  client: Partial<Pick<ServiceClient, 'rateLimit'> & QueueReader>;
  /** The gate; default: askToSend above. */
  askToSend?: AskToSend | undefined;
  metrics?: LibraryMetrics | undefined;
}

/**
 * Room for `count` requests to the endpoint now: the gate's grant under the client's /run limit
 * (at most one window's worth is asked at once), or all of them, with no time to keep, when the
 * client keeps no rate for /run.
 */
export async function grantToSend(
  deps: GateDeps,
  endpointId: string,
  count: number,
  scheduling: Scheduling = {},
): Promise<{ count: number; sendBy?: number; paused?: true }> {
  const limit = deps.client.rateLimit?.('run')?.perTenSeconds;
  if (limit === undefined || !Number.isFinite(limit)) return { count };
  const asked = Math.min(count, limit);
  const key = scheduling.fairnessKey ?? DEFAULT_FAIRNESS_KEY;
  const metrics = deps.metrics ?? noopMetrics;
  metrics.sendWaiting(endpointId, key, asked);
  try {
    let grant: SendGrant;
    try {
      const reader = deps.client;
      // Read by the client itself (one per worker): its readings are kept per client.
      const queueReader =
        reader.jobs === undefined || reader.endpoints === undefined ? undefined : (reader as QueueReader);
      const reading =
        queueReader === undefined ? undefined : () => serviceQueueReading(queueReader, endpointId);
      if (queueReader !== undefined && asked > 1) {
        await serviceQueueReadingSoon(queueReader, endpointId, FIRST_READING_WAIT_MS);
      }
      grant = await (deps.askToSend ?? askToSend)(
        { endpointId, count: asked, limit, ...scheduling },
        reading,
      );
    } catch (error) {
      if (error instanceof CancelledFailure) throw error;
      // Nothing can have been sent before a grant: the caller's requests are planned again.
      throw ApplicationFailure.create({
        type: SUBMIT_NOT_SENT,
        message: `nothing was sent: endpoint ${endpointId}'s gate did not answer (${(error as Error).message})`,
        nonRetryable: false,
      });
    }
    if (grant.sendBy === Number.MAX_SAFE_INTEGER) {
      metrics.sendGrant(endpointId, key, 'ungated', grant.count);
      return { count: grant.count };
    }
    metrics.sendGrant(endpointId, key, 'granted', grant.count);
    if (grant.count < asked) metrics.sendGrant(endpointId, key, 'refused', asked - grant.count);
    return { count: grant.count, sendBy: grant.sendBy, ...(grant.paused ? { paused: true } : {}) };
  } finally {
    metrics.sendWaiting(endpointId, key, -asked);
  }
}

/**
 * A submit that got no room at its endpoint's gate: nothing was sent, and the workflow submits
 * again (`noRoom`: for as long as the gate has no room, since the service refused nothing).
 */
export function windowFull(endpointId: string, paused = false): ApplicationFailure {
  return ApplicationFailure.create({
    type: SUBMIT_NOT_SENT,
    message: paused
      ? `nothing was sent: endpoint ${endpointId} is paused at its gate (endpoint limits --resume)`
      : `nothing was sent: endpoint ${endpointId}'s gate had no room in its /run window for ${ASK_WAIT_MS} ms (busy with work that goes first)`,
    nonRetryable: false,
    details: [{ noRoom: true }],
  });
}
