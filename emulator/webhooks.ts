import { Agent, request } from 'undici';
import type { Clock } from './clock';
import { LIMITS } from './limits';
import type { WebhookFault } from './schemas';

// Job webhooks: a POST of the job's /status body when it finishes. Anything but a 200 (or no answer)
// is a failed try; two more follow, each starting 10 s (service time) after the previous one started.
// Injected faults are decided once per delivery: lost (no call at all), duplicated (a successful
// call is sent twice), delayed (the first try starts late).

export interface WebhookDelivery {
  jobId: string;
  url: string;
  /** 1 to 3; a duplicate repeats the attempt number of the call it copies. */
  attempt: number;
  httpStatus?: number;
  error?: string;
  /** Service time at which the try was sent (or would have been, for a lost one). */
  at: number;
  duplicate?: boolean;
}

export interface Webhooks {
  deliver(jobId: string, url: string, body: unknown): void;
  addFault(rule: WebhookFault): () => void;
  deliveries(): WebhookDelivery[];
  clear(): void;
  close(): Promise<void>;
}

export function createWebhooks(deps: {
  clock: Clock;
  random: () => number;
  timeoutMs: number;
  logLimit: number;
}): Webhooks {
  const { clock } = deps;
  const agent = new Agent({ keepAliveTimeout: 1000, connections: 64 });
  let log: WebhookDelivery[] = [];
  let faults: WebhookFault[] = [];
  const inflight = new Set<AbortController>();
  let closed = false;

  function record(entry: WebhookDelivery) {
    log.push(entry);
    // Amortised trim: the log stays bounded without shifting on every push.
    if (log.length > deps.logLimit * 2) log = log.slice(-deps.logLimit);
  }

  async function post(url: string, payload: string): Promise<{ httpStatus?: number; error?: string }> {
    const abort = new AbortController();
    inflight.add(abort);
    try {
      const response = await request(url, {
        method: 'POST',
        body: payload,
        headers: { 'content-type': 'application/json', 'user-agent': 'serverless-emulator-webhook' },
        dispatcher: agent,
        signal: abort.signal,
        headersTimeout: deps.timeoutMs,
        bodyTimeout: deps.timeoutMs,
      });
      await response.body.dump();
      return { httpStatus: response.statusCode };
    } catch (error) {
      return { error: error instanceof Error ? error.message : String(error) };
    } finally {
      inflight.delete(abort);
    }
  }

  function attempt(jobId: string, url: string, payload: string, n: number, duplicate: boolean) {
    if (closed) return;
    const at = clock.now();
    void post(url, payload).then((result) => {
      if (closed) return;
      record({ jobId, url, attempt: n, at, ...result });
      if (result.httpStatus === 200) {
        if (duplicate) {
          void post(url, payload).then((copy) => {
            if (!closed) record({ jobId, url, attempt: n, at: clock.now(), duplicate: true, ...copy });
          });
        }
        return;
      }
      if (n >= LIMITS.webhookTries) return;
      clock.at(Math.max(clock.now(), at + LIMITS.webhookRetryDelayMs), () =>
        attempt(jobId, url, payload, n + 1, duplicate),
      );
    });
  }

  return {
    deliver(jobId, url, body) {
      if (closed) return;
      const fault = faults.at(-1);
      const payload = JSON.stringify(body);
      if (fault && fault.lose > 0 && deps.random() < fault.lose) {
        record({ jobId, url, attempt: 1, at: clock.now(), error: 'lost (injected fault)' });
        return;
      }
      const duplicate = !!fault && fault.duplicate > 0 && deps.random() < fault.duplicate;
      const delay = fault?.delayMs ?? 0;
      if (delay > 0) clock.after(delay, () => attempt(jobId, url, payload, 1, duplicate));
      else attempt(jobId, url, payload, 1, duplicate);
    },
    addFault(rule) {
      faults.push(rule);
      return () => {
        faults = faults.filter((r) => r !== rule);
      };
    },
    deliveries: () => log.slice(-deps.logLimit),
    clear() {
      log = [];
      faults = [];
    },
    async close() {
      closed = true;
      for (const abort of inflight) abort.abort();
      await agent.destroy();
    },
  };
}
