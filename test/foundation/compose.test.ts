import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dynamicConfigYaml } from '../../scripts/server-settings';
import { provisionedServers } from '../../scripts/servers';
import { searchAttributeKeys } from '../../workflows/shared/search-attributes';
import { tempDir } from '../support/temp-dir';

// docker-compose.yml cannot run here (no Docker engine); the real Compose CLI validates it offline.
const composeFile = path.join(__dirname, '../../docker-compose.yml');
const serviceEnv = {
  SERVERLESS_API_KEY: 'k',
  SERVERLESS_API_URL: 'https://api.example.test/v2',
  SERVERLESS_GRAPHQL_URL: 'https://api.example.test/graphql',
  SERVERLESS_REST_URL: 'https://rest.example.test/v1',
  GRAFANA_ADMIN_PASSWORD: 'a-password-of-the-operator',
};

function composeConfig(file: string, env: Record<string, string>, args: string[] = ['config', '-q']) {
  const { composeCli } = provisionedServers();
  if (!composeCli) throw new Error('the Compose CLI is not provisioned: run npm run provision');
  return spawnSync(composeCli, ['-f', file, ...args], {
    encoding: 'utf8',
    cwd: path.dirname(composeFile),
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
  });
}

describe('docker-compose.yml', () => {
  it('is a valid Compose file once the service variables are set', () => {
    const result = composeConfig(composeFile, serviceEnv);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it("runs the Temporal server with the project's dynamic config", () => {
    const result = composeConfig(composeFile, serviceEnv, ['config', '--format', 'json']);
    expect(result.stderr).toBe('');
    const temporal = (
      JSON.parse(result.stdout) as {
        services: Record<
          string,
          { environment?: Record<string, string>; volumes?: Array<{ source: string; target: string }> }
        >;
      }
    ).services.temporal;
    const mounted = temporal?.volumes?.find(
      (volume) => volume.target === temporal.environment?.DYNAMIC_CONFIG_FILE_PATH,
    );
    expect(mounted?.source).toBe(path.join(path.dirname(composeFile), 'deploy/temporal-dynamicconfig.yaml'));
    const body = readFileSync(mounted?.source as string, 'utf8')
      .split('\n')
      .filter((line) => !line.startsWith('#'))
      .join('\n');
    expect(body).toBe(dynamicConfigYaml());
  });

  it('refuses to start without the API key and says which variable is missing', () => {
    const { SERVERLESS_API_KEY: _omitted, ...rest } = serviceEnv;
    const result = composeConfig(composeFile, rest);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('SERVERLESS_API_KEY');
  });

  it('refuses to start without a Grafana admin password, and names the variable', () => {
    const { GRAFANA_ADMIN_PASSWORD: _omitted, ...rest } = serviceEnv;
    const result = composeConfig(composeFile, rest);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('GRAFANA_ADMIN_PASSWORD');
    const empty = composeConfig(composeFile, { ...rest, GRAFANA_ADMIN_PASSWORD: '' });
    expect(empty.status).not.toBe(0);
  });

  it('publishes every port on 127.0.0.1 only, in every profile, unless the operator opts in', () => {
    const published = (env: Record<string, string>) => {
      // '*' enables every profile: the gateway (webhooks) and Prometheus and Grafana (metrics) too.
      const result = composeConfig(composeFile, env, ['--profile', '*', 'config', '--format', 'json']);
      expect(result.stderr).toBe('');
      const config = JSON.parse(result.stdout) as {
        services: Record<string, { ports?: Array<{ host_ip?: string; published: string }> }>;
      };
      return Object.entries(config.services).flatMap(([service, { ports = [] }]) =>
        ports.map((port) => ({ service, published: port.published, hostIp: port.host_ip })),
      );
    };
    const byDefault = published(serviceEnv);
    expect(byDefault.map((port) => port.service).sort()).toEqual(
      ['gateway', 'grafana', 'prometheus', 'temporal', 'temporal-ui'].sort(),
    );
    for (const port of byDefault) expect(port, port.service).toMatchObject({ hostIp: '127.0.0.1' });

    const optedIn = published({ ...serviceEnv, BIND_ADDRESS: '0.0.0.0', GATEWAY_BIND_ADDRESS: '0.0.0.0' });
    for (const port of optedIn) expect(port, port.service).toMatchObject({ hostIp: '0.0.0.0' });
    // The gateway is the one listener a deployment exposes on purpose: opting it in exposes nothing else.
    const gatewayOnly = published({ ...serviceEnv, GATEWAY_BIND_ADDRESS: '0.0.0.0' });
    for (const port of gatewayOnly)
      expect(port, port.service).toMatchObject({
        hostIp: port.service === 'gateway' ? '0.0.0.0' : '127.0.0.1',
      });
  });

  it("gives the service's API key to the worker only: the gateway never needs it", () => {
    const result = composeConfig(composeFile, serviceEnv, ['--profile', '*', 'config', '--format', 'json']);
    expect(result.stderr).toBe('');
    const { services } = JSON.parse(result.stdout) as {
      services: Record<string, { environment?: Record<string, string | null> }>;
    };
    expect(services.worker?.environment).toMatchObject({ SERVERLESS_API_KEY: serviceEnv.SERVERLESS_API_KEY });
    const holders = Object.entries(services)
      .filter(([, service]) =>
        Object.values(service.environment ?? {}).includes(serviceEnv.SERVERLESS_API_KEY),
      )
      .map(([name]) => name);
    expect(holders).toEqual(['worker']);
    // The gateway does get what it needs for events and automations.
    expect(Object.keys(services.gateway?.environment ?? {})).toEqual(
      expect.arrayContaining([
        'EVENT_SIGNING_SECRETS',
        'EVENT_SOURCES',
        'WORKER_AUTOMATIONS_MODULE',
        'WEBHOOK_SECRET',
      ]),
    );
  });

  it('registers every search attribute the library writes, with its type', () => {
    const result = composeConfig(composeFile, serviceEnv, ['config', '--format', 'json']);
    expect(result.stderr).toBe('');
    const { services } = JSON.parse(result.stdout) as {
      services: Record<string, { command?: string[] }>;
    };
    const setup = (services['temporal-setup']?.command ?? []).join(' ').replace(/\s+/g, ' ');
    const typeNames: Record<string, string> = { KEYWORD: 'Keyword', KEYWORD_LIST: 'KeywordList' };
    for (const key of searchAttributeKeys)
      expect(setup).toContain(`--name ${key.name} --type ${typeNames[key.type] ?? key.type}`);
  });

  it('would catch a broken field: the validator names it', () => {
    const broken = readFileSync(composeFile, 'utf8').replace(
      'stop_grace_period: 60s',
      'stop_grace_period: [60s]',
    );
    const copy = path.join(tempDir('compose'), 'docker-compose.yml');
    writeFileSync(copy, broken);
    const result = composeConfig(copy, serviceEnv);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('stop_grace_period');
  });
});
