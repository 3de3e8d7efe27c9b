/**
 * The layer rule of the library (docs/architecture.md's folder table), checked on every import:
 *
 *   client, worker  ->  workflows  ->  engine  ->  contracts  <-  activities  ->  api
 *   client, worker, activities  ->  stores  ->  contracts
 *
 * - contracts/ (schemas, types, failure names and pure rules that the layers share) imports only
 *   zod, @temporalio/common (the SDK's own shared layer), api/schemas and types of api/errors;
 * - engine/ (the pure per-item machine and rules) imports only contracts/ and zod: no Temporal, no
 *   node built-ins, nothing else of the library, so it runs the same in a workflow and a unit test;
 * - workflows/ imports @temporalio/workflow, @temporalio/common, zod, engine/, contracts/ and
 *   api/schemas; activities/ only as `import type` (the interfaces proxyActivities needs);
 * - stores/ (the local and object-store stores) imports only contracts/, api/schemas, api/errors
 *   and packages (their SDKs): the client, the activities and the worker share it; workflows/
 *   never import it (a workflow never touches a store);
 * - activities/ never imports workflows/, client/ or worker/;
 * - client/ imports workflows/ only for workflow types (`import type`) and names: the signal, query
 *   and update definitions and search attribute keys;
 * - api/ knows nothing of the layers above it;
 * - emulator/ (the service's stand-in) imports nothing of the library: packages and itself only.
 *
 * Signal, query and update definitions live in one place per workflow family, its definitions file
 * (workflows/<family>/<family>-definitions.ts; the endpoint gate's: endpoint-gate-definitions.ts),
 * and nowhere else: only those files may import defineSignal, defineQuery or defineUpdate. They
 * hold definitions and the small answer types of their queries; the shapes they carry are in
 * contracts/. (Not in contracts/ itself: defining one needs @temporalio/workflow.)
 *
 * And no import circle anywhere in the library's folders (type-only imports count: a circle of
 * types is still two modules that cannot be read apart). Tests, benchmarks and scripts are not
 * checked for circles.
 *
 * Prints every import that breaks a rule and every circle, and exits 1 if there is one.
 *
 *   npm run check:layers
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(__dirname, '..');
const LAYERS = [
  'api',
  'contracts',
  'engine',
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
  /** The names it imports (`import { a, b as c }`: a, b). */
  names: string[];
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

/** A family's signal, query and update definitions: the one place each is defined. */
const DEFINITION_FILES = /^workflows\/[a-z]+\/[a-z-]+-definitions$/;
/** What client/ may import from workflows/ for its value: the definitions and search attribute keys. */
const NAME_FILES = new RegExp(`${DEFINITION_FILES.source}|^workflows\\/shared\\/search-attributes$`);
const DEFINE_FUNCTIONS = ['defineSignal', 'defineQuery', 'defineUpdate'];

