import type { FaultOperation, FaultRule } from './schemas';

// Injected faults, matched per request by operation (or '*') and optionally endpoint. The first
// matching rule whose dice roll passes applies; `times` counts applications, then the rule goes.

export interface AppliedFault {
  rule: FaultRule;
  /** Aborted when the rule is removed: answers a 'slow' rule is holding go out at once. */
  released: AbortSignal;
}

export interface Faults {
  add(rule: FaultRule): () => void;
  match(operation: Exclude<FaultOperation, '*'>, endpointId: string | undefined): AppliedFault | undefined;
  clear(): void;
}

interface Entry {
  rule: FaultRule;
  left: number;
  release: AbortController;
}

export function createFaults(random: () => number): Faults {
  let rules: Entry[] = [];

  // Running out of `times` stops matching but does not release held answers; removal does.
  const unlist = (entry: Entry) => {
    rules = rules.filter((r) => r !== entry);
  };

  return {
    add(rule) {
      const entry: Entry = {
        rule,
        left: rule.times ?? Number.POSITIVE_INFINITY,
        release: new AbortController(),
      };
      rules.push(entry);
      return () => {
        unlist(entry);
        entry.release.abort();
      };
    },
    match(operation, endpointId) {
      for (const entry of rules) {
        const { rule } = entry;
        if (rule.operation !== '*' && rule.operation !== operation) continue;
        if (rule.endpointId !== undefined && rule.endpointId !== endpointId) continue;
        if (rule.probability < 1 && random() >= rule.probability) continue;
        entry.left--;
        if (entry.left <= 0) unlist(entry);
        return { rule, released: entry.release.signal };
      }
      return undefined;
    },
    clear() {
      for (const entry of rules) entry.release.abort();
      rules = [];
    },
  };
}
