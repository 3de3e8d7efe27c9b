/**
 * The modules the worker loads once and shares between every workflow it runs (the bundler's
 * `preloadModules`, see workflow-bundle-options.ts): zod and every schema the workflows check
 * their inputs with. Without them shared, each workflow the worker caches evaluated zod and
 * every schema again: about 1.8 MB of its 2 MB of module state.
 *
 * Sharing is safe here because nothing in these modules holds state of one workflow: they are
 * constants, pure functions and schemas. The SDK deep-freezes what shared modules export, so
 * that no workflow can leak state into another through them. A zod schema, though, fills some
 * fields the first time it is used (a parse method, a computed shape); frozen, its first parse
 * would throw. Each namespace below is frozen here, shallowly: the SDK's deep freeze stops at an
 * object already frozen, so the exports cannot be replaced while the schemas behind them stay
 * able to fill their lazy fields. zod's own modules are deep-frozen by the SDK and work so.
 *
 * This module is only ever loaded by the workflow bundle: nothing imports it.
 */
import * as endpointSchemas from '../../api/schemas/endpoint';
import * as jobSchemas from '../../api/schemas/job';
import * as pathSegment from '../../api/schemas/path-segment';
import * as activitySummaries from '../../contracts/activity-summaries';
import * as automationInput from '../../contracts/automation-input';
import * as automationRunCost from '../../contracts/automation-run-cost';
import * as batchInput from '../../contracts/batch-input';
import * as bulkAction from '../../contracts/bulk-action';
import * as cost from '../../contracts/cost';
import * as currentDetails from '../../contracts/current-details';
import * as endpointGate from '../../contracts/endpoint-gate';
import * as endpointInput from '../../contracts/endpoint-input';
import * as failures from '../../contracts/failures';
import * as inputRules from '../../contracts/input-rules';
import * as jobInput from '../../contracts/job-input';
import * as jobSnapshot from '../../contracts/job-snapshot';
import * as jobTypes from '../../contracts/job-types';
import * as jobWaitPolicy from '../../contracts/job-wait-policy';
import * as lookLog from '../../contracts/look-log';
import * as pipelineInput from '../../contracts/pipeline-input';
import * as pipelineMapPaths from '../../contracts/pipeline-map-paths';
import * as pipelineTypes from '../../contracts/pipeline-types';
import * as progressMarkdown from '../../contracts/progress-markdown';
import * as route from '../../contracts/route';
import * as searchAttributes from '../../contracts/search-attributes';
import * as shortTag from '../../contracts/short-tag';
import * as signalNames from '../../contracts/signal-names';
import * as submitBeat from '../../contracts/submit-beat';
import * as submitLease from '../../contracts/submit-lease';
import * as taskPriority from '../../contracts/task-priority';

for (const namespace of [
  endpointSchemas,
  jobSchemas,
  pathSegment,
  activitySummaries,
  automationInput,
  automationRunCost,
  batchInput,
  bulkAction,
  cost,
  currentDetails,
  endpointGate,
  endpointInput,
  failures,
  inputRules,
  jobInput,
  jobSnapshot,
  jobTypes,
  jobWaitPolicy,
  lookLog,
  pipelineInput,
  pipelineMapPaths,
  pipelineTypes,
  progressMarkdown,
  route,
  searchAttributes,
  shortTag,
  signalNames,
  submitBeat,
  submitLease,
  taskPriority,
]) {
  Object.freeze(namespace);
}
