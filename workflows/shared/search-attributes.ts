/**
 * The search attribute keys, for the workflows and the client (which may import names from
 * workflows/): defined in contracts/search-attributes.ts, where the activities read them too.
 */
export * from '../../contracts/search-attributes';
