/**
 * endpointGate: the holder of one endpoint's /run window for every workload on it (jobs, batches
 * of both modes, automations' and schedules' runs), in any number of worker processes. State the
 * Temporal server keeps, so that a worker that dies holds nothing: a grant is room in the window
 * now, sent within SEND_SLACK_MS or given up, and it leaves the window with time.
 *
 * A submit asks with an update from its activity (activities/send-grant.ts, update-with-start:
 * the first ask starts the gate). Every ask is answered at once (engine/endpoint-grants.ts
 * answerAsk): room now, highest priority and least-served fairness key first, or when to ask
 * again. No update is ever held open, so a burst of submits never meets the server's limit of
 * updates in flight on one workflow. The gate continues as new well before the server's limit of
 * updates in one run. An idle gate ends; the next ask starts it again.
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { gateCurrentDetails } from '../../contracts/current-details';
import {
  ASK_WAIT_MS,
  type EndpointGateInput,
  GATE_ASKS_PER_RUN,
  GATE_IDLE_MS,
  type GateView,
  gateControlsSchema,
  type SendGrant,
  sendAskSchema,
} from '../../contracts/endpoint-gate';
import {
  answerAsk,
  carriedGrants,
  type GrantsState,
  initialGrants,
  tidy,
} from '../../engine/endpoint-grants';
import { holdsQueue, queueRoom } from '../../engine/service-queue';
import { askToSendUpdate, gateViewQuery, setGateControlsUpdate } from './endpoint-gate-definitions';

interface Carried {
  grants: GrantsState;
  runLimit: number | undefined;
}

function carriedOf(input: EndpointGateInput): Carried {
  const carried = input.carried as Partial<Carried> | undefined;
  return { grants: { ...initialGrants(), ...carried?.grants }, runLimit: carried?.runLimit };
}

/** No pause, limit or weight of an operator's in force. */
function controlsCleared(grants: GrantsState): boolean {
  return !grants.paused && grants.limitOverride === undefined && Object.keys(grants.weights).length === 0;
}

export async function endpointGate(input: EndpointGateInput): Promise<void> {
  const { grants, ...limits } = carriedOf(input);
  let runLimit = limits.runLimit;
  let asks = 0;
  // The last time the gate was asked, or found not idle.
  let lastAskAt = Date.now();

  const requests = (asks: readonly { count: number }[]) => asks.reduce((sum, ask) => sum + ask.count, 0);
  const serviceQueue = (now: number): Pick<GateView, 'serviceQueue'> => {
    const reading = grants.queue;
    if (reading === undefined) return {};
    const held = holdsQueue(reading, now)
      ? { room: queueRoom(reading, grants.log, now, grants.takenPerSecond) }
      : {};
    const taken = grants.takenPerSecond;
    return {
      serviceQueue: { ...reading, ...held, ...(taken === undefined ? {} : { takenPerSecond: taken }) },
    };
  };
  const view = (): GateView => {
    const { waiting } = grants;
    const keys = new Set([...Object.keys(grants.granted), ...waiting.map((ask) => ask.fairnessKey)]);
    return {
      endpointId: input.endpointId,
      paused: grants.paused,
      runLimit: grants.limitOverride ?? runLimit,
      runLimitOverride: grants.limitOverride,
      inWindow: requests(
        grants.log.filter(([at]) => at > Date.now() - ASK_WAIT_MS).map(([, count]) => ({ count })),
      ),
      keys: [...keys].sort().map((fairnessKey) => ({
        fairnessKey,
        weight: grants.weights[fairnessKey],
        waiting: requests(waiting.filter((ask) => ask.fairnessKey === fairnessKey)),
        granted: grants.granted[fairnessKey] ?? 0,
      })),
      waitingByPriority: Object.fromEntries(
        [1, 2, 3, 4, 5]
          .map((priority) => [String(priority), requests(waiting.filter((ask) => ask.priority === priority))])
          .filter(([, count]) => count !== 0),
      ),
      ...serviceQueue(Date.now()),
    };
  };

  setHandler(
    askToSendUpdate,
    (raw): SendGrant => {
      const ask = sendAskSchema.parse(raw);
      const now = Date.now();
      asks += 1;
      lastAskAt = now;
      runLimit = ask.limit;
      const answer = answerAsk(
        grants,
        {
          id: ask.id,
          count: ask.count,
          priority: ask.priority,
          fairnessKey: ask.fairnessKey,
          weight: ask.fairnessWeight,
        },
        now,
        grants.limitOverride ?? ask.limit,
        ask.queue,
      );
      // Shown in the UI; costs no history event.
      setCurrentDetails(gateCurrentDetails(view()));
      if (!('grant' in answer))
        return {
          count: 0,
          at: now,
          sendBy: now,
          retryAt: answer.retryAt,
          ...(answer.paused ? { paused: true } : {}),
        };
      const { count, at, sendBy, spare } = answer.grant;
      return { count, at, sendBy, ...(spare === undefined ? {} : { spare }) };
    },
    {
      validator: (raw) => {
        if (raw.endpointId !== input.endpointId) {
          throw new Error(`endpointId: this gate is ${input.endpointId}'s, not ${raw.endpointId}'s`);
        }
        sendAskSchema.parse(raw);
      },
    },
  );
  setHandler(
    setGateControlsUpdate,
    (raw) => {
      const controls = gateControlsSchema.parse(raw);
      if (controls.paused !== undefined) grants.paused = controls.paused;
      if (controls.runLimit === null) delete grants.limitOverride;
      else if (controls.runLimit !== undefined) grants.limitOverride = controls.runLimit;
      for (const [key, weight] of Object.entries(controls.weights ?? {})) {
        if (weight === null) delete grants.weights[key];
        else grants.weights[key] = weight;
      }
      lastAskAt = Date.now();
      setCurrentDetails(gateCurrentDetails(view()));
      return view();
    },
    { validator: (raw) => void gateControlsSchema.parse(raw) },
  );
  setHandler(gateViewQuery, view);

  // The loop wakes only to continue as new or to see whether the gate has been idle: an ask costs
  // its update and its workflow task, and no timer.
  for (;;) {
    const renew = () => asks >= GATE_ASKS_PER_RUN || workflowInfo().continueAsNewSuggested;
    await condition(renew, Math.max(1, lastAskAt + GATE_IDLE_MS - Date.now()));
    if (renew()) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof endpointGate>({
        endpointId: input.endpointId,
        carried: { grants: carriedGrants(grants), runLimit } satisfies Carried,
      });
    }
    const now = Date.now();
    if (now - lastAskAt < GATE_IDLE_MS) continue;
    tidy(grants, now);
    setCurrentDetails(gateCurrentDetails(view()));
    // An idle gate ends (the next ask starts it again), unless an operator's controls are set.
    const idle = grants.waiting.length === 0 && Object.keys(grants.earmarks).length === 0;
    if (idle && controlsCleared(grants)) {
      await condition(allHandlersFinished);
      if (Date.now() - lastAskAt >= GATE_IDLE_MS) return;
    }
    // Kept (asks still waiting, or controls set): look again an idle period from now.
    lastAskAt = Date.now();
  }
}
