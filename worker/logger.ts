/**
 * The worker's and the gateway's pino logger. Two layers keep secrets out of the logs: pino's
 * `redact` blanks the fields that hold them, and a last pass over every finished line removes the
 * values of the known secrets and any `token=` query parameter, wherever a message or an error
 * carried them (a URL in an error message, a framework warning that prints `req.url`).
 */
import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

const REDACTED = '[REDACTED]';

export const redactedPaths = [
  'token',
  '*.token',
  'secret',
  '*.secret',
  'secrets',
  '*.secrets',
  'previousSecrets',
  '*.previousSecrets',
  'apiKey',
  '*.apiKey',
  'authorization',
  '*.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
  'req.query.token',
];

// The token travels as a query parameter; it is cut out of any URL, encoded or not, in any field.
const tokenParameter = /([?&]token(?:=|%3D))[^&\s"'#\\]*/gi;

export interface CreateLoggerOptions {
  level?: string;
  /** Values that must never appear in a line: the webhook secrets, the API key. */
  secrets?: readonly string[];
  /** Where lines go (stdout by default); tests pass a stream that collects them. */
  destination?: DestinationStream;
  name?: string;
}

/** Every spelling a secret can take inside a JSON log line: raw, JSON-escaped, URL-encoded. */
function spellings(secrets: readonly string[]): string[] {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (!secret) continue;
    forms.add(secret);
    forms.add(JSON.stringify(secret).slice(1, -1));
    forms.add(encodeURIComponent(secret));
    forms.add(JSON.stringify(encodeURIComponent(secret)).slice(1, -1));
  }
  // Longest first, so a secret that contains another is removed whole.
  return [...forms].sort((a, b) => b.length - a.length);
}

export function scrubLine(line: string, secretForms: readonly string[]): string {
  let out = line.replace(tokenParameter, `$1${REDACTED}`);
  for (const form of secretForms) {
    if (out.includes(form)) out = out.split(form).join(REDACTED);
  }
  return out;
}

export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const secretForms = spellings(options.secrets ?? []);
  return pino(
    {
      level: options.level ?? 'info',
      ...(options.name ? { name: options.name } : {}),
      redact: { paths: redactedPaths, censor: REDACTED },
      hooks: { streamWrite: (line) => scrubLine(line, secretForms) },
    },
    options.destination ?? pino.destination(1),
  );
}
