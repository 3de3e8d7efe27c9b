/**
 * WORKER_AUTOMATIONS_MODULE's loader: the definitions a module exports (ES or CommonJS, by path
 * or file URL), each checked by defineAutomation; a module that cannot be found or loaded, or
 * exports none, an invalid one or two of one name is a ConfigError naming the variable.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../api/errors';
import { loadAutomationsModule } from '../../worker/automations-module';

const fixtures = path.resolve(__dirname, '../fixtures/automations');
const fixture = (name: string) => path.join(fixtures, name);

async function refusal(specifier: string): Promise<ConfigError> {
  const error = await loadAutomationsModule(specifier).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigError);
  const config = error as ConfigError;
  expect(config.variable).toBe('WORKER_AUTOMATIONS_MODULE');
  return config;
}

describe('loadAutomationsModule', () => {
  it('takes the definitions of an ES module, ignoring its other exports', async () => {
    const automations = await loadAutomationsModule(fixture('echo.mjs'));
    expect(automations.map((a) => a.name)).toEqual(['fixture-echo']);
    expect(typeof automations[0]?.run).toBe('function');
  });

  it('takes named exports and arrays, counting an object exported twice once', async () => {
    const automations = await loadAutomationsModule(pathToFileURL(fixture('several.mjs')).href);
    expect(automations.map((a) => a.name).sort()).toEqual(['first', 'second']);
    expect(automations.find((a) => a.name === 'first')).toMatchObject({ concurrency: 2 });
  });

  it("takes a CommonJS module's module.exports object, arrays in it included", async () => {
    const automations = await loadAutomationsModule(fixture('commonjs.cjs'));
    expect(automations.map((a) => a.name).sort()).toEqual(['alpha', 'beta']);
  });

  it('refuses a module that exports no definition', async () => {
    const error = await refusal(fixture('none.mjs'));
    expect(error.rule).toMatch(/exports no automation definition/);
  });

  it('refuses an invalid definition, naming the export, the field and the rule', async () => {
    const error = await refusal(fixture('invalid.mjs'));
    expect(error.rule).toMatch(/^export bad is not a valid automation: name: /);
  });

  it('refuses two definitions of one name', async () => {
    const error = await refusal(fixture('duplicate.mjs'));
    expect(error.rule).toBe('exports two automations named same: names must be unique');
  });

  it('refuses a module that is not there, and a package not installed, without repeating the value', async () => {
    for (const specifier of [fixture('missing.mjs'), 'durable-serverless-no-such-package']) {
      const error = await refusal(specifier);
      expect(error.rule).toMatch(/names no module found/);
      expect(error.message).not.toContain(specifier);
    }
  });

  it("refuses a module that throws while loading, with the module's own reason", async () => {
    const error = await refusal(fixture('throws.mjs'));
    expect(error.rule).toBe('the module failed to load (Error: broken on purpose)');
  });
});
