// The public API report: API Extractor reads the built declarations (dist/, so `npm run build`
// first) of every entry point the package exports and writes what each makes public to
// etc/<entry>.api.md.
//
//   node scripts/api-report.mjs          update the reports (`npm run api-report`)
//   node scripts/api-report.mjs --check  fail if a report differs from the built surface
//                                        (`npm run check:api-report`, in CI)
//
// A change to the public surface is then a visible diff of etc/ in review.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');

/** Entry point name (the report's file name) -> its declaration file in dist/. */
const ENTRY_POINTS = {
  'durable-serverless': 'dist/index.d.ts',
  api: 'dist/api/index.d.ts',
  emulator: 'dist/emulator/index.d.ts',
  worker: 'dist/worker/index.d.ts',
  workflows: 'dist/workflows/index.d.ts',
};

const temp = mkdtempSync(path.join(tmpdir(), 'api-report-'));
let failed = false;
try {
  for (const [name, declarations] of Object.entries(ENTRY_POINTS)) {
    const entry = path.join(root, declarations);
    if (!existsSync(entry)) {
      console.error(`[api-report] ${declarations} is missing: run npm run build first`);
      process.exit(1);
    }
    const config = ExtractorConfig.prepare({
      configObjectFullPath: path.join(root, 'etc', 'api-extractor.json'),
      packageJsonFullPath: path.join(root, 'package.json'),
      configObject: {
        projectFolder: root,
        mainEntryPointFilePath: entry,
        bundledPackages: [],
        compiler: { tsconfigFilePath: path.join(root, 'tsconfig.build.json') },
        apiReport: {
          enabled: true,
          reportFileName: `${name}.api.md`,
          reportFolder: path.join(root, 'etc'),
          reportTempFolder: temp,
        },
        docModel: { enabled: false },
        dtsRollup: { enabled: false },
        tsdocMetadata: { enabled: false },
        messages: {
          compilerMessageReporting: { default: { logLevel: 'warning' } },
          extractorMessageReporting: {
            default: { logLevel: 'warning' },
            // Release tags (@public, @beta) are not used: what an entry point exports is public.
            'ae-missing-release-tag': { logLevel: 'none' },
            // The report marks them `(undocumented)`; TypeDoc's reference shows what TSDoc there is.
            'ae-undocumented': { logLevel: 'none' },
            // Types reached through the API but not exported by name are listed in the report.
            'ae-forgotten-export': { logLevel: 'none', addToApiReportFile: true },
          },
          tsdocMessageReporting: { default: { logLevel: 'none' } },
        },
      },
    });
    const result = Extractor.invoke(config, {
      localBuild: !check,
      showVerboseMessages: false,
      messageCallback(message) {
        // The bundled compiler is older than the project's: its notice is not a problem.
        if (message.messageId === 'console-compiler-version-notice') message.handled = true;
      },
    });
    if (check && result.apiReportChanged) {
      console.error(
        `[api-report] the public API of ${name} changed: run npm run build && npm run api-report, ` +
          `and commit etc/${name}.api.md`,
      );
      failed = true;
    } else if (!result.succeeded) {
      console.error(`[api-report] ${name}: ${result.errorCount} errors, ${result.warningCount} warnings`);
      failed = true;
    } else {
      console.log(`[api-report] ${name}: etc/${name}.api.md ${check ? 'matches' : 'written'}`);
    }
  }
} finally {
  rmSync(temp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
