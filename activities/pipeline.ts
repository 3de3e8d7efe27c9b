/**
 * A pipeline's own activities, beside the batch's (each stage's window submits and watches with
 * those): a transform registered on the worker by name, run on one piece, and the writing of the
 * pipeline's result lines. Neither puts an output into history: the transform reads the item and
 * the previous stage's result from the store and writes the inputs it makes there; the workflow
 * learns how many parts it made.
 */
import { ValidationError } from '../api/errors';
import type { JobRequestInput } from '../api/schemas/job';
import { MAX_SPLIT_PARTS } from '../contracts/pipeline-input';
import {
  type PipelineResultLine,
  type PipelineTransform,
  pipelineResultsKey,
  stageInputKey,
  stageKeyOf,
  type TransformAnswer,
  type TransformCall,
} from '../contracts/pipeline-types';
import { requestOf } from './batch-items';
import type { BatchShared } from './batch-shared';
import { previousResult } from './pipeline-requests';

export type { PipelineTransform, TransformPiece } from '../contracts/pipeline-types';

/** Checks a transform's name and shape (the name is what a stage's `transform.name` says). */
export function definePipelineTransform(transform: PipelineTransform): PipelineTransform {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(transform.name))
    throw new ValidationError(
      'name',
      'must be 1 to 64 letters, digits, . _ - (starting with a letter or digit)',
    );
  if (typeof transform.run !== 'function') throw new ValidationError('run', 'must be a function');
  return transform;
}

export function pipelineActivities(shared: BatchShared, transforms: readonly PipelineTransform[] = []) {
  const byName = new Map(transforms.map((transform) => [transform.name, transform]));
  const { store } = shared;
  return {
    /** Runs the stage's transform on each piece; writes each part's request for its stage. */
    async transformPipelinePieces(call: TransformCall): Promise<{ answers: TransformAnswer[] }> {
      const transform = byName.get(call.transform.name);
      if (!transform) {
        const known = [...byName.keys()].join(', ') || 'none';
        const failed = `no transform named "${call.transform.name}" is registered on this worker (registered: ${known})`;
        return { answers: call.pieces.map(() => ({ failed })) };
      }
      const items = await store.readLines(
        call.manifestKey,
        call.pieces.map((piece) => piece.origin),
      );
      const stageKey = stageKeyOf(call.pipelineKey, call.stage);
      const answers = await Promise.all(
        call.pieces.map(async (piece, k): Promise<TransformAnswer> => {
          const previous = await previousResult(shared, call.pipelineKey, call.previous, piece.seq);
          if ('failed' in previous) return previous;
          let parts: JobRequestInput[];
          try {
            parts = await transform.run({
              item: JSON.parse(items[k] as string) as JobRequestInput,
              previous,
              ...(call.transform.options === undefined ? {} : { options: call.transform.options }),
              origin: piece.origin,
              ...(piece.part ? { part: piece.part } : {}),
            });
            if (!Array.isArray(parts)) throw new Error('it must return an array of job requests');
            if (parts.length > MAX_SPLIT_PARTS)
              throw new Error(`it made ${parts.length} parts; it may make at most ${MAX_SPLIT_PARTS}`);
            parts.forEach((request, part) => {
              requestOf(JSON.stringify(request), part);
            });
          } catch (error) {
            return { failed: `transform "${transform.name}": ${(error as Error).message}` };
          }
          // One part keeps the piece as it is; several become pieces one part longer.
          await Promise.all(
            parts.map((request, part) =>
              store.writeLines(
                stageInputKey(
                  stageKey,
                  piece.origin,
                  parts.length === 1 ? piece.part : [...(piece.part ?? []), part],
                ),
                [JSON.stringify(request)],
              ),
            ),
          );
          return { parts: parts.length };
        }),
      );
      return { answers };
    },

    /** Writes result lines as one part (named by the caller: a retry replaces it). */
    async recordPipelineLines(input: { pipelineKey: string; part: string; lines: PipelineResultLine[] }) {
      await store.writeLines(
        `${pipelineResultsKey(input.pipelineKey)}/${input.part}.jsonl`,
        input.lines.map((line) => JSON.stringify(line)),
      );
    },
  };
}
