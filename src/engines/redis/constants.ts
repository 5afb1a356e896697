/** Defaults of the Redis scale-out backend that change behaviour, in one place. */

/** Environment variable read when no Redis URL is given. */
export const REDIS_URL_ENV = 'TROUPE_REDIS_URL';

/** BullMQ queue that carries agent jobs. Supervisors and workers must agree on it. */
export const DEFAULT_QUEUE_NAME = 'troupe-agents';

/** Prefix of every Redis key troupe and BullMQ write for the queue. */
export const DEFAULT_KEY_PREFIX = 'troupe';

/** BullMQ job name of an agent run (the job id is the agent id). */
export const AGENT_JOB_NAME = 'agent';

/** BullMQ job name of a batch of agent runs (src/protocol/redis.ts `BatchJobData`). */
export const BATCH_JOB_NAME = 'agents';

/**
 * Agents one batch job carries at most: a supervisor adds the agents it runs in one event-loop
 * turn as one job per this many (one job per agent cost Redis three BullMQ scripts per agent).
 */
export const DEFAULT_MAX_BATCH_SIZE = 32;

/** An agent's field in its batch's hash once it was handed off to a job of its own. */
export const HANDED_OFF = 'h';

/**
 * A field of a batch's hash (no agent id has a `~`) its supervisor sets, with `retainSeconds: 0`,
 * when it has read every agent of the batch but could not remove it (a worker still held the
 * job): the worker that ends the batch then deletes the hash and has the job removed as it
 * completes (batch-job.ts), instead of leaving both UNREAD_JOB_TTL_MS to a supervisor that closed.
 */
export const BATCH_READ = '~read';

/**
 * Agents of a batch whose state a worker reads from the batch's hash in one round trip when it
 * takes the batch (a small integer each, never their outcomes).
 */
export const BATCH_STATE_PAGE = 1_000;

/**
 * How long a running supervisor waits for a lost Redis connection to come back before it fails its
 * agents with `redis_unreachable` (a restart with a large AOF to load takes a while; a server that
 * is gone for good must not hold the run for ever).
 */
export const DEFAULT_REDIS_DOWN_TIMEOUT_MS = 60_000;

/** How long a supervisor or worker waits for Redis when it starts before giving up. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/** Agent jobs one worker process runs at once (agents are I/O-bound: they wait on providers). */
export const DEFAULT_WORKER_CONCURRENCY = 64;

/**
 * How long a `wait_for_instruction` blocks on the inbox stream (XREAD BLOCK) before the job is
 * parked: moved to BullMQ's delayed set, its lock and worker slot released. Waits shorter than this
 * never park.
 */
export const DEFAULT_PARK_AFTER_MS = 5_000;

/** A wait without a limit parks for this long; it parks again if it wakes with nothing to read. */
export const PARK_WITHOUT_LIMIT_MS = 365 * 24 * 3_600_000;

/** BullMQ job lock: a worker that misses renewing it this long is considered dead. BullMQ's default. */
export const DEFAULT_LOCK_DURATION_MS = 30_000;

/** How often workers look for jobs whose lock expired (stalled jobs). BullMQ's default. */
export const DEFAULT_STALLED_INTERVAL_MS = 30_000;

/** Stalls (worker deaths) one agent job survives before it fails. Matches the threads engine's restart cap. */
export const DEFAULT_MAX_STALLED_COUNT = 3;

/** How often a supervisor reads job state of its running agents, in case a result signal was lost. */
export const DEFAULT_RECONCILE_INTERVAL_MS = 1_000;

/**
 * Entries BullMQ keeps in a queue's events stream (`<prefix>:<queue>:events`, its
 * `streams.events.maxLen`; BullMQ's default is 10,000). Every job end there carries the job's
 * return value, an agent's outcome unmasked, and troupe never reads the stream (it reads job
 * state): 0 makes BullMQ trim it to nothing each time a job finishes, so it holds the events
 * since the last job ended.
 */
export const EVENTS_STREAM_MAX_LENGTH = 0;

/**
 * Bytes of one entry of a supervisor's signal or request stream it reads at most. The largest
 * legitimate signal is a tool call's end with its output (MAX_TOOL_RESULT_CHARS, 4,000,000
 * characters) and arguments (DEFAULT_MAX_OUTPUT_CHARS, 2,000,000), at most 3 bytes each in UTF-8
 * JSON (4 for a surrogate pair, 2 characters): about 18 MB. Workers send one larger without it
 * (an `ended` signal without its outcome, which the supervisor then reads from the batch), or not
 * at all, and split their batches of signals at it; a supervisor refuses a larger entry unparsed,
 * failing the agent it names (`signal_too_large`).
 */
export const MAX_STREAM_ENTRY_BYTES = 32 * 1024 * 1024;

/**
 * Bytes of one stored outcome (a job's `returnvalue`, an agent's field of its batch's hash) a
 * supervisor reads at most. An outcome carries the agent's answer and result, each from one model
 * response (DEFAULT_MAX_OUTPUT_CHARS, 2,000,000 characters, up to 6 bytes each JSON-escaped: about
 * 12 MB), and bounded fields beside: a larger value is not an outcome a worker wrote. Its size is
 * read first (HSTRLEN) and the value never sent: the agent fails `outcome_too_large`.
 */
