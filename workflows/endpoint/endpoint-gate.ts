/**
 * endpointGate: the holder of one endpoint's /run window for every workload on it (jobs, batches
 * of both modes, automations' and schedules' runs), in any number of worker processes. State the
 * Temporal server keeps, so that a worker that dies holds nothing: a grant is room in the window
 * now, sent within SEND_SLACK_MS or given up, and it leaves the window with time.
 *
 * A submit asks with an update from its activity (activities/send-grant.ts, update-with-start:
 * the first ask starts the gate). The handler waits until the gate's loop answers it: at once
 * while the window has room, else when room comes, highest priority and least-served fairness key
 * first (engine/endpoint-grants.ts), or with nothing after a window's wait. An idle gate ends; the
 * next ask starts it again.
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
  type GateView,
  gateControlsSchema,
  type SendGrant,
  sendAskSchema,
} from '../../contracts/endpoint-gate';
import {
  carriedGrants,
  type GrantsState,
  grantNow,
  initialGrants,
  joinKey,
  type WaitingAsk,
} from '../../engine/endpoint-grants';
import { askToSendUpdate, gateViewQuery, setGateControlsUpdate } from './endpoint-gate-definitions';

/** How long a gate with nothing in its window and no ask waits for one before it ends. */
const IDLE_MS = 5 * 60_000;

interface Carried {
  grants: GrantsState;
  runLimit: number | undefined;
}

function carriedOf(input: EndpointGateInput): Carried {
  const carried = input.carried as Partial<Carried> | undefined;
  return { grants: carried?.grants ?? initialGrants(), runLimit: carried?.runLimit };
}

/** No pause, limit or weight of an operator's in force. */
function controlsCleared(grants: GrantsState): boolean {
  return !grants.paused && grants.limitOverride === undefined && Object.keys(grants.weights).length === 0;
}

export async function endpointGate(input: EndpointGateInput): Promise<void> {
  const { grants, ...limits } = carriedOf(input);
  let runLimit = limits.runLimit;
  const waiting: WaitingAsk[] = [];
  const answers = new Map<string, SendGrant>();
  let asks = 0;
  let changed = false;

  const view = (): GateView => {
    const keys = new Set([...Object.keys(grants.granted), ...waiting.map((ask) => ask.fairnessKey)]);
    return {
      endpointId: input.endpointId,
      paused: grants.paused,
      runLimit: grants.limitOverride ?? runLimit,
      runLimitOverride: grants.limitOverride,
      inWindow: grants.log
        .filter(([at]) => at > Date.now() - ASK_WAIT_MS)
        .reduce((sum, [, count]) => sum + count, 0),
      keys: [...keys].sort().map((fairnessKey) => ({
        fairnessKey,
        weight: grants.weights[fairnessKey],
        waiting: waiting
          .filter((ask) => ask.fairnessKey === fairnessKey)
          .reduce((sum, ask) => sum + ask.count, 0),
        granted: grants.granted[fairnessKey] ?? 0,
      })),
      waitingByPriority: Object.fromEntries(
        [1, 2, 3, 4, 5]
          .map((priority) => [
            String(priority),
            waiting.filter((ask) => ask.priority === priority).reduce((sum, ask) => sum + ask.count, 0),
          ])
          .filter(([, count]) => count !== 0),
      ),
    };
  };

  setHandler(
    askToSendUpdate,
    async (raw) => {
      const ask = sendAskSchema.parse(raw);
      const id = `ask-${++asks}`;
      const now = Date.now();
      runLimit = ask.limit;
      joinKey(grants, ask.fairnessKey, waiting);
      waiting.push({
        id,
        count: ask.count,
        priority: ask.priority,
        fairnessKey: ask.fairnessKey,
        weight: ask.fairnessWeight,
        arrivedAt: now,
        giveUpAt: now + ASK_WAIT_MS,
      });
      changed = true;
      await condition(() => answers.has(id));
      const grant = answers.get(id) as SendGrant;
      answers.delete(id);
      return grant;
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
      changed = true;
      return view();
    },
    { validator: (raw) => void gateControlsSchema.parse(raw) },
  );
  setHandler(gateViewQuery, view);

  for (;;) {
    const now = Date.now();
    const limit = grants.limitOverride ?? runLimit;
    const decided =
      limit === undefined ? { answers: [], nextAt: undefined } : grantNow(grants, waiting, now, limit);
    for (const answer of decided.answers) {
      answers.set(answer.id, { count: answer.count, at: answer.at, sendBy: answer.sendBy });
    }
    changed = false;
    // Shown in the UI; costs no history event.
    setCurrentDetails(gateCurrentDetails(view()));
    if (waiting.length > 0) {
      await condition(() => changed, Math.max(1, (decided.nextAt ?? now + ASK_WAIT_MS) - now));
      continue;
    }
    if (workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      if (waiting.length === 0) {
        await continueAsNew<typeof endpointGate>({
          endpointId: input.endpointId,
          carried: { grants: carriedGrants(grants), runLimit } satisfies Carried,
        });
      }
      continue;
    }
    // An idle gate ends (the next ask starts it again), unless an operator's controls are set.
    if (!(await condition(() => changed, IDLE_MS)) && controlsCleared(grants)) {
      await condition(allHandlersFinished);
      if (waiting.length === 0 && !changed) return;
    }
  }
}
