import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Emulator } from '../../emulator';
import { graphqlApi, http, jobsApi, KEY, startTestEmulator } from './helpers';

// The GraphQL interface: a real schema executed by graphql-js. saveEndpoint creates and updates,
// myself lists, deleteEndpoint follows the 0..0 rule, and strings are strings: an injection attempt
// either fails to parse or arrives literally.

let emulator: Emulator;
let gql: ReturnType<typeof graphqlApi>;

const FIELDS =
  'id name templateId gpuIds type idleTimeout locations flashBootType scalerType scalerValue workersMin workersMax networkVolumeId';

const create = async (args: string, selection = FIELDS) => {
  const result = await gql(`mutation { saveEndpoint(input: { ${args} }) { ${selection} } }`);
  return result;
};

beforeAll(async () => {
  emulator = await startTestEmulator({ timeScale: 1e-6 });
  gql = graphqlApi(emulator);
});
afterAll(() => emulator.close());
beforeEach(async () => {
  emulator.control.reset();
  for (const endpoint of emulator.control.endpoints()) {
    emulator.control.updateEndpoint(endpoint.id, { workersMin: 0, workersMax: 0 });
    await gql(`mutation { deleteEndpoint(id: "${endpoint.id}") }`);
  }
});

describe('saveEndpoint: create', () => {
  it('needs gpuIds, name and templateId; type defaults to QB; the other fields take documented defaults', async () => {
    const result = await create('name: "minimal", templateId: "echo", gpuIds: "AMPERE_16"');
    expect(result.status).toBe(200);
    expect(result.body.errors).toBeUndefined();
    expect(result.body.data.saveEndpoint).toEqual({
      id: expect.stringMatching(/^[a-z0-9]{14}$/),
      name: 'minimal',
      templateId: 'echo',
      gpuIds: 'AMPERE_16',
      type: 'QB',
      idleTimeout: 5,
      locations: null,
      flashBootType: null,
      scalerType: 'QUEUE_DELAY',
      scalerValue: 4,
      workersMin: 0,
      workersMax: 3,
      networkVolumeId: null,
    });
    // The new endpoint serves jobs at once.
    const id = result.body.data.saveEndpoint.id;
    expect((await jobsApi(emulator, id).health()).status).toBe(200);
  });

  it('takes every field, with flashBootType written as an enum without quotes', async () => {
    emulator.control.createNetworkVolume(KEY, 'volume0001');
    const result = await create(
      'name: "full", templateId: "tpl", gpuIds: "ADA_80_PRO", type: "QB", idleTimeout: 30, locations: "US,CZ", flashBootType: FLASHBOOT, scalerType: "REQUEST_COUNT", scalerValue: 2, workersMin: 0, workersMax: 5, networkVolumeId: "volume0001"',
    );
    expect(result.body.data.saveEndpoint).toMatchObject({
      gpuIds: 'ADA_80_PRO',
      idleTimeout: 30,
      locations: 'US,CZ',
      flashBootType: 'FLASHBOOT',
      scalerType: 'REQUEST_COUNT',
      scalerValue: 2,
      workersMax: 5,
      networkVolumeId: 'volume0001',
    });
  });

  for (const missing of ['gpuIds', 'name', 'templateId']) {
    it(`fails validation (400) without ${missing}, creating nothing`, async () => {
      const args = ['name: "x"', 'templateId: "echo"', 'gpuIds: "AMPERE_16"'].filter(
        (a) => !a.startsWith(missing),
      );
      const result = await create(args.join(', '));
      expect(result.status).toBe(400);
      expect(result.body.errors[0].message).toContain(`EndpointInput.${missing}`);
      expect(result.body.data).toBeUndefined();
      expect(emulator.control.endpoints()).toHaveLength(0);
    });
  }

  const invalid: Array<[string, string, RegExp]> = [
    ['an unknown gpu tier', 'gpuIds: "H100"', /gpuIds/],
    ['an unknown type', 'gpuIds: "AMPERE_16", type: "XX"', /type/],
    ['an unknown scaler', 'gpuIds: "AMPERE_16", scalerType: "CPU"', /scalerType/],
    ['an unknown location', 'gpuIds: "AMPERE_16", locations: "US,MARS"', /locations/],
    ['workersMin above workersMax', 'gpuIds: "AMPERE_16", workersMin: 4, workersMax: 2', /workersMin/],
    ['a negative idle timeout', 'gpuIds: "AMPERE_16", idleTimeout: -1', /idleTimeout/],
    ['an unknown network volume', 'gpuIds: "AMPERE_16", networkVolumeId: "nope"', /network volume/],
  ];
  for (const [what, args, message] of invalid) {
    it(`answers an error in { errors } for ${what}`, async () => {
      const result = await create(`name: "bad", templateId: "echo", ${args}`);
      expect(result.status).toBe(200);
      expect(result.body.data).toEqual({ saveEndpoint: null });
      expect(result.body.errors[0].message).toMatch(message);
      expect(emulator.control.endpoints()).toHaveLength(0);
    });
  }

  it('refuses a quoted enum value for flashBootType (400)', async () => {
    const result = await create(
      'name: "x", templateId: "echo", gpuIds: "AMPERE_16", flashBootType: "FLASHBOOT"',
    );
    expect(result.status).toBe(400);
    expect(result.body.errors[0].message).toMatch(/Enum "FlashBootType" cannot represent non-enum value/);
  });
});

