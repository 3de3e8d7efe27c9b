/**
 * What the Temporal UI reads of a running workflow: its current details, answered by the SDK's
 * built-in metadata query (the same query `temporal workflow metadata` and the UI send), and the
 * summaries on its activities and timers, from the user metadata of their history events.
 */
import type { WorkflowHandle } from '@temporalio/client';

const METADATA_QUERY = '__temporal_workflow_metadata';

/** The workflow's current details as it last set them ('' before it set any). */
export async function currentDetails(handle: WorkflowHandle): Promise<string> {
  const metadata = await handle.query<{ currentDetails?: string | null }>(METADATA_QUERY);
  return metadata.currentDetails ?? '';
}

type MetadataPayload = { data?: Uint8Array | null } | null | undefined;
type HistoryEvent = {
  userMetadata?: { summary?: MetadataPayload } | null;
  activityTaskScheduledEventAttributes?: { activityType?: { name?: string | null } | null } | null;
  timerStartedEventAttributes?: unknown;
};

function text(payload: MetadataPayload): string | undefined {
  if (!payload?.data) return undefined;
  return JSON.parse(Buffer.from(payload.data).toString('utf8')) as string;
}

/** The summaries of the activities a history scheduled, with each one's type, in order. */
export function activitySummaries(history: {
  events?: HistoryEvent[] | null;
}): Array<[string, string | undefined]> {
  return (history.events ?? []).flatMap((event) => {
    const name = event.activityTaskScheduledEventAttributes?.activityType?.name;
    return name ? [[name, text(event.userMetadata?.summary)] as [string, string | undefined]] : [];
  });
}

/** The summaries of the timers a history started, in order. */
export function timerSummaries(history: { events?: HistoryEvent[] | null }): Array<string | undefined> {
  return (history.events ?? []).flatMap((event) =>
    event.timerStartedEventAttributes ? [text(event.userMetadata?.summary)] : [],
  );
}
