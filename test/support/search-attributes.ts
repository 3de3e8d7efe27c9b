/**
 * The library's custom search attributes (contracts/search-attributes.ts) on the servers the tests
 * start, registered in one place: the dev servers take them as `--search-attribute` flags at every
 * start (dev-server-process.ts, and so the integration tier's shared server), and the Java
 * time-skipping server through its operator service when timeSkippingEnv connects to it.
 */
import { SearchAttributeType } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { searchAttributeKeys } from '../../contracts/search-attributes';

const { IndexedValueType } = temporal.api.enums.v1;
/** gRPC's ALREADY_EXISTS status code. */
const ALREADY_EXISTS = 6;

/** The CLI's name and the operator service's enum value of each search attribute type. */
const TYPES: Record<SearchAttributeType, { cli: string; indexed: temporal.api.enums.v1.IndexedValueType }> = {
  [SearchAttributeType.TEXT]: { cli: 'Text', indexed: IndexedValueType.INDEXED_VALUE_TYPE_TEXT },
  [SearchAttributeType.KEYWORD]: { cli: 'Keyword', indexed: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD },
  [SearchAttributeType.INT]: { cli: 'Int', indexed: IndexedValueType.INDEXED_VALUE_TYPE_INT },
  [SearchAttributeType.DOUBLE]: { cli: 'Double', indexed: IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE },
  [SearchAttributeType.BOOL]: { cli: 'Bool', indexed: IndexedValueType.INDEXED_VALUE_TYPE_BOOL },
  [SearchAttributeType.DATETIME]: { cli: 'Datetime', indexed: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME },
  [SearchAttributeType.KEYWORD_LIST]: {
    cli: 'KeywordList',
    indexed: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
  },
};

/** `temporal server start-dev` flags that register them (it accepts attributes that already exist). */
export function searchAttributeFlags(): string[] {
  return searchAttributeKeys.flatMap((key) => ['--search-attribute', `${key.name}=${TYPES[key.type].cli}`]);
}

/**
 * Registers them on a running server (the Java test server starts knowing none, and answers no
 * listing). One that exists already is an answer, not an error: a second call changes nothing.
 */
export async function registerSearchAttributes(env: TestWorkflowEnvironment): Promise<void> {
  try {
    await env.connection.operatorService.addSearchAttributes({
      namespace: env.namespace ?? 'default',
      searchAttributes: Object.fromEntries(
        searchAttributeKeys.map((key) => [key.name, TYPES[key.type].indexed]),
      ),
    });
  } catch (error) {
    if ((error as { code?: number }).code !== ALREADY_EXISTS) throw error;
  }
}
