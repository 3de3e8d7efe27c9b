/**
 * `npm run check:docs-snippets`: every ```ts block in README.md and docs/ type-checks against the
 * package's sources (scripts/check-docs-snippets.tsconfig.json maps `durable-serverless` to them).
 * Each block is a module of its own (top-level await allowed), so it must import what it uses. An
 * error is reported at its line in the Markdown file. docs/reference/api is generated and skipped.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { remark } from 'remark';
import ts from 'typescript';
import { visit } from 'unist-util-visit';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const configPath = path.join(root, 'scripts/check-docs-snippets.tsconfig.json');
const outDir = path.join(root, '.cache/docs-snippets');
const generated = path.join(root, 'docs/reference/api');

interface Snippet {
  markdown: string;
  /** 1-based line of the block's first code line in the Markdown file. */
  firstLine: number;
  file: string;
}

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return full === generated ? [] : markdownFiles(full);
    return entry.name.endsWith('.md') ? [full] : [];
  });
}

function extractSnippets(markdownPath: string): Array<Omit<Snippet, 'file'> & { code: string }> {
  const tree = remark().parse(readFileSync(markdownPath, 'utf8'));
  const found: Array<Omit<Snippet, 'file'> & { code: string }> = [];
  visit(tree, 'code', (node) => {
    if (node.lang !== 'ts' && node.lang !== 'typescript') return;
    // The fence is the node's first line: the code starts on the next one.
    found.push({ markdown: markdownPath, firstLine: (node.position?.start.line ?? 0) + 1, code: node.value });
  });
  return found;
}

const sources = [path.join(root, 'README.md'), ...markdownFiles(path.join(root, 'docs'))];
rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });
const snippets: Snippet[] = sources.flatMap((markdown) =>
  extractSnippets(markdown).map((snippet) => {
    const name = `${path.relative(root, markdown).replace(/[^\w.-]+/g, '_')}_L${snippet.firstLine}.ts`;
    const file = path.join(outDir, name);
    // `export {}` makes a block without imports a module too: its names stay its own.
    writeFileSync(file, `${snippet.code}\nexport {};\n`);
    return { markdown: snippet.markdown, firstLine: snippet.firstLine, file };
  }),
);

const parsed = ts.getParsedCommandLineOfConfigFile(
  configPath,
  {},
  {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    },
  },
);
if (!parsed) throw new Error(`cannot read ${configPath}`);
const program = ts.createProgram(
  snippets.map((snippet) => snippet.file),
  parsed.options,
);
const byFile = new Map(snippets.map((snippet) => [path.resolve(snippet.file), snippet]));
const problems: string[] = [];
for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
  const snippet = diagnostic.file ? byFile.get(path.resolve(diagnostic.file.fileName)) : undefined;
  if (diagnostic.file && !snippet) {
    // An error inside the package's own sources: tsc -p . reports those; name it here all the same.
    const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
    problems.push(`${path.relative(root, diagnostic.file.fileName)}:${line + 1}: ${message}`);
    continue;
  }
  if (!snippet || !diagnostic.file) {
    problems.push(message);
    continue;
  }
  const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
  problems.push(
    `${path.relative(root, snippet.markdown)}:${snippet.firstLine + line}:${character + 1}: ${message}`,
  );
}

for (const problem of problems) console.error(problem);
console.log(
  `${snippets.length} TypeScript blocks in ${sources.length} Markdown files: ${problems.length} errors`,
);
process.exitCode = problems.length === 0 ? 0 : 1;
