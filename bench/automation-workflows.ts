// The automation workflow with stand-in children that end at once: the bench measures the
// automation's own history, not the jobs'.
export { automationWorkflow } from '../workflows/automation/automation';

export async function serverlessJob(): Promise<{ ok: true }> {
  return { ok: true };
}
export const serverlessBatch = serverlessJob;
