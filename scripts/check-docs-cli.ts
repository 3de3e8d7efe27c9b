/**
 * `npm run check:docs-cli`: every CLI command line shown in README.md and docs/ (`durable-serverless
 * <command> <subcommand> --flags`, or `npm run cli -- ...`) names a command and flags the CLI has.
 * It reads the CLI's own command tree (buildProgram), so a renamed command or flag fails here.
 * `a|b|c` in a command position stands for each of a, b and c.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { buildProgram } from '../client/cli';

const root = path.resolve(__dirname, '..');
const generated = path.join(root, 'docs/reference/api');
const invocation = /(?:^|[\s;(])(?:npx\s+)?(?:durable-serverless|npm run cli --)\s+(.*)$/;

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return full === generated ? [] : markdownFiles(full);
    return entry.name.endsWith('.md') ? [full] : [];
  });
}

/** The shell lines of ```sh blocks, continuation lines joined, with the line each starts on. */
function shellLines(text: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  let inShell = false;
  let pending: { line: number; text: string } | undefined;
  text.split('\n').forEach((raw, index) => {
    const fence = /^\s*```(\S*)/.exec(raw);
    if (fence) {
      inShell = !inShell && ['sh', 'bash', 'shell', 'console'].includes(fence[1] ?? '');
      return;
    }
    if (!inShell) return;
    const joined = pending ? `${pending.text} ${raw.trim()}` : raw;
    const start = pending?.line ?? index + 1;
    if (joined.trimEnd().endsWith('\\')) pending = { line: start, text: joined.trimEnd().slice(0, -1) };
    else {
      pending = undefined;
      out.push({ line: start, text: joined });
    }
  });
  return out;
}

function flagsOf(command: Command): Set<string> {
  return new Set(
    command.options.flatMap((option) => [option.long, option.short].filter(Boolean) as string[]),
  );
}

const program = buildProgram({ out: () => {}, err: () => {}, errIsTTY: false } as Parameters<
  typeof buildProgram
>[0]);
const globalFlags = flagsOf(program);
globalFlags.add('--help');

function check(words: string[]): string | undefined {
  // The command path: words until the first flag or argument that is no subcommand.
  let command = program;
  const path: string[] = [];
  let rest = words;
  while (rest.length > 0 && !rest[0]!.startsWith('-')) {
    const alternatives = rest[0]!.split('|');
    const found = alternatives.map((name) => command.commands.find((sub) => sub.name() === name));
    if (found.some((sub) => sub === undefined)) {
      if (command.commands.length > 0 && command === program)
        return `no command "${rest[0]}" (commands: ${program.commands.map((sub) => sub.name()).join(', ')})`;
      if (command.commands.length > 0 && path.length === 1)
        return `no command "${path.join(' ')} ${rest[0]}"`;
      break;
    }
    // Alternatives share their flags only when each has them: check the first, the others by name.
    command = found[0]!;
    path.push(rest[0]!);
    rest = rest.slice(1);
    if (alternatives.length > 1) break;
  }
  const known = new Set([...globalFlags, ...flagsOf(command)]);
  for (const word of rest) {
    const flag = /^(--?[A-Za-z][\w-]*)/.exec(word)?.[1];
    if (flag && !known.has(flag)) return `"${path.join(' ')}" has no flag ${flag}`;
  }
  return undefined;
}

const problems: string[] = [];
let checked = 0;
for (const file of [path.join(root, 'README.md'), ...markdownFiles(path.join(root, 'docs'))]) {
  for (const { line, text } of shellLines(readFileSync(file, 'utf8'))) {
    const match = invocation.exec(text);
    if (!match) continue;
    // The command's own words: up to a comment, a redirection or a pipe into another program.
    const words = (match[1] ?? '')
      .split(/\s+(?:#|>|\|\s|;|&&)/)[0]!
      .split(/\s+/)
      .filter(Boolean)
      .filter((word) => !/^['"]/.test(word));
    checked += 1;
    const problem = check(words);
    if (problem) problems.push(`${path.relative(root, file)}:${line}: ${problem}`);
  }
}

for (const problem of problems) console.error(problem);
console.log(`${checked} CLI command lines: ${problems.length} problems`);
process.exitCode = problems.length === 0 ? 0 : 1;