export const MAX_OUTCOME_BYTES = 64 * 1024 * 1024;

/** Bytes one read of a supervisor's stream returns at most (past its first entry). */
export const MAX_STREAM_READ_BYTES = 64 * 1024 * 1024;

/**
 * Characters of the message of the failure an `ended` signal carries (src/protocol/redis.ts
 * `SignalFailure`) at most, and of its fields as JSON: a longer message is cut, longer fields are
 * left out. Keeps the signal small whatever the error said.
 */
export const MAX_SIGNAL_FAILURE_CHARS = 4_096;

/** Approximate cap on entries of a supervisor's signal stream (signals are best effort). */
export const SIGNAL_STREAM_MAX_LENGTH = 100_000;

/**
 * With `retainSeconds: 0`, a finished agent job is removed by its supervisor once it has read the
 * outcome; one it never reads (it stopped first) expires this long after it ended (retention.ts).
 */
export const UNREAD_JOB_TTL_MS = 24 * 3_600_000;

/**
 * With `retainSeconds: 0`, how long `close()` waits at most for workers to finish the batch jobs
 * whose agents it has all read, so it can remove them and their hashes: a worker holding a batch
 * refuses its removal, and signals the batch's last agent's end just before it finishes the job.
 * One still held past this is marked BATCH_READ: its worker removes it as it ends the batch. Tried
 * every CLOSE_BATCH_REMOVAL_POLL_MS.
 */
export const CLOSE_BATCH_REMOVAL_MS = 2_000;
export const CLOSE_BATCH_REMOVAL_POLL_MS = 50;

/** Signal and request streams expire this long after their last write (a supervisor that vanished). */
export const STREAM_IDLE_TTL_MS = 24 * 3_600_000;

/** A cancel flag outlives the cancel by this long, so a job picked up late still sees it. */
export const CANCEL_FLAG_TTL_MS = 7 * 24 * 3_600_000;

/** Replies to host-tool calls expire if the worker that asked is gone. */
export const REPLY_TTL_MS = 3_600_000;

/**
 * How long a worker waits for the supervisor to answer the `traceparent` of a traced tool call's
 * `execute_tool` span before it runs the tool in the agent's span context instead.
 */
export const TOOL_SPAN_WAIT_MS = 5_000;

/** Values one `secrets` signal carries at most (a worker sends more in several). */
export const SECRETS_PER_SIGNAL = 64;

/**
 * A credential registered on a worker longer than this is not sent to supervisors (no key is):
 * with SECRETS_PER_SIGNAL it bounds a signal, which a supervisor reads whole.
 */
export const MAX_FORWARDED_SECRET_CHARS = 4_096;

/**
 * The base64 ciphertext of a `secrets` signal at most: SECRETS_PER_SIGNAL values of
 * MAX_FORWARDED_SECRET_CHARS characters as a JSON array, every character escaped (`\uXXXX`, 6
 * bytes). A supervisor refuses a longer one (`oversize`) before decrypting it.
 */
export const MAX_SEALED_SECRETS_CHARS =
  4 * Math.ceil((SECRETS_PER_SIGNAL * (MAX_FORWARDED_SECRET_CHARS * 6 + 3) + 2) / 3);

/**
 * Seals a supervisor remembers having opened (their ephemeral keys): one seen again is refused as
 * replayed (`replayed`). Older ones are forgotten; a replay of one only registers again values
 * the supervisor holds already.
 */
export const MAX_OPENED_SEALS = 4_096;

/**
 * Supervisors (each with its key) a worker remembers having sent its credentials to; past this
 * many, one running no agent there is forgotten (and is sent the worker's own again, and what its
 * later runs register, should it run one).
 */
export const MAX_SECRET_SUPERVISORS = 1_024;

/** A concurrency slot whose holder died is reclaimed after this lease. */
export const ADMISSION_SLOT_LEASE_MS = 10 * 60_000;

/** Bounds of the re-poll delay while an admission limit (not a 429 pause) is full. */
export const ADMISSION_POLL_MIN_MS = 5;
export const ADMISSION_POLL_MAX_MS = 200;

/** Idle blocking connections a worker keeps for inbox reads and host-tool replies. */
export const BLOCKING_POOL_IDLE = 8;

/**
 * How often a supervisor's stream reader says it is alive (`supervisorAlive`, see
 * supervisor-streams.ts), and how long the key outlives the last beat: a worker waiting for a host
 * call's reply gives the call up once the key it saw is gone (see host-calls.ts).
 */
export const SUPERVISOR_HEARTBEAT_MS = 2_000;
export const SUPERVISOR_ALIVE_MS = 15_000;

/** One BLPOP of a host call's reply blocks this long, then the supervisor's heartbeat is checked. */
export const HOST_REPLY_POLL_MS = 2_000;

/** How often a worker says it is alive (see presence.ts). */
export const WORKER_HEARTBEAT_MS = 2_000;

/** A worker not heard from for this long is not counted as connected. */
export const WORKER_ALIVE_MS = 3 * WORKER_HEARTBEAT_MS;

/**
 * Jobs of a supervisor that no worker has taken for this long, while none of its agents started
 * either, make it say so (the `jobs:unserved` event, with the number of workers connected).
 */
export const DEFAULT_UNSERVED_AFTER_MS = 5_000;
