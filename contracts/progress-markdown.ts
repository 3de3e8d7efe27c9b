/**
 * The small Markdown the Temporal UI shows for our workflows (static details at start, current
 * details while running): number, duration and money formats and a two-column table. Pure and
 * dependency-free, so workflow code and the client render with the same rules.
 */

/** 12345 → "12,345" (the same in every locale and sandbox, so a replay renders the same text). */
export function formatCount(value: number): string {
  return String(Math.round(value)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Milliseconds as the largest sensible unit: "250 ms", "10 s", "1.5 min", "2 h", "3 d". */
export function formatDuration(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1_000, 's'],
  ];
  for (const [size, unit] of units) {
    if (Math.abs(ms) >= size) return `${trimNumber(ms / size)} ${unit}`;
  }
  return `${Math.round(ms)} ms`;
}

/** Bytes as B / KiB / MiB. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1_048_576) return `${trimNumber(bytes / 1_048_576)} MiB`;
  if (bytes >= 1_024) return `${trimNumber(bytes / 1_024)} KiB`;
  return `${bytes} B`;
}

/** An amount of money with its currency when known: "12.34 USD", "0.0021". */
export function formatMoney(amount: number, currency?: string): string {
  const digits = Math.abs(amount) >= 1 || amount === 0 ? 2 : 4;
  const text = amount.toFixed(digits);
  return currency ? `${text} ${currency}` : text;
}

/** A timestamp (epoch ms) as UTC to the second: "2026-11-25 19:40:03 UTC". */
export function formatInstant(epochMs: number): string {
  return `${new Date(epochMs).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

function trimNumber(value: number): string {
  return String(Number(value.toFixed(value >= 10 ? 0 : 1)));
}

/** Markdown cells must not break the table: pipes escaped, line breaks flattened. */
export function markdownCell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');
}

/** Inline code, for ids and keys. */
export function code(text: string): string {
  return `\`${text.replace(/`/g, "'")}\``;
}

/** A two-column Markdown table of label/value rows; rows whose value is undefined are left out. */
export function markdownTable(
  rows: [label: string, value: string | undefined][],
  heading = ['', ''],
): string {
  const kept = rows.filter((row): row is [string, string] => row[1] !== undefined);
  const lines = [
    `| ${heading[0]} | ${heading[1]} |`,
    '| --- | --- |',
    ...kept.map(([label, value]) => `| ${markdownCell(label)} | ${markdownCell(value)} |`),
  ];
  return lines.join('\n');
}
