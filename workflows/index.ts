// Every workflow the worker registers. The worker bundles this file.
export { stackCheck } from './stack-check';
