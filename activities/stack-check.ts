import { Context } from '@temporalio/activity';

export function createStackCheckActivities() {
  return {
    async describeWorker(name: string): Promise<string> {
      const info = Context.current().info;
      return `${info.taskQueue} (activity ${info.activityType} for ${name}, attempt ${info.attempt})`;
    },
  };
}

export type StackCheckActivities = ReturnType<typeof createStackCheckActivities>;
