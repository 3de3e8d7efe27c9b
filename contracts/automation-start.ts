/**
 * What an automation's workflow carries from its start, whoever starts it (sendEvent, the gateway
 * through sendEvent, or the emitEvent activity of a job, batch or run that ends): the static summary
 * and details the Temporal UI shows, and the name and key as search attributes, so list queries
 * find every automation alike. Pure: the client and the activities spread the same options.
 */
import type { SearchAttributePair } from '@temporalio/common';
import { code, markdownTable } from './progress-markdown';
import { automationKeyKey, automationNameKey } from './search-attributes';

/** The two texts a workflow start (or a schedule's action) carries for the UI. */
export interface WorkflowDescription {
  staticSummary: string;
  staticDetails: string;
}

/**
 * An automation (one per name and key). Its flow controls are the worker's definition, which the
 * sender does not hold: the automation shows them in its current details once it has read them.
 */
export function describeAutomation(name: string, key: string): WorkflowDescription {
  return {
    staticSummary: `Automation ${name} for key ${key}`,
    staticDetails: [
      '**Automation**',
      '',
      markdownTable([
        ['Name', code(name)],
        ['Key', code(key)],
        ['Flow controls', "the worker's definition (shown in the current details)"],
      ]),
    ].join('\n'),
  };
}

/** The start options of an automation's workflow besides its id, queue, args and signal. */
export function automationStartOptions(
  name: string,
  key: string,
): WorkflowDescription & { typedSearchAttributes: SearchAttributePair[] } {
  return {
    ...describeAutomation(name, key),
    typedSearchAttributes: [
      { key: automationNameKey, value: name },
      { key: automationKeyKey, value: key },
    ],
  };
}