describe('saveEndpoint: update', () => {
  it('with id, answers the selected fields with their new values and keeps the others', async () => {
    const created = await create('name: "before", templateId: "echo", gpuIds: "AMPERE_16", idleTimeout: 9');
    const id = created.body.data.saveEndpoint.id;
    const updated = await gql(
      `mutation { saveEndpoint(input: { id: "${id}", name: "after", templateId: "sleep", gpuIds: "AMPERE_24", workersMax: 7 }) { id name templateId gpuIds workersMax idleTimeout } }`,
    );
    expect(updated.body.data.saveEndpoint).toEqual({
      id,
      name: 'after',
      templateId: 'sleep',
      gpuIds: 'AMPERE_24',
      workersMax: 7,
      idleTimeout: 9,
    });
    expect(emulator.control.endpoints(KEY)).toHaveLength(1);
  });

  it('clears a nullable field given as null', async () => {
    const created = await create('name: "loc", templateId: "echo", gpuIds: "AMPERE_16", locations: "US"');
    const id = created.body.data.saveEndpoint.id;
    const updated = await gql(
      `mutation { saveEndpoint(input: { id: "${id}", name: "loc", templateId: "echo", gpuIds: "AMPERE_16", locations: null }) { locations } }`,
    );
    expect(updated.body.data.saveEndpoint.locations).toBeNull();
  });

  it('answers an error for an unknown id', async () => {
    const result = await gql(
      'mutation { saveEndpoint(input: { id: "nope", name: "x", templateId: "echo", gpuIds: "AMPERE_16" }) { id } }',
    );
    expect(result.body.errors[0].message).toBe('endpoint nope not found');
  });

  it('scales the workers when workersMin changes', async () => {
    const created = await create('name: "warm", templateId: "echo", gpuIds: "AMPERE_16"');
    const id = created.body.data.saveEndpoint.id;
    await gql(
      `mutation { saveEndpoint(input: { id: "${id}", name: "warm", templateId: "echo", gpuIds: "AMPERE_16", workersMin: 2 }) { id } }`,
    );
    const pods = await gql('{ myself { endpoints { id pods { desiredStatus } } } }');
    expect(pods.body.data.myself.endpoints[0].pods).toEqual([
      { desiredStatus: 'RUNNING' },
      { desiredStatus: 'RUNNING' },
    ]);
  });
});

