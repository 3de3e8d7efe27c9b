/**
 * The automation workflow with stand-ins for its children: a "job" or "batch" that ends at once,
 * fails (input.fail; with input.cost its failure's details carry the cost, as a real job's or
 * batch's do) or waits for the `release` signal (input.hold).
 */
import { ApplicationFailure, condition, defineSignal, setHandler } from '@temporalio/workflow';

export { automationWorkflow } from '../../workflows/automation/automation';

export const releaseSignal = defineSignal('release');

interface FakeInput {
  request?: { input?: { hold?: boolean; fail?: boolean; cost?: number } };
  items?: unknown;
}

/** `cost`: the run's estimated cost, in its result as a job's or a batch's summary carries it. */
async function fakeRun(input: FakeInput): Promise<{ ok: true; cost?: { amount: number; items: number } }> {
  let released = false;
  setHandler(releaseSignal, () => {
    released = true;
  });
  if (input.request?.input?.hold) await condition(() => released);
  const cost = input.request?.input?.cost;
  if (input.request?.input?.fail)
    throw ApplicationFailure.create({
      message: 'the fake job failed',
      type: 'JobFailed',
      nonRetryable: true,
      details: cost === undefined ? [] : [{ cost: { amount: cost, items: 1 } }],
    });
  return { ok: true, ...(cost === undefined ? {} : { cost: { amount: cost, items: 1 } }) };
}

export const serverlessJob = fakeRun;
export const serverlessBatch = fakeRun;
