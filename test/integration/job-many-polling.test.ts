/** 1,000 jobs in progress on one worker with default slots, polling only (job-many-suite.ts). */
import { manyJobsSuite } from './job-many-suite';

manyJobsSuite(false);
