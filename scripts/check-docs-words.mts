/**
 * `npm run check:docs-words`: the README stays a front door (at most 300 lines), and no document
 * speaks of the project's own history (issue numbers, "this release" with no release behind it,
 * "this stop", tranches). docs/reference/api is generated and skipped; CHANGELOG.md is history by
 * design and is not checked.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const generated = path.join(root, 'docs/reference/api');
const README_MAX_LINES = 300;

// Words that only make sense inside the project's own history.
const historyWords: Array<[RegExp, string]> = [
  [/\bissues? #?\d+/i, 'an issue number'],
  [/#\d{1,4}\b(?![\w-])/, 'an issue number'],
  [/\bthis (stop|release|tranche)\b/i, 'the project history ("this stop", "this release")'],
  [/\b(next|previous|earlier|last) (stop|tranche)\b/i, 'the project history'],
  [/\bstop \d+\b/i, 'the project history ("stop N")'],
  [/\btranche\b/i, 'the project history ("tranche")'],
];

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return full === generated ? [] : markdownFiles(full);
    return entry.name.endsWith('.md') ? [full] : [];
  });
}

const problems: string[] = [];
const readmeLines = readFileSync(path.join(root, 'README.md'), 'utf8').split('\n').length - 1;
if (readmeLines > README_MAX_LINES)
  problems.push(`README.md: ${readmeLines} lines; the front door holds at most ${README_MAX_LINES}`);

const files = [path.join(root, 'README.md'), ...markdownFiles(path.join(root, 'docs'))];
for (const file of files) {
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, index) => {
      for (const [pattern, what] of historyWords) {
        const match = pattern.exec(line);
        if (match)
          problems.push(`${path.relative(root, file)}:${index + 1}: "${match[0]}" speaks of ${what}`);
      }
    });
}

for (const problem of problems) console.error(problem);
console.log(`${files.length} Markdown files, README.md ${readmeLines} lines: ${problems.length} problems`);
process.exitCode = problems.length === 0 ? 0 : 1;
