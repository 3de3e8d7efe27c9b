/**
 * The webhooks of one batch that need a signal, sent together: those that arrive within a short
 * gathering time of the first go in one signal, one history event for many jobs (under a fault
 * mix, many jobs end before their page of submits has answered, and each would cost a signal and
 * often a workflow task of its own). Every caller waits for the signal that carries its hint and
 * gets its outcome, so the gateway's HTTP answer still says whether the hint reached the batch.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export interface BatchHint {
  jobId: string;
  status: string;
  item: number;
  /** A pipeline's job: the stage it belongs to. */
  stage?: string;
}

export type SendBatchHints = (workflowId: string, hints: BatchHint[]) => Promise<void>;

/** How long the first hint of a group waits for others: a fraction of the service's webhook wait. */
export const BATCH_HINT_GATHER_MS = 250;
/** Hints in one signal at most (a signal's payload stays far below Temporal's limits). */
export const BATCH_HINTS_PER_SIGNAL = 500;

export function createBatchHintSender(
  send: SendBatchHints,
  options: { gatherMs?: number; maxHints?: number } = {},
): (workflowId: string, hint: BatchHint) => Promise<void> {
  const gatherMs = options.gatherMs ?? BATCH_HINT_GATHER_MS;
  const maxHints = options.maxHints ?? BATCH_HINTS_PER_SIGNAL;
  const open = new Map<string, { hints: BatchHint[]; sent: Promise<void> }>();

  function openGroup(workflowId: string) {
    const hints: BatchHint[] = [];
    const group = {
      hints,
      sent: sleep(gatherMs).then(() => {
        if (open.get(workflowId) === group) open.delete(workflowId);
        return send(workflowId, hints);
      }),
    };
    open.set(workflowId, group);
    return group;
  }

  return (workflowId, hint) => {
    let group = open.get(workflowId);
    if (!group || group.hints.length >= maxHints) group = openGroup(workflowId);
    group.hints.push(hint);
    return group.sent;
  };
}
