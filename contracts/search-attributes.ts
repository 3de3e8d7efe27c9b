/**
 * The custom search attributes this library writes, defined once (in contracts/, so workflows,
 * activities and the client name the same keys). The test harness registers them
 * on the dev server; a production namespace needs them created once (see the README).
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** The endpoint a job runs on, so `ServerlessEndpointId = "..."` finds every job of an endpoint. */
export const endpointIdKey = defineSearchAttributeKey('ServerlessEndpointId', SearchAttributeType.KEYWORD);
/** Every remote job id the workflow has owned (a fresh submission after expiry adds one). */
export const jobIdKey = defineSearchAttributeKey('ServerlessJobId', SearchAttributeType.KEYWORD_LIST);
/** The remote job's last known status (IN_QUEUE, IN_PROGRESS, COMPLETED, ...). */
export const jobStatusKey = defineSearchAttributeKey('ServerlessJobStatus', SearchAttributeType.KEYWORD);

/** An automation's name and key (set when the first event starts it), to list automations by either. */
export const automationNameKey = defineSearchAttributeKey(
  'ServerlessAutomationName',
  SearchAttributeType.KEYWORD,
);
export const automationKeyKey = defineSearchAttributeKey(
  'ServerlessAutomationKey',
  SearchAttributeType.KEYWORD,
);

/** Your tags of a run (the `tags` option of every start), to select runs by them: `ServerlessTags = "nightly"`. */
export const tagsKey = defineSearchAttributeKey('ServerlessTags', SearchAttributeType.KEYWORD_LIST);

export const searchAttributeKeys = [
  endpointIdKey,
  jobIdKey,
  jobStatusKey,
  automationNameKey,
  automationKeyKey,
  tagsKey,
];
