/**
 * `durable-serverless doctor`: every piece of a deployment checked, each with a verdict and the fix
 * (client/doctor.ts). Run it with the worker's environment, where the worker runs.
 *
 *   npm run cli -- doctor
 *   npm run cli -- doctor --endpoint ep-1,ep-2 --json
 *
 * Exits 1 when a check fails. Nothing it prints holds a secret.
 */
import type { Command } from 'commander';
import type { TemporalConnectionConfig, TemporalConnectionOrigin } from './connection';
import { formatDoctorReport, runDoctor } from './doctor';

export interface DoctorCliContext {
  out: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /** The global flags over the environment. */
  connection: () => { config: TemporalConnectionConfig; origin: TemporalConnectionOrigin };
  taskQueue: () => string;
}

/** A failed check: the report is printed already, the exit code says the rest. */
export class DoctorFailed extends Error {
  override readonly name = 'DoctorFailed';
}

export function addDoctorCommand(program: Command, ctx: DoctorCliContext): void {
  program
    .command('doctor')
    .description(
      'check Temporal, the namespace, search attributes, a worker on the queue, the API key, endpoints, webhooks, the store and the clock',
    )
    .option('--endpoint <ids>', 'endpoints whose health to check, comma-separated')
    .option('--json', 'print JSON')
    .addHelpText(
      'after',
      "\nRun it with the worker's environment (SERVERLESS_*, WEBHOOK_*, RESULT_STORE_DIR), where the\n" +
        'worker runs. Exits 1 when a check fails.\n',
    )
    .action(async (flags: { endpoint?: string; json?: boolean }) => {
      const report = await runDoctor({
        env: ctx.env,
        connection: ctx.connection(),
        taskQueue: ctx.taskQueue(),
        endpoints: (flags.endpoint ?? '')
          .split(',')
          .map((id) => id.trim())
          .filter(Boolean),
      });
      ctx.out(flags.json ? `${JSON.stringify(report, null, 2)}\n` : formatDoctorReport(report));
      if (!report.ok) {
        const failed = report.checks.filter((check) => check.verdict === 'fail').map((check) => check.check);
        throw new DoctorFailed(`doctor: failed: ${failed.join(', ')}`);
      }
    });
}
