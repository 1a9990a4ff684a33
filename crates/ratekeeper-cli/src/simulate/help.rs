//! `simulate`'s help: the text above and below its options, with the JSON
//! schema.

/// `simulate --help` text above the options.
pub const LONG_ABOUT: &str = "\
Run an arrival pattern through one or more rate limiters on a virtual clock, \
instantly, and show when each op was granted and how long it waited: a \
timeline per limiter, a summary, and with --plot a picture.

The model is open loop, as a load generator's schedule: every arrival asks \
its limiter for one permit at its own arrival time (RateLimiter::reserve on a \
manual clock set to that time), whether or not earlier ops are still waiting; \
an op that waits holds up nothing. Each limiter gets the same arrivals on its \
own clock, and is built at time 0 (Guava's SmoothWarmingUp therefore starts \
cold; SmoothBursty starts with no stored permits).

Arrivals (--arrivals): steps separated by ';', on a timeline from 0s. A \
cursor starts at 0s:
  burst N [@TIME]     N arrivals at once, at the cursor, or at TIME (which \
moves the cursor there; steps never go back in time)
  every DUR for DUR   one arrival every DUR from the cursor, for DUR; the \
cursor moves to the end
  rate RATE for DUR   RATE arrivals per second (e.g. 100, 2.5k) for DUR; the \
cursor moves to the end
  idle DUR            the cursor moves on by DUR
Durations and times are one word each: 0s, 50ms, 2s, 1m30s. At most 1000000 \
arrivals.

Clients (--client NAME=PATTERN, instead of --arrivals, once per client): \
each client has its own pattern in the grammar above; their arrivals are \
merged in time order (at one instant, in the order given). Without --keyed \
the clients share each limiter, and the report says what each got. With \
--keyed each --limiter runs once per client, through ratekeeper's Keyed map \
on the same manual clock (one shard, so the cap is exact): a client's \
limiter is built when it first arrives. Keyed takes every kind but pool. \
--max-keys N caps the clients tracked at once [100000]; a new client that \
finds the map full drops the clients that are fresh or hold only credit, \
and if every tracked client holds debt, --overflow decides [deny]:
  deny      refuse the new client's op (counted as denied new)
  shared    decide it on one shared limiter of the same kind (overflowed)
  evict     drop the client with the least debt, forgiving it (evicted in \
debt), and track the new one
With --client, the summary's target is each client's rate (--keyed) or the \
clients' together, and a table per limiter gives each client's arrivals, \
granted, refused, achieved rate, wait p99 and max, and last grant; with \
--keyed a line gives the map's live clients, evictions by kind (fresh, with \
credit, in debt), denied new ops and overflowed ops. --plot then takes one \
--limiter and draws one line per client (its arrivals thin).

