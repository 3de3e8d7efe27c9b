/**
 * A pipeline's activities on a real local store: a stage's submit makes each request in the
 * activity (the map on the item and the previous stage's line; a piece whose map cannot be made
 * fails with the target, the path and what is missing, and is not sent), a transform splits,
 * passes or drops pieces and writes the parts' inputs where the next submit reads them, and an
 * unknown transform fails its pieces naming the ones registered.
 */
import { describe, expect, it } from 'vitest';
import { createBatchActivities } from '../../activities/batch';
import { definePipelineTransform } from '../../activities/pipeline';
import type { StagePageSource } from '../../contracts/pipeline-types';
import { stageKeyOf, stageLineKey } from '../../contracts/pipeline-types';
import { createLocalBatchStore } from '../../stores/batch-store';
import { createLocalResultStore } from '../../stores/result-store';
import { tempDir } from '../support/temp-dir';
import { activityEnv, stubClient } from './job-stub';

const KEY = 'pipelines/p-1';
const MANIFEST = `${KEY}/items.jsonl`;

async function setup() {
  const dir = tempDir('pipeline-activities-');
  const store = createLocalBatchStore(dir);
  const stub = stubClient();
  stub.answer('run', { id: 'job-1', status: 'IN_QUEUE' });
  const scenes = definePipelineTransform({
    name: 'scenes',
    run: ({ previous }) =>
      Array.from({ length: (previous.output as { scenes: number }).scenes }, (_, scene) => ({
        input: { scene },
      })),
  });
  const activities = createBatchActivities({
    client: stub.client,
    batchStore: store,
    resultStore: createLocalResultStore(dir),
    transforms: [scenes],
  });
  await store.writeLines(MANIFEST, [
    JSON.stringify({ input: { lang: 'fr' } }),
    JSON.stringify({ input: {} }),
    JSON.stringify({ input: { lang: 'de' } }),
  ]);
  // transcribe's lines for pieces 0 (item 0), 1 (item 1) and 2 (item 2).
  const transcribe = stageKeyOf(KEY, 'transcribe');
  await store.writeLines(stageLineKey(transcribe, 0), [
    JSON.stringify({ index: 0, jobId: 'j-0', status: 'COMPLETED', output: { text: 'bonjour', scenes: 3 } }),
  ]);
  await store.writeLines(stageLineKey(transcribe, 1), [
    JSON.stringify({ index: 1, jobId: 'j-1', status: 'COMPLETED', output: { scenes: 0 } }),
  ]);
  await store.writeLines(stageLineKey(transcribe, 2), [
    JSON.stringify({ index: 2, jobId: 'j-2', status: 'COMPLETED', output: { text: 'hallo', scenes: 1 } }),
  ]);
  return { store, stub, activities, env: activityEnv() };
}

describe('pipeline activities', () => {
  it("makes a stage's requests by its map in the submit; a map that cannot be made fails its piece unsent", async () => {
    const { stub, activities, env } = await setup();
    const pipeline: StagePageSource = {
      pipelineKey: KEY,
      manifestKey: MANIFEST,
      stage: 'translate',
      previous: 'transcribe',
      map: {
        'input.text': '$.previous.output.text',
        'input.lang': '$.item.input.lang',
        'input.from': '$.previous.stage',
      },
      pieces: [[0], [1]],
    };
    const { results } = await env.call(activities.submitBatchPage, {
      endpointId: 'ep-translate',
      manifestKey: MANIFEST,
      indexes: [0, 1],
      webhook: false,
      pipeline,
    });
    expect(stub.named('run').map(([, request]) => request)).toEqual([
      { input: { text: 'bonjour', lang: 'fr', from: 'transcribe' } },
    ]);
    expect(results).toContainEqual({ i: 0, id: 'job-1' });
    const failed = results.find((result) => result.i === 1);
    expect(failed).toMatchObject({ rejected: { type: 'BadRequest', retryable: false } });
    expect((failed as { rejected: { message: string } }).rejected.message).toBe(
      'stage "translate": input.text from $.previous.output.text: $.previous.output has no field "text"',
    );
  });

  it('splits, passes and drops pieces by a transform; the next submit reads the inputs it wrote', async () => {
    const { stub, activities, env } = await setup();
    const call = {
      pipelineKey: KEY,
      manifestKey: MANIFEST,
      stage: 'speak',
      previous: 'transcribe',
      transform: { name: 'scenes' },
      pieces: [
        { seq: 0, origin: 0 },
        { seq: 1, origin: 1 },
        { seq: 2, origin: 2, part: [4] },
      ],
    };
    const { answers } = await env.call(activities.transformPipelinePieces, call);
    expect(answers).toEqual([{ parts: 3 }, { parts: 0 }, { parts: 1 }]);
    // Item 0's three parts are pieces [0], [1], [2]; item 2's one part keeps its piece as it is.
    await env.call(activities.submitBatchPage, {
      endpointId: 'ep-speak',
      manifestKey: MANIFEST,
      indexes: [7, 8, 9, 2],
      webhook: false,
      pipeline: {
        pipelineKey: KEY,
        manifestKey: MANIFEST,
        stage: 'speak',
        previous: 'transcribe',
        transformed: true,
        pieces: [
          [0, 0],
          [0, 1],
          [0, 2],
          [2, 4],
        ],
      },
    });
    expect(stub.named('run').map(([, request]) => request)).toEqual([
      { input: { scene: 0 } },
      { input: { scene: 1 } },
      { input: { scene: 2 } },
      { input: { scene: 0 } },
    ]);

    const unknown = await env.call(activities.transformPipelinePieces, {
      ...call,
      transform: { name: 'crop' },
    });
    expect(unknown.answers).toEqual(
      call.pieces.map(() => ({
        failed: 'no transform named "crop" is registered on this worker (registered: scenes)',
      })),
    );
  });
});
