#!/usr/bin/env node
import { Command, InvalidArgumentError } from 'commander';
import { z } from 'zod';
import { startEmulator } from './index';
import { describeZodError } from './schemas';

// `npx durable-serverless-emulator` (installed) or `npm run emulator --` (in the repo), then
// `--port 8080 --api-key KEY [--api-key KEY2] [--time-scale N] [--seed file.json]
// [--stream-shape object]`: serves until SIGINT or SIGTERM. Each --api-key is its own account.

const cliSchema = z.object({
  host: z.string().min(1),
  port: z.int().min(0).max(65_535),
  apiKey: z.array(z.string().min(1)),
  timeScale: z.number().positive(),
  seed: z.string().min(1).optional(),
  streamShape: z.enum(['array', 'object']),
  requestsPerWorker: z.int().min(0),
  rateLimits: z.boolean(),
  coldStartMs: z.number().min(0),
  flashBootMs: z.number().min(0),
  log: z.boolean(),
});

const number = (value: string): number => {
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed)) throw new InvalidArgumentError('not a number');
  return parsed;
};

async function main() {
  const program = new Command()
    .name('emulator')
    .description('Local emulator of the serverless compute service (job operations, GraphQL, REST)')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0: any free port)', number, 8080)
    .option(
      '--api-key <key>',
      'an accepted API key, one account per key (repeatable)',
      (v, all: string[]) => [...all, v],
      [],
    )
    .option('--time-scale <n>', 'service time runs N times faster than real time', number, 1)
    .option('--seed <file>', 'JSON file with accounts, endpoints and network volumes')
    .option(
      '--stream-shape <shape>',
      "/stream body: 'array' (spec) or 'object' ({ status, stream })",
      'array',
    )
    .option('--requests-per-worker <n>', 'dynamic rate-limit rule: requests per running worker', number, 10)
    .option('--no-rate-limits', 'disable the rate limits')
    .option('--cold-start-ms <ms>', 'worker cold start in service ms', number, 5000)
    .option('--flash-boot-ms <ms>', 'worker start with FLASHBOOT in service ms', number, 500)
    .option('--log', 'log every request', false)
    .parse();

  const parsed = cliSchema.safeParse(program.opts());
  if (!parsed.success) return program.error(`invalid option: ${describeZodError(parsed.error)}`);
  const o = parsed.data;

  const emulator = await startEmulator({
    host: o.host,
    port: o.port,
    accounts: o.apiKey.map((apiKey) => ({ apiKey })),
    timeScale: o.timeScale,
    seed: o.seed,
    streamShape: o.streamShape,
    requestsPerWorker: o.requestsPerWorker,
    rateLimits: o.rateLimits,
    coldStartMs: o.coldStartMs,
    flashBootMs: o.flashBootMs,
    logger: o.log,
  });

  // Never the keys: they are secrets.
  const lines = [
    `jobs     ${emulator.apiUrl}`,
    `graphql  ${emulator.graphqlUrl}`,
    `rest     ${emulator.restUrl}`,
  ];
  if (o.apiKey.length === 0 && !o.seed) lines.push("no --api-key given: the key is 'test-key'");
  for (const endpoint of emulator.control.endpoints()) {
    lines.push(`endpoint ${endpoint.id} (${endpoint.name}, template ${endpoint.templateId})`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`${signal}: closing\n`);
    emulator.close().then(
      () => {
        process.exitCode = 0;
      },
      (error: unknown) => {
        console.error(error);
        process.exitCode = 1;
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
