/**
 * The automations of the packaged worker (main.ts, the docker image, the
 * `durable-serverless-worker` bin): WORKER_AUTOMATIONS_MODULE names a module of the deployment's
 * own, imported here, whose exports are automation definitions. Without it such a worker
 * registers none, and every event fails its automation with AutomationNotRegistered.
 *
 * Errors are ConfigError naming the variable, so main.ts stops with exit code 2 as for any other
 * bad setting. The module's path is not repeated (config.ts's rule); the module's own failure is.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type AutomationDefinition, defineAutomation } from '../activities/automation';
import { ConfigError, ValidationError } from '../api/errors';
import { type EventSource, isEventSource } from './event-sources';

export const AUTOMATIONS_MODULE_VARIABLE = 'WORKER_AUTOMATIONS_MODULE';

const fail = (rule: string) => new ConfigError(AUTOMATIONS_MODULE_VARIABLE, rule);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Shaped like a definition (a `name` and a `run`): checked by defineAutomation, never skipped. */
const looksLikeDefinition = (value: unknown): value is AutomationDefinition =>
  isObject(value) && 'name' in value && 'run' in value;

/**
 * Where `import()` finds the module: paths (config.ts made relative ones absolute) as file URLs;
 * a package from the working directory, where the deployment installed it, else from this
 * library's own place (an ESM-only package has no `require` entry to resolve).
 */
function importTarget(specifier: string, cwd: string): string {
  if (specifier.startsWith('file:')) return specifier;
  if (path.isAbsolute(specifier)) return pathToFileURL(specifier).href;
  try {
    return pathToFileURL(createRequire(path.join(cwd, 'noop.js')).resolve(specifier)).href;
  } catch {
    return specifier;
  }
}

/**
 * An export's definitions: a definition, an array holding one (then every item must be one), or
 * (CommonJS) an object of them. Anything else (a helper, a constant) is the module's own business.
 */
function definitionsIn(name: string, value: unknown, depth = 0): Array<[string, unknown]> {
  if (looksLikeDefinition(value)) return [[name, value]];
  if (Array.isArray(value))
    return value.some(looksLikeDefinition) ? value.map((item, k) => [`${name}.${k}`, item]) : [];
  // `module.exports = { a, b }` reaches import() as the default export: look one level in.
  if (depth === 0 && name === 'default' && isObject(value))
    return Object.entries(value).flatMap(([key, inner]) => definitionsIn(key, inner, 1));
  return [];
}

/**
 * The definitions the module exports, each checked by defineAutomation. A module that fails to
 * load, exports none, exports an invalid one or two of the same name is a ConfigError.
 */
export async function loadAutomationsModule(
  specifier: string,
  cwd: string = process.cwd(),
): Promise<AutomationDefinition[]> {
  return (await loadAutomationsModuleExports(specifier, cwd)).automations;
}

/** An export's event sources: one (defineEventSource), or an array of them. */
function sourcesIn(value: unknown): EventSource[] {
  if (isEventSource(value)) return [value];
  if (Array.isArray(value) && value.length > 0 && value.every(isEventSource)) return value;
  return [];
}

/**
 * The module's automation definitions and its event sources (defineEventSource results, the
 * gateway's: worker/event-sources.ts). The rules of loadAutomationsModule hold; two sources of one
 * name are a ConfigError too.
 */
export async function loadAutomationsModuleExports(
  specifier: string,
  cwd: string = process.cwd(),
): Promise<{ automations: AutomationDefinition[]; sources: EventSource[] }> {
  let exported: Record<string, unknown>;
  try {
    exported = (await import(importTarget(specifier, cwd))) as Record<string, unknown>;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (
      code === 'ERR_MODULE_NOT_FOUND' ||
      code === 'MODULE_NOT_FOUND' ||
      code === 'ERR_UNSUPPORTED_DIR_IMPORT'
    )
      throw fail(
        'names no module found: give a file (a relative path starts with ./ and is read from the working directory) or a package installed there',
      );
    const reason = error instanceof Error ? `${error.name}: ${error.message.split('\n')[0]}` : String(error);
    throw fail(`the module failed to load (${reason})`);
  }

  const seen = new Set<unknown>();
  const byName = new Map<string, AutomationDefinition>();
  for (const [exportName, value] of Object.entries(exported)) {
    for (const [where, candidate] of definitionsIn(exportName, value)) {
      // The same object under two exports (CommonJS names and default, or re-exports) counts once.
      if (seen.has(candidate)) continue;
      seen.add(candidate);
      let definition: AutomationDefinition;
      try {
        definition = defineAutomation(candidate as AutomationDefinition);
      } catch (error) {
        if (error instanceof ValidationError)
          throw fail(`export ${where} is not a valid automation: ${error.field}: ${error.rule}`);
        throw fail(
          `export ${where} is not a valid automation: must be a definition object (defineAutomation)`,
        );
      }
      if (byName.has(definition.name))
        throw fail(`exports two automations named ${definition.name}: names must be unique`);
      byName.set(definition.name, definition);
    }
  }
  const sources = new Map<string, EventSource>();
  for (const value of Object.values(exported)) {
    const inDefault = isObject(value) && !isEventSource(value) ? Object.values(value) : [];
    for (const source of [...sourcesIn(value), ...inDefault.flatMap(sourcesIn)]) {
      if (sources.get(source.name) === source) continue;
      if (sources.has(source.name))
        throw fail(`exports two event sources named ${source.name}: names must be unique`);
      sources.set(source.name, source);
    }
  }
  if (byName.size === 0)
    throw fail(
      'the module exports no automation definition: export defineAutomation({ name, run, ... }) results, or an array of them',
    );
  return { automations: [...byName.values()], sources: [...sources.values()] };
}