Limiters (--limiter KIND:ARGS, once per limiter to compare, at most 9): ARGS \
are comma-separated fields in the order shown; any field may instead be \
written NAME=VALUE (e.g. warmup:10,2s,cold_factor=4), and named fields come \
last. RATE is operations per second in the rate-spec number format: 10, 2.5k, \
1M.
  pacer:RATE[,STRICTNESS]       ratekeeper's Pacer. STRICTNESS as `pace \
--strictness`: 0 average, between 0 and 1 burst compensation, 1 strict, above \
1 burst ratio [default: 1.1]; fields: rate, strictness
  pool:RATE[,BURST][,FILL]      nosqlbench's token pool with burst ratio BURST \
(at least 1) [1.1], filled every FILL (1us to 1s) [1ms], as by its filler \
thread (`pace --fill thread`) on a perfect timer; fields: rate, burst, fill
  bursty:RATE[,MAX_BURST]       Guava's SmoothBursty: idle time stores up to \
MAX_BURST seconds of permits [1]; fields: rate, max_burst
  warmup:RATE,WARMUP[,COLD]     Guava's SmoothWarmingUp: warm-up period WARMUP \
(required; 0s for none), cold factor COLD (at least 1) [3]; fields: rate, \
warmup, cold_factor
  refill:RATE[,PERIOD][,CAPACITY][,INITIAL][,TIMEOUT]   Resilience4j's \
RefillLimiter: RATE x PERIOD permits per PERIOD [1s] (a whole number), a \
bucket of CAPACITY permits [that limit] holding INITIAL permits at time 0 \
[that limit]; fields: rate, period, capacity, initial, timeout
  cycle:RATE[,PERIOD][,TIMEOUT]  Resilience4j's CycleLimiter: RATE x PERIOD \
permits at the start of each PERIOD cycle [1s]; fields: rate, period, timeout
With refill and cycle an arrival whose wait would exceed TIMEOUT [5s, \
Resilience4j's] is refused at once and gets no permit; the other limiters \
grant every arrival. bursty and warmup keep Guava's whole-microsecond \
arithmetic exactly at or below 100000 ops/s; above, they keep their schedule \
in whole nanoseconds (JSON resolution \"nanos\"): whole microseconds would \
charge a permit up to half too little, and above 1000000 ops/s nothing at all.

Timeline (per limiter, the first --rows ops in arrival order; times in \
seconds from 0):
  arrival     when the op arrived
  scheduled   when the limiter's ideal schedule had it: the Pacer's slot, the \
pool's tokens; Guava's and Resilience4j's limiters keep no schedule, so for \
them it is the grant
  granted     when the limiter let it go, or \"refused\"
  wait        granted - arrival: how long the op waited for its permit
  behind      granted - scheduled: how far behind its own schedule the \
limiter granted it (the library's wait time, which a load generator adds to \
the response time)

Summary (per limiter; durations with 3 significant digits, exact in --json):
  target      the limiter's rate (warmup: the stable rate). Where the \
limiter's integer arithmetic gives a rate more than 0.1% off it (the Pacer \
and the pool give each op floor(1e9 / rate) whole nanoseconds: pacer:510M \
runs at 1e9 ops/s; bursty and warmup charge whole microseconds, nanoseconds \
above 100000 ops/s; refill a permit every floor(period / limit) ns), the \
limiter's line above says \"effective\" with that rate and why, and a warning \
on standard error says so too
  granted     ops granted; refused: ops refused (refill, cycle)
  achieved    granted / (last grant - first grant + one interval), where an \
interval is 1 / target: ops granted exactly one interval apart read as the \
target rate
  max burst   the most ops granted in a row, each less than half an interval \
after the one before: 1 means no two ops closer than half an interval
  wait        p50, p99 and max of the granted ops' waits (exact: nearest rank)
  behind      the most any op was behind the limiter's schedule
  last grant  when the last op went

Plot (--plot FILE, SVG or PNG by the extension): the upper panel shows the \
ops granted per time bucket (--bucket) as a rate, one line per limiter, with \
the arrivals in grey and each target rate dashed; the lower panel shows the \
longest wait of the ops granted in each bucket. Standard error says where \
it went: wrote FILE.";

/// Examples, shown by `simulate -h` and `simulate --help`.
pub const AFTER_HELP: &str = "\
Examples:
  ratekeeper simulate --arrivals 'burst 20 @0s; every 50ms for 3s; idle 2s; burst 10' --limiter pacer:10,1.0 --limiter pacer:10,1.5 --limiter warmup:10,2s
  ratekeeper simulate --arrivals 'every 40ms for 2s; idle 2s; burst 30; every 40ms for 2s' --limiter pacer:25,1 --limiter pacer:25,1.5 --limiter pacer:25,0 --limiter warmup:25,1s --rows 0 --plot compare.svg
  ratekeeper simulate --arrivals 'rate 200 for 1s' --limiter refill:100,100ms,capacity=20,timeout=50ms --limiter cycle:100,100ms,timeout=50ms
  ratekeeper simulate --arrivals 'burst 5; idle 1s; burst 5' --limiter pool:10,1.5 --json
  ratekeeper simulate --client 'a=every 50ms for 2s' --client 'b=burst 5; every 100ms for 2s' --limiter pacer:10,1 --keyed --max-keys 1 --overflow shared --rows 0 --plot clients.svg";

/// `simulate --help` text below the options: examples and the JSON schema.
pub const AFTER_LONG_HELP: &str = "\
Examples:
  ratekeeper simulate --arrivals 'burst 20 @0s; every 50ms for 3s; idle 2s; burst 10' --limiter pacer:10,1.0 --limiter pacer:10,1.5 --limiter warmup:10,2s
  ratekeeper simulate --arrivals 'every 40ms for 2s; idle 2s; burst 30; every 40ms for 2s' --limiter pacer:25,1 --limiter pacer:25,1.5 --limiter pacer:25,0 --limiter warmup:25,1s --rows 0 --plot compare.svg
  ratekeeper simulate --arrivals 'rate 200 for 1s' --limiter refill:100,100ms,capacity=20,timeout=50ms --limiter cycle:100,100ms,timeout=50ms
  ratekeeper simulate --arrivals 'burst 5; idle 1s; burst 5' --limiter pool:10,1.5 --json
  ratekeeper simulate --client 'a=every 50ms for 2s' --client 'b=burst 5; every 100ms for 2s' --limiter pacer:10,1 --keyed --max-keys 1 --overflow shared --rows 0 --plot clients.svg

JSON output (--json): one object on one line, the same report as the text. \
Durations and times are integer nanoseconds from 0, rates are ops per second \
(floating point):
  schema           integer  the schema's version, 1: raised when a field is \
renamed, dropped or changes meaning (not when one is added)
  pattern          string   the arrival pattern, canonical; null with --client
  clients          array    (--client) {\"client\", \"pattern\", \"arrivals\"} per \
client, in order
  keyed            object   (--keyed) {\"max_keys\", \"overflow\": \"deny\", \
\"shared\" or \"evict\"}
  arrivals         integer  how many arrivals it gives
  end_ns           integer  where it ends: its last arrival, or the end of its \
last every, rate or idle step
  model            string   \"open_loop\"
  rows             integer  timeline rows per limiter (--rows); null for all
  limiters         array    one object per --limiter, in order:
    limiter          string   the --limiter value as given
    kind             string   \"pacer\", \"pool\", \"bursty\", \"warmup\", \"refill\" or \"cycle\"
    target_rate      number   the limiter's rate
    effective_rate   number   the rate its integer arithmetic gives (see \
Summary above); null for a limiter that does not limit at all
    strictness       number   (pacer) its strictness
    strictness_mode  string   (pacer) \"average\", \"burst_compensation\", \"strict\" or \"burst_ratio\"
    burst_ratio      number   (pool) its burst ratio
    fill_interval_ns integer  (pool) how often it is filled
    max_burst_seconds number  (bursty) seconds of permits idle time may store
    warmup_ns        integer  (warmup) the warm-up period
    cold_factor      number   (warmup) the cold factor
    resolution       string   (bursty, warmup) the schedule's unit: \"micros\" \
(Guava's, at or below 100000 ops/s) or \"nanos\" (above)
    limit_for_period integer  (refill, cycle) permits per refresh period
    refresh_period_ns integer (refill, cycle) the refresh period
    timeout_ns       integer  (refill, cycle) the longest wait granted
    capacity         integer  (refill) the most permits the bucket stores
    initial_permits  integer  (refill) the permits in the bucket at time 0
    ops              integer  ops granted
    refused          integer  ops refused (0 but for refill and cycle)
    first_grant_ns   integer  the first grant; null if none
    last_grant_ns    integer  the last grant; null if none
    rate_span_ns     integer  the span the achieved rate is over: last - first \
grant + one interval; 0 if none
    achieved_rate    number   ops / rate span; 0 if none
    max_burst        integer  see Summary above
    wait_ns          object   {\"p50\", \"p90\", \"p95\", \"p99\", \"p999\", \"max\", \"mean\"} of \
granted - arrival over the granted ops: exact, nearest rank; mean rounded down
    behind_ns        object   the same of granted - scheduled
    timeline         array    the first --rows ops in arrival order: {\"op\" \
(1-based), \"client\" (with --client), \"arrival_ns\", \"refused\", \"scheduled_ns\", \"granted_ns\", \
\"wait_ns\", \"behind_ns\"}; the last four are null for a refused op
    timeline_omitted integer  ops left out of the timeline
    clients          array    (--client) per client, in order: {\"client\", \
\"arrivals\", \"ops\" (granted), \"refused\", \"first_grant_ns\", \
\"last_grant_ns\" (null if none), \"achieved_rate\" (as above, per client), \
\"wait_ns\" (as above)}
    keyed            object   (--keyed) the map after the run: {\"live_keys\", \
\"max_keys\", \"evicted_fresh\", \"evicted_credit\", \"evicted_debt\", \
\"denied_new\", \"overflowed\"}";
