// The user-facing facade: start, await, cancel and query the library's workflows.
export * from './endpoints';
export * from './jobs';
