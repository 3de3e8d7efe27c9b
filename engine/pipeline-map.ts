/**
 * A pipeline stage's declarative `map` evaluated: (the original item, the previous stage's
 * result) -> the stage's job request, field by field (the path syntax is
 * contracts/pipeline-map-paths.ts). Pure and deterministic, so it runs wherever the previous
 * output is (the activity that submits the stage reads it from the store: outputs never enter
 * history) and gives the same request on every retry. A failure names the stage, the target, the
 * source path and the part of it that is missing; the item then ends at this stage.
 */
import { type StageMap, sourcePathOf } from '../contracts/pipeline-input';
import {
  formatSourcePath,
  parseSourcePath,
  parseTargetPath,
  type SourcePath,
} from '../contracts/pipeline-map-paths';

/** What a map reads: `$.item` and `$.previous` (absent before the first stage). */
export interface MapSources {
  /** The original item's request (a piece of a split item: its origin's). */
  item: unknown;
  /** The previous stage's result for this item: `{ output, jobId, stage }`. */
  previous?: unknown;
}

/** The job request a map makes (the submit checks it as any request). */
export interface MappedRequest {
  input: Record<string, unknown>;
  policy?: Record<string, unknown>;
}

export interface MapFailure {
  stage: string;
  /** The target path of the field that could not be made (`input.text`). */
  target: string;
  /** Its source path as written (absent for a constant). */
  source?: string;
  /** The part of the source path that is not there (`$.previous.output.transcript`). */
  missing?: string;
  rule: string;
}

export type MapResult = { ok: true; request: MappedRequest } | { ok: false; failure: MapFailure };

type Read = { found: true; value: unknown } | { found: false; missing: string; rule: string };

/**
 * The stage's request from its map: each target set from its source (its path's value, the
 * default when the path leads nowhere, or the constant). Values are the sources' own, not copies:
 * nothing here writes into them.
 */
export function evaluateMap(stage: string, map: StageMap, sources: MapSources): MapResult {
  const request: Record<string, unknown> = {};
  /** The objects this evaluation made: the only ones it may write into. */
  const made = new Set<object>([request]);
  for (const [target, source] of Object.entries(map)) {
    const fail = (rule: string, extra: Partial<MapFailure> = {}): MapResult => ({
      ok: false,
      failure: { stage, target, ...extra, rule },
    });
    const to = parseTargetPath(target);
    if (!to.ok) return fail(to.rule);
    let value: unknown;
    const text = sourcePathOf(source);
    if (text === undefined) value = (source as { value: unknown }).value;
    else {
      const from = parseSourcePath(text);
      if (!from.ok) return fail(from.rule, { source: text });
      const read = readPath(sources, from.path);
      if (read.found) value = read.value;
      else if (typeof source === 'object' && 'default' in source) value = source.default;
      else return fail(read.rule, { source: text, missing: read.missing });
    }
    const keys = [to.path.root, ...to.path.keys];
    if (keys.length === 1 && !isPlainObject(value))
      return fail(`${target} must be a JSON object, not ${kindOf(value)}`, sourceOf(source));
    let into = request;
    for (const key of keys.slice(0, -1)) {
      const next = Object.hasOwn(into, key) ? into[key] : undefined;
      if (next === undefined) {
        const fresh: Record<string, unknown> = {};
        made.add(fresh);
        into[key] = fresh;
        into = fresh;
      } else if (isPlainObject(next) && made.has(next)) into = next;
      else return fail(`overlaps another target that set ${key}`, sourceOf(source));
    }
    const last = keys[keys.length - 1] as string;
    if (Object.hasOwn(into, last)) return fail('overlaps another target', sourceOf(source));
    into[last] = value;
  }
  if (!isPlainObject(request.input))
    return { ok: false, failure: { stage, target: 'input', rule: 'the map sets no input' } };
  return { ok: true, request: request as unknown as MappedRequest };
}

/** A failure in words, for the item's result line: stage, target, source and what is missing. */
export function mapFailureText(failure: MapFailure): string {
  const from = failure.source === undefined ? '' : ` from ${failure.source}`;
  return `stage "${failure.stage}": ${failure.target}${from}: ${failure.rule}`;
}

/** The value a source path leads to, or the first part of it that is not there. */
export function readPath(sources: MapSources, path: SourcePath): Read {
  let value: unknown = path.root === 'item' ? sources.item : sources.previous;
  if (value === undefined) {
    const why = path.root === 'previous' ? ' (the first stage has no previous result)' : '';
    return { found: false, missing: `$.${path.root}`, rule: `$.${path.root} is missing${why}` };
  }
  for (const [at, step] of path.steps.entries()) {
    const here = formatSourcePath(path, at);
    const missing = formatSourcePath(path, at + 1);
    if ('key' in step) {
      if (!isPlainObject(value))
        return { found: false, missing, rule: `${here} is ${kindOf(value)}, not an object` };
      const next = Object.hasOwn(value, step.key) ? value[step.key] : undefined;
      if (next === undefined) return { found: false, missing, rule: `${here} has no field "${step.key}"` };
      value = next;
    } else {
      if (!Array.isArray(value))
        return { found: false, missing, rule: `${here} is ${kindOf(value)}, not an array` };
      if (step.index >= value.length)
        return { found: false, missing, rule: `${here} has ${value.length} elements: no [${step.index}]` };
      value = value[step.index];
    }
  }
  return { found: true, value };
}

function sourceOf(source: StageMap[string]): { source?: string } {
  const path = sourcePathOf(source);
  return path === undefined ? {} : { source: path };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}
