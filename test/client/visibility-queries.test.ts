/** The list queries that find the library's work in the UI and the CLI, and the values they refuse. */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../api/errors';
import { jobListQuery } from '../../client/jobs';
import { automationListQuery, batchListQuery, scheduleRunsQuery } from '../../client/visibility-queries';

describe('visibility queries', () => {
  it('finds batches by endpoint and state', () => {
    expect(batchListQuery({ endpointId: 'whisper', running: true })).toBe(
      'WorkflowType = "serverlessBatch" AND ServerlessEndpointId = "whisper" AND ExecutionStatus = "Running"',
    );
    expect(batchListQuery({ running: false })).toBe(
      'WorkflowType = "serverlessBatch" AND ExecutionStatus != "Running"',
    );
  });

  it('finds automations by name and key', () => {
    expect(automationListQuery({ name: 'resize', key: 'user-7' })).toBe(
      'WorkflowType = "automationWorkflow" AND ServerlessAutomationName = "resize" AND ServerlessAutomationKey = "user-7"',
    );
  });

  it('finds the runs of a schedule and the jobs a batch or automation started', () => {
    expect(scheduleRunsQuery('nightly', { running: true })).toBe(
      'TemporalScheduledById = "nightly" AND ExecutionStatus = "Running"',
    );
    expect(jobListQuery({ startedBy: 'batch-1' })).toBe(
      'WorkflowType = "serverlessJob" AND ParentWorkflowId = "batch-1"',
    );
  });

  it('refuses a value that would end its literal, naming the field', () => {
    expect(() => automationListQuery({ key: 'a" OR WorkflowId != "' })).toThrow(ValidationError);
    expect(() => scheduleRunsQuery("x'")).toThrow(/scheduleId/);
    expect(() => jobListQuery({ startedBy: 'b\\' })).toThrow(/filter.startedBy/);
  });
});
