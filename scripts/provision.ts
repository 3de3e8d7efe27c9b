/**
 * `npm run provision`: makes sure both Temporal servers (and the Compose CLI that validates
 * docker-compose.yml) and the S3-compatible server of the object-store tests are built and
 * cached, and that Chromium (for the browser tests) is installed. Idempotent; a cached run takes
 * about a second.
 */
import { ensureChromium } from './chromium';
import { ensureSeaweedfs } from './s3-server';
import { ensureServers, MissingToolError } from './servers';

async function main(): Promise<void> {
  const started = Date.now();
  const log = (line: string) => console.log(`[provision] ${line}`);
  const paths = await ensureServers(log, { compose: true });
  log(`temporal CLI:  ${paths.temporalCli ?? '(none: the SDK will download it)'}`);
  log(`test server:   ${paths.testServer}`);
  log(`compose CLI:   ${paths.composeCli}`);
  // Without Go, the rest still serves: the S3 store tests say they were skipped and why.
  const s3Server = await ensureSeaweedfs(log).catch((error: unknown) => {
    if (!(error instanceof MissingToolError)) throw error;
    return `(none: ${error.message}; the S3 store tests will be skipped)`;
  });
  log(`S3 server:     ${s3Server}`);
  // The browser tests drive the Temporal UI in the system's Chromium.
  log(`chromium:      ${await ensureChromium(log)}`);
  log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

main().catch((error: unknown) => {
  console.error(`[provision] ${error instanceof MissingToolError ? error.message : String(error)}`);
  process.exit(1);
});