describe('myself', () => {
  it('lists the account endpoints with pods and a null serverlessDiscount', async () => {
    await create('name: "a", templateId: "echo", gpuIds: "AMPERE_16"');
    await create('name: "b", templateId: "echo", gpuIds: "AMPERE_48"');
    const result = await gql(
      '{ myself { endpoints { name gpuIds pods { desiredStatus } } serverlessDiscount { discountFactor type expirationDate } } }',
    );
    expect(result.status).toBe(200);
    expect(result.body.data.myself).toEqual({
      endpoints: [
        { name: 'a', gpuIds: 'AMPERE_16', pods: [] },
        { name: 'b', gpuIds: 'AMPERE_48', pods: [] },
      ],
      serverlessDiscount: null,
    });
  });
});

describe('deleteEndpoint', () => {
  it('is refused unless workersMin and workersMax are both 0', async () => {
    const created = await create(
      'name: "d", templateId: "echo", gpuIds: "AMPERE_16", workersMin: 0, workersMax: 1',
    );
    const id = created.body.data.saveEndpoint.id;
    const refused = await gql(`mutation { deleteEndpoint(id: "${id}") }`);
    expect(refused.body.errors[0].message).toMatch(/workersMin 0 and workersMax 1/);
    expect(emulator.control.endpoints()).toHaveLength(1);

    await gql(
      `mutation { saveEndpoint(input: { id: "${id}", name: "d", templateId: "echo", gpuIds: "AMPERE_16", workersMax: 0 }) { id } }`,
    );
    const deleted = await gql(`mutation { deleteEndpoint(id: "${id}") }`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ data: { deleteEndpoint: null } });
    expect(emulator.control.endpoints()).toHaveLength(0);
    expect((await jobsApi(emulator, id).health()).status).toBe(404);
  });

  it('answers an error for an unknown id', async () => {
    const result = await gql('mutation { deleteEndpoint(id: "nope") }');
    expect(result.body.errors[0].message).toBe('endpoint nope not found');
  });
});

describe('documents are parsed, never pasted', () => {
  const evil = 'x") { id } } mutation { deleteEndpoint(id: "victim") } #\n\\ "quoted" {braces}';

  it('a correctly escaped string with quotes, backslashes, braces and newlines arrives literally', async () => {
    const result = await create(
      `name: ${JSON.stringify(evil)}, templateId: "echo", gpuIds: "AMPERE_16"`,
      'name',
    );
    expect(result.status).toBe(200);
    expect(result.body.data.saveEndpoint.name).toBe(evil);
    expect(emulator.control.endpoints()[0]?.name).toBe(evil);
  });

  it('the same string pasted without escaping fails to parse (400) and changes nothing', async () => {
    const victim = await create('name: "victim", templateId: "echo", gpuIds: "AMPERE_16", workersMax: 0');
    const before = emulator.control.endpoints();
    const result = await gql(
      `mutation { saveEndpoint(input: { name: "${evil}", templateId: "echo", gpuIds: "AMPERE_16" }) { id } }`,
    );
    expect(result.status).toBe(400);
    expect(result.body.errors[0].message).toMatch(/Syntax Error/);
    expect(emulator.control.endpoints()).toEqual(before);
    expect(victim.body.data.saveEndpoint.id).toEqual(expect.any(String));
  });

  it('a string passed as a variable arrives literally', async () => {
    const result = await gql(
      'mutation Save($name: String!) { saveEndpoint(input: { name: $name, templateId: "echo", gpuIds: "AMPERE_16" }) { name } }',
      { name: evil },
    );
    expect(result.body.data.saveEndpoint.name).toBe(evil);
  });

  it('malformed documents, unknown fields and bodies without a query answer 400 with { errors }', async () => {
    const syntax = await gql('mutation { saveEndpoint(');
    expect(syntax.status).toBe(400);
    expect(syntax.body.errors[0].message).toMatch(/Syntax Error/);
    const unknown = await gql('{ myself { password } }');
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors[0].message).toMatch(/Cannot query field "password"/);
    const noQuery = await http('POST', `${emulator.graphqlUrl}?api_key=${KEY}`, { json: { mutation: 'x' } });
    expect(noQuery.status).toBe(400);
    expect(noQuery.body).toEqual({ errors: [{ message: expect.stringMatching(/query/) }] });
  });
});