const WORKFLOW_PACKAGES = ['@temporalio/workflow', '@temporalio/common', 'zod'];

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
  engine: {
    why: 'engine/ is pure: it imports only contracts/ and zod (no @temporalio/*, no node built-ins)',
    allows: (target) => {
      if (target.kind === 'package') return target.name === 'zod';
      return target.layer === 'engine' || target.layer === 'contracts';
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
    why: 'workflows/ imports @temporalio/workflow|common, zod, engine/, contracts/, api/schemas, and activities/ only as `import type`',
    allows: (target, site) => {
      if (target.kind === 'package') return WORKFLOW_PACKAGES.includes(target.name);
      if (target.layer === 'activities') return site.typeOnly;
      if (target.layer === 'api') return target.repoPath.startsWith('api/schemas/');
      return ['workflows', 'engine', 'contracts'].includes(target.layer ?? '');
    },
  },
  emulator: {
    why: 'emulator/ stands in for the service: it imports nothing of the library',
    allows: (target) => target.kind === 'package' || target.layer === 'emulator',
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
  const add = (
    node: ts.Node,
    specifier: ts.Expression | undefined,
    typeOnly: boolean,
    names: readonly (ts.ImportSpecifier | ts.ExportSpecifier)[] = [],
  ) => {
    if (!specifier || !ts.isStringLiteral(specifier)) return;
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    const imported = names.map((element) => (element.propertyName ?? element.name).text);
    sites.push({ file, line, specifier: specifier.text, typeOnly, names: imported });
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
      add(
        statement,
        statement.moduleSpecifier,
        Boolean(clause?.isTypeOnly) || everyNameIsType,
        named && ts.isNamedImports(named) ? named.elements : [],
      );
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

/** The source file a local import resolves to (`x` -> x.ts, x/index.ts), if it is one. */
function fileOf(repoPath: string): string | undefined {
  for (const candidate of [`${repoPath}.ts`, `${repoPath}.mts`, `${repoPath}/index.ts`]) {
    if (existsSync(path.join(root, candidate))) return candidate;
  }
  return undefined;
}

/** The strongly connected components of more than one module (or a module importing itself). */
function circles(graph: Map<string, Set<string>>): string[][] {
  // Tarjan's algorithm, iterative so that a deep import chain cannot overflow the stack.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const found: string[][] = [];
  let next = 0;
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: { node: string; edges: string[]; at: number }[] = [];
    const enter = (node: string) => {
      index.set(node, next);
      low.set(node, next);
      next += 1;
      stack.push(node);
      onStack.add(node);
      work.push({ node, edges: [...(graph.get(node) ?? [])], at: 0 });
    };
    enter(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      if (frame.at < frame.edges.length) {
        const to = frame.edges[frame.at]!;
        frame.at += 1;
        if (!index.has(to)) enter(to);
        else if (onStack.has(to)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== frame.node);
      if (component.length > 1 || graph.get(frame.node)?.has(frame.node)) found.push(component.sort());
    }
  }
  return found;
}

/** A repo path without its extension, as the name rules read it. */
function stem(repoPath: string): string {
  return repoPath.replace(/\.(ts|mts)$/, '');
}

const breaches: string[] = [];
const graph = new Map<string, Set<string>>();
const libraryFiles = [
  path.join(root, 'index.ts'),
  ...LAYERS.flatMap((layer) => sourceFiles(path.join(root, layer))),
];
for (const file of libraryFiles) {
  const where = path.relative(root, file).split(path.sep).join('/');
  const layer = where.split('/')[0] as Layer;
  const rule = RULES[layer];
  const edges = new Set<string>();
  graph.set(where, edges);
  for (const site of importsOf(file)) {
    const target = targetOf(site);
    const defines = site.names.filter((name) => DEFINE_FUNCTIONS.includes(name));
    if (
      site.specifier === '@temporalio/workflow' &&
      defines.length > 0 &&
      !DEFINITION_FILES.test(stem(where))
    )
      breaches.push(
        `${where}:${site.line}: imports ${defines.join(', ')}: signal, query and update definitions live only in workflows/<family>/*-definitions.ts`,
      );
    if (target.kind === 'local') {
      const to = fileOf(target.repoPath);
      if (to) edges.add(to);
    }
    if (!rule || rule.allows(target, site)) continue;
    breaches.push(`${where}:${site.line}: '${site.specifier}': ${rule.why}`);
  }
}
const importCircles = circles(graph);

if (breaches.length > 0) {
  console.error(`${breaches.length} import(s) break the layer rule:\n${breaches.join('\n')}`);
}
if (importCircles.length > 0) {
  console.error(
    `${importCircles.length} import circle(s), each a set of modules that import each other:\n${importCircles
      .map((component) => `  ${component.join(' <-> ')}`)
      .join('\n')}`,
  );
}
if (breaches.length > 0 || importCircles.length > 0) process.exit(1);
console.log('layers: every import follows the rule, and no import circle');
