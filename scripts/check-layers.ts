/**
 * The layer rule of the library (docs: ARCHITECTURE's folder table), checked on every import:
 *
 *   client, worker  ->  workflows  ->  contracts  <-  activities  ->  api
 *   client, worker, activities  ->  stores  ->  contracts
 *
 * - contracts/ (schemas, types, failure names and pure rules that the layers share) imports only
 *   zod, @temporalio/common (the SDK's own shared layer), api/schemas and types of api/errors;
 * - stores/ (the local and object-store stores) imports only contracts/, api/schemas, api/errors
 *   and packages (their SDKs): the client, the activities and the worker share it;
 * - workflows/ never import stores/ (a workflow never touches a store);
 * - workflows/ and activities/ never import each other; workflows/ may name an activity interface
 *   with `import type` (what proxyActivities needs);
 * - client/ imports workflows/ only for workflow types (`import type`) and names: the signal, query
 *   and update definitions (*definitions.ts) and search attribute keys;
 * - api/ knows nothing of the layers above it.
 *
 * Prints every import that breaks a rule, with file and line, and exits 1 if there is one.
 *
 *   npm run check:layers
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(__dirname, '..');
const LAYERS = [
  'api',
  'contracts',
  'stores',
  'activities',
  'workflows',
  'client',
  'worker',
  'emulator',
] as const;
type Layer = (typeof LAYERS)[number];

interface ImportSite {
  file: string;
  line: number;
  specifier: string;
  typeOnly: boolean;
}

/** Where an import leads: a layer folder and the path inside the repo, or a package name. */
type Target =
  | { kind: 'local'; layer: Layer | undefined; repoPath: string }
  | { kind: 'package'; name: string };

interface Rule {
  /** Why, printed beside each breach. */
  why: string;
  allows(target: Target, site: ImportSite): boolean;
}

const NAME_FILES = /^workflows\/([a-z-]+-)?definitions$|^workflows\/search-attributes$/;

const RULES: Partial<Record<Layer, Rule>> = {
  api: {
    why: 'api/ is the plain service client: it imports no layer above it',
    allows: (target) => target.kind === 'package' || target.layer === 'api',
  },
  contracts: {
    why: 'contracts/ imports only zod, @temporalio/common, api/schemas and types of api/errors',
    allows: (target, site) => {
      if (target.kind === 'package') return target.name === 'zod' || target.name === '@temporalio/common';
      if (target.layer === 'contracts') return true;
      if (target.repoPath.startsWith('api/schemas/')) return true;
      return target.repoPath === 'api/errors' && site.typeOnly;
    },
  },
  stores: {
    why: 'stores/ imports only contracts/, api/schemas, api/errors and packages',
    allows: (target) =>
      target.kind === 'package' ||
      target.layer === 'stores' ||
      target.layer === 'contracts' ||
      target.repoPath.startsWith('api/schemas/') ||
      target.repoPath === 'api/errors',
  },
  activities: {
    why: 'activities/ never imports workflows/, client/ or worker/ (shared shapes live in contracts/)',
    allows: (target) =>
      target.kind === 'package' || !['workflows', 'client', 'worker'].includes(target.layer ?? ''),
  },
  workflows: {
    why: 'workflows/ imports activities/ only as `import type` (proxyActivities), and never stores/, client/ or worker/',
    allows: (target, site) => {
      if (target.kind === 'package') return true;
      if (target.layer === 'activities') return site.typeOnly;
      return !['stores', 'client', 'worker', 'emulator'].includes(target.layer ?? '');
    },
  },
  client: {
    why: 'client/ imports workflows/ only for types (`import type`) and names (definitions, search attributes)',
    allows: (target, site) =>
      target.kind === 'package' ||
      target.layer !== 'workflows' ||
      site.typeOnly ||
      NAME_FILES.test(target.repoPath),
  },
};

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) files.push(...sourceFiles(full));
    else if (/\.(ts|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) files.push(full);
  }
  return files;
}

/** Every static import and re-export of a file, and whether it brings in types only. */
function importsOf(file: string): ImportSite[] {
  const text = readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const sites: ImportSite[] = [];
  const add = (node: ts.Node, specifier: ts.Expression | undefined, typeOnly: boolean) => {
    if (!specifier || !ts.isStringLiteral(specifier)) return;
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    sites.push({ file, line, specifier: specifier.text, typeOnly });
  };
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      const named = clause?.namedBindings;
      const everyNameIsType =
        clause !== undefined &&
        clause.name === undefined &&
        named !== undefined &&
        ts.isNamedImports(named) &&
        named.elements.length > 0 &&
        named.elements.every((element) => element.isTypeOnly);
      add(statement, statement.moduleSpecifier, Boolean(clause?.isTypeOnly) || everyNameIsType);
    } else if (ts.isExportDeclaration(statement)) {
      const named = statement.exportClause;
      const everyNameIsType =
        named !== undefined &&
        ts.isNamedExports(named) &&
        named.elements.length > 0 &&
        named.elements.every((element) => element.isTypeOnly);
      add(statement, statement.moduleSpecifier, statement.isTypeOnly || everyNameIsType);
    }
  }
  return sites;
}

function targetOf(site: ImportSite): Target {
  if (!site.specifier.startsWith('.')) {
    const parts = site.specifier.split('/');
    const name = site.specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? '');
    return { kind: 'package', name };
  }
  const repoPath = path
    .relative(root, path.resolve(path.dirname(site.file), site.specifier))
    .split(path.sep)
    .join('/')
    .replace(/\.(js|ts)$/, '');
  const first = repoPath.split('/')[0] as Layer;
  return { kind: 'local', layer: LAYERS.includes(first) ? first : undefined, repoPath };
}

const breaches: string[] = [];
for (const layer of LAYERS) {
  const rule = RULES[layer];
  if (!rule) continue;
  for (const file of sourceFiles(path.join(root, layer))) {
    for (const site of importsOf(file)) {
      if (rule.allows(targetOf(site), site)) continue;
      const where = path.relative(root, file).split(path.sep).join('/');
      breaches.push(`${where}:${site.line}: '${site.specifier}': ${rule.why}`);
    }
  }
}

if (breaches.length > 0) {
  console.error(`${breaches.length} import(s) break the layer rule:\n${breaches.join('\n')}`);
  process.exit(1);
}
console.log('layers: every import follows the rule');
