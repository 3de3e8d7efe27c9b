/**
 * The path syntax of a pipeline stage's declarative `map` (contracts/pipeline-input.ts), in one
 * place: the input's schema checks it, engine/pipeline-map.ts evaluates it.
 *
 * A source path reads a value: `$`, then `.item` (the original item's request) or `.previous` (the
 * previous stage's result for this item: `{ output, jobId, stage }`), then any number of `.key`
 * (a field of an object) and `[n]` (element n, from 0, of an array). Keys are letters, digits,
 * `_` and `-`, starting with a letter or `_`. Examples: `$.item.input.lang`,
 * `$.previous.output.segments[0].text`.
 *
 * A target path says where the value goes in the next stage's job request: `input` or `policy`,
 * then any number of `.key`; objects on the way are made as needed. No indexes: a target never
 * builds an array by position.
 *
 * Bundled into workflow code: pure, no imports.
 */

/** A step of a path: a field of an object, or an element of an array. */
export type PathStep = { key: string } | { index: number };

/** What a source path reads from. */
export type SourceRoot = 'item' | 'previous';
/** The parts of the job request a target may set. */
export type TargetRoot = 'input' | 'policy';

export interface SourcePath {
  root: SourceRoot;
  steps: PathStep[];
}

export interface TargetPath {
  root: TargetRoot;
  keys: string[];
}

export type PathParse<T> = { ok: true; path: T } | { ok: false; rule: string };

export const MAX_MAP_PATH_LENGTH = 500;

const KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const STEP = String.raw`\.([A-Za-z_][A-Za-z0-9_-]*)|\[(0|[1-9][0-9]{0,8})\]`;
/** Keys that would reach an object's prototype when set: never a target. */
const UNSAFE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

const SOURCE_RULE =
  'must be a path such as $.item.input.text or $.previous.output.items[0] ' +
  '($ then .item or .previous, then .key and [n] steps)';

export function parseSourcePath(text: string): PathParse<SourcePath> {
  if (text.length > MAX_MAP_PATH_LENGTH)
    return { ok: false, rule: `must be at most ${MAX_MAP_PATH_LENGTH} characters` };
  if (!text.startsWith('$')) return { ok: false, rule: SOURCE_RULE };
  const steps: PathStep[] = [];
  // Sticky: each step must start where the last one ended.
  const step = new RegExp(STEP, 'y');
  step.lastIndex = 1;
  while (step.lastIndex < text.length) {
    const at = step.lastIndex;
    const match = step.exec(text);
    if (!match) return { ok: false, rule: `${SOURCE_RULE}; "${text.slice(at)}" is not a step` };
    steps.push(match[1] === undefined ? { index: Number(match[2]) } : { key: match[1] });
  }
  const [first, ...rest] = steps;
  if (!first || !('key' in first) || (first.key !== 'item' && first.key !== 'previous'))
    return { ok: false, rule: `${SOURCE_RULE}; it must start with $.item or $.previous` };
  return { ok: true, path: { root: first.key, steps: rest } };
}

export function parseTargetPath(text: string): PathParse<TargetPath> {
  const rule = 'must be input, policy, or a field of them such as input.text (keys joined by dots)';
  if (text.length > MAX_MAP_PATH_LENGTH)
    return { ok: false, rule: `must be at most ${MAX_MAP_PATH_LENGTH} characters` };
  const [root, ...keys] = text.split('.');
  if ((root !== 'input' && root !== 'policy') || !keys.every((key) => KEY.test(key)))
    return { ok: false, rule };
  const unsafe = keys.find((key) => UNSAFE_KEYS.has(key));
  if (unsafe !== undefined) return { ok: false, rule: `must not set "${unsafe}"` };
  return { ok: true, path: { root, keys } };
}

/** A source path written back (its first `count` steps): how errors name the part that is missing. */
export function formatSourcePath(path: SourcePath, count = path.steps.length): string {
  return `$.${path.root}${path.steps
    .slice(0, count)
    .map((step) => ('key' in step ? `.${step.key}` : `[${step.index}]`))
    .join('')}`;
}

/**
 * Whether two targets overlap (one is the other or lies inside it): such a map would set a value
 * and then write into it or over it, so its result would depend on the order of its fields.
 */
export function targetsOverlap(a: TargetPath, b: TargetPath): boolean {
  if (a.root !== b.root) return false;
  const shorter = Math.min(a.keys.length, b.keys.length);
  for (let at = 0; at < shorter; at++) if (a.keys[at] !== b.keys[at]) return false;
  return true;
}
