/**
 * One check of `doctor` (client/doctor.ts), and the rule every check's message keeps: an error's
 * text with the configuration's secrets taken out.
 */
import { redact } from '../api/errors';

export const doctorVerdicts = ['pass', 'warn', 'fail', 'skip'] as const;
export type DoctorVerdict = (typeof doctorVerdicts)[number];

export interface DoctorCheck {
  /** What was checked: `temporal`, `namespace`, `search-attributes`, `worker`, `clock`, ... */
  check: string;
  verdict: DoctorVerdict;
  /** What was found, in a sentence. */
  detail: string;
  /** What to do about it (a failure or a warning). */
  fix?: string;
}

/** An error's message, with every secret of the configuration redacted. */
export const messageOf = (error: unknown, secrets: readonly string[]) =>
  redact(error instanceof Error ? error.message : String(error), secrets);
