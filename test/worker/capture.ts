/** A pino destination that keeps every line, so a test can search what was logged. */
export function captureLines(): { write(line: string): void; lines: string[]; text(): string } {
  const lines: string[] = [];
  return {
    lines,
    write(line: string) {
      lines.push(line);
    },
    text: () => lines.join(''),
  };
}
