// The user-facing facade: connect to Temporal, then start, await, cancel and query the library's
// workflows.

export * from './automations';
export * from './batches';
export * from './connection';
export * from './costs';
export * from './endpoints';
export * from './event-signature';
export * from './jobs';
export * from './schedules';
export * from './visibility-queries';
export * from './watch';
export * from './workflow-result';
