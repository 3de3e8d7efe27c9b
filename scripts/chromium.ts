/**
 * Chromium for the browser tests, from the system's packages (Debian's `chromium`): Playwright
 * drives it through playwright-core, which downloads no browser of its own.
 */
import { existsSync } from 'node:fs';
import { type Log, MissingToolError, onPath, run } from './servers';

export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Installs Chromium with apt-get when it is missing; idempotent (a present browser is kept). */
export async function ensureChromium(log: Log): Promise<string> {
  if (existsSync(CHROMIUM_PATH)) return CHROMIUM_PATH;
  if (!onPath('apt-get'))
    throw new MissingToolError(
      'Chromium',
      `install it at ${CHROMIUM_PATH} (Debian: apt-get install chromium)`,
    );
  log('installing chromium from the system packages (apt-get install -y chromium)...');
  try {
    await run('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], {
      env: { DEBIAN_FRONTEND: 'noninteractive' },
      log,
    });
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new MissingToolError('Chromium', `apt-get install -y chromium failed (${why}); run it as root`);
  }
  if (!existsSync(CHROMIUM_PATH))
    throw new MissingToolError('Chromium', `apt-get installed chromium, but not at ${CHROMIUM_PATH}`);
  return CHROMIUM_PATH;
}
