/**
 * Reading workflow histories in tests. Payload data are bytes (JSON as UTF-8), which
 * JSON.stringify prints as base64 (protobufjs' toJSON) or as arrays of numbers, either way hiding
 * every string inside them: a search of `JSON.stringify(history)` for a value that sits in a
 * payload can never match. `historyText` decodes every byte field first.
 */

/**
 * A workflow history as text with every payload decoded, for searching: byte fields holding JSON
 * are embedded as the values they encode (so `"key":"value"` reads as it would in the payload,
 * not escaped), any other bytes as UTF-8 text.
 */
export function historyText(history: unknown): string {
  const plain = (value: unknown): unknown => {
    if (value instanceof Uint8Array) {
      const text = Buffer.from(value).toString('utf8');
      try {
        return JSON.parse(text);
      } catch {
        return text;
      }
    }
    if (Array.isArray(value)) return value.map(plain);
    if (value && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, plain(inner)]));
    }
    return value;
  };
  return JSON.stringify(plain(history));
}

/** Types of the activities a history scheduled, in order. */
export function scheduledActivities(history: {
  events?: Array<{
    activityTaskScheduledEventAttributes?: { activityType?: { name?: string | null } | null } | null;
  }> | null;
}): string[] {
  return (history.events ?? []).flatMap((event) => {
    const name = event.activityTaskScheduledEventAttributes?.activityType?.name;
    return name ? [name] : [];
  });
}
