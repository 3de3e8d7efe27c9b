/**
 * A vitest sequencer for a config of tiers (projects ordered by `sequence.groupOrder`): each tier's
 * longest files start first, in the order given, so that the files running beside them end with
 * them rather than after. On a fresh clone vitest has no durations yet and would start the longest
 * wherever their size puts them. Every other file keeps vitest's own order (a stable sort).
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export function longestFirst(longest: readonly string[]): typeof BaseSequencer {
  return class LongestFirstSequencer extends BaseSequencer {
    override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
      const rank = (spec: TestSpecification) => {
        const index = longest.findIndex((file) => spec.moduleId.endsWith(file));
        return index < 0 ? longest.length : index;
      };
      return (await super.sort(files)).sort(
        (a, b) =>
          a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || rank(a) - rank(b),
      );
    }
  };
}
