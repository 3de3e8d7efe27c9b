/**
 * How often a worker sends an activity's heartbeat, against the shortest heartbeat timeout the
 * library sets.
 *
 * The SDK sends a heartbeat at most every 0.8 × the activity's heartbeat timeout (capped by the
 * worker's maxHeartbeatThrottleInterval). For a submit under a 60 s lease (a 15 s heartbeat timeout)
 * that leaves 3 s, and 1 s for a 10 s lease's extension (5 s): a loaded worker or server misses that,
 * the activity times out although it runs, and its submit counts as uncertain (the job is sent again
 * after its lease) or its extension as failed. The worker caps the throttle so that every heartbeat
 * timeout of the library has several heartbeats in it.
 */

/** The shortest heartbeat timeout the library sets: a try of the 10 s lease's extension. */
export const SHORTEST_HEARTBEAT_TIMEOUT_MS = 5_000;

/** The worker's maxHeartbeatThrottleInterval: a running activity's heartbeat reaches the server at least this often. */
export const HEARTBEAT_THROTTLE_MS = 1_000;
