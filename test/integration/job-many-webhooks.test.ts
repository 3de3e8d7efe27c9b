/** 1,000 jobs in progress on one worker with default slots, with webhooks (job-many-suite.ts). */
import { manyJobsSuite } from './job-many-suite';

manyJobsSuite(true);
