// Every activity factory the worker registers.
export { createStackCheckActivities } from './stack-check';
