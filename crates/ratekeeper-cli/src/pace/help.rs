//! `pace`'s help: the text above and below its options, with the JSON
//! schema.

/// `pace --help` text above the options.
pub const LONG_ABOUT: &str = "\
Pace worker threads through one shared rate limiter and report the achieved \
rate, the ops' wait times (with --work, their service and response times) and \
the CPU cost per permit.

Each of --threads workers loops: acquire one permit (sleeping until its slot), \
then read the limiter's clock and record the op's wait time, now minus the op's \
scheduled time (when it was due had every op kept the ideal schedule). Waits \
are measured from the scheduled time, so a worker that falls behind shows its \
lateness in every later op instead of hiding it (no coordinated omission). \
Without --work there is no work between permits: the report shows the \
limiter's own precision and cost.

The options follow; after them, how --work, each limiter, the run's \
length, --stages and --fail-if work, what the report says, and the JSON \
schema.";

/// `pace -h` text below the options: the common examples, and where the
/// rest is.
pub const AFTER_HELP: &str = "\
Examples:
  ratekeeper pace --rate 10k,1.1 --threads 2 --duration 5s
  ratekeeper pace --rate 2000 --count 200 --json
  ratekeeper pace --rate 1000 --threads 4 --work 2ms~500us --duration 3s
  ratekeeper pace --rate 100 --stages 5s:2k,10s:2k,5s:0 --threads 2
  ratekeeper pace --rate 2000,1.5 --threads 2 --duration 3s --plot pace.svg
  ratekeeper pace --limiter refill --rate 1000 --refresh-period 100ms --capacity 200 --timeout 10ms --threads 4
  ratekeeper pace --rate 1000 --threads 4 --work 2ms --duration 10s --fail-if 'response.p99>5ms' --fail-if 'rate<990' --hdr-out ops.hlog

Each limiter's options, the Redis options, more examples, the report's \
fields and the JSON schema: ratekeeper pace --help";

/// `pace --help` text below the options: the details, examples and the
/// JSON schema.
pub const AFTER_LONG_HELP: &str = concat!(
    "\
--work DUR[~JITTER] gives each op work to do after its permit: a sleep of DUR \
(emulating I/O), or with --work-cpu a spin on the clock (compute); DUR~JITTER \
draws each op's work uniformly from DUR - JITTER to DUR + JITTER (JITTER at \
most DUR; e.g. 2ms~500us), from a generator seeded by the worker's index, so \
runs draw the same durations. Each op then has three clock readings, \
scheduled, start (after its permit) and end (after its work), and the report \
gives, as wrk2 does:
  wait       start - scheduled (0 for an op let go a little before its \
scheduled time by the wait policy's early bound)
  service    end - start: the work
  response   end - scheduled = wait + service: what a caller arriving on \
schedule would have seen
A worker still busy with an earlier op's work starts its next op late; the \
op keeps its scheduled time, so the delay shows in its response time \
instead of silently stretching the schedule (no coordinated omission): with \
--rate 1000 --threads 1 --work 5ms the service stays 5ms while the response \
grows through the run. --work takes a duration greater than zero; \
--work-cpu needs --work. Each worker keeps its own histograms, merged at \
the end.

Limiters (--limiter):
  pacer   the default: ratekeeper's Pacer, a virtual schedule. The spec's burst \
ratio is its strictness unless --strictness overrides it; --precise sets its \
wait policy; --shards N splits it into N shards with work stealing.
  pool    nosqlbench's token-pool (hybrid) limiter: a pool of nanosecond tokens \
with active, burst and waiting pools. The spec's burst ratio is the pool's \
burst ratio (at least 1.0): a backlog drains at (burst - 1) x rate. --fill \
chooses where its tokens come from: inline (the default; callers refill it \
from the clock when it runs short, no thread) or thread (a filler thread \
refills it every --fill-interval, default 1ms).
  bursty  Guava's RateLimiter.create(rate), SmoothBursty: idle time stores up \
to --max-burst seconds of permits (default 1), which are then granted at once. \
A request waits only for the permits before it and charges its own to the \
next caller.
  warmup  Guava's RateLimiter.create(rate, warmupPeriod), SmoothWarmingUp: a \
limiter idle for --warmup (required) is cold: its permits are spaced \
--cold-factor (default 3) times the stable interval, speeding up to the rate \
over the warm-up period. A fresh limiter starts cold.
  bursty and warmup keep Guava's whole-microsecond arithmetic exactly at or \
below 100000 ops/s per limiter. Above, they keep their schedule in whole \
nanoseconds (JSON resolution \"nanos\"): whole microseconds would charge a \
permit up to half too little, and above 1000000 ops/s nothing at all.
  refill  Resilience4j's interface on a token bucket (refill-rate-limiter's \
RefillLimiter): limit-for-period permits per --refresh-period (default 1s), \
refilled one by one, up to --capacity (default: the limit) stored permits; it \
starts with --initial-permits (default: the limit).
  cycle   Resilience4j's default AtomicRateLimiter (CycleLimiter): \
limit-for-period permits at the start of each --refresh-period cycle \
(default 1s), counted from the limiter's creation; unused permits do not \
carry over.
Each limiter's options are refused with the others: --strictness, \
--precise and --shards (pacer), --fill and --fill-interval (pool), --max-burst (bursty), \
--warmup and --cold-factor (warmup), --refresh-period and --timeout (refill, \
cycle), --capacity and --initial-permits (refill).

--batch, with any limiter, gives each worker a batching handle of its own, \
which takes a block of the shared limiter at once and grants it from the \
worker's own memory: far fewer trips to the shared state at high rates, at \
the cost of the lease slack (what a worker leased and has not used yet is \
nobody else's, and is dropped when the run ends). The pacer's handle \
(Pacer::handle) leases up to 100µs of the schedule with one atomic add and \
grants each slot at its own time; it needs a strictness below 1 (average or \
burst compensation). The other limiters' handle (BatchHandle) leases about \
100µs of the worker's own grants, at most 1024 permits, with one \
reservation, and grants them together, when the limiter readies the lease. \
Refill and cycle acquires stay bounded by --timeout, so there a handle \
leases only permits ready at once and otherwise asks the limiter for its one \
permit. --batch is refused with --shards.

Resilience4j's limiters (refill, cycle) take their rate from --rate: the limit \
for period is rate x refresh period, which must be a whole number of permits, \
at least 1 (--rate 1000 --refresh-period 100ms: 100 permits per 100ms; --rate \
0.5 needs --refresh-period 2s or a multiple). Each acquire may wait up to \
--timeout (default 5s, Resilience4j's): an acquire whose wait would exceed it \
is refused at once. A refused acquire is counted (refused) and is not an op: \
its worker sleeps until a permit could be granted within the timeout and asks \
again.

Guava's and Resilience4j's limiters take only the spec's rate: a burst ratio \
other than the default 1.1 is refused (a spec that spells out 1.1 cannot be \
told from one that gives none, so it is accepted and ignored). They have no \
schedule to be late against: an op's scheduled time is the moment the limiter \
lets it go, so its wait is only how late its worker woke up, and time nobody \
used becomes stored permits (up to what the limiter keeps), never a backlog to \
catch up. Their time starts when they are built, just before the workers are \
started.

The schedule starts when the workers are released, whatever the spec's verb (a \
fresh limiter has no earlier schedule to configure, restart or stop; for \
Guava's limiters see above). A spec \
with the `thread` scope gives every worker its own limiter at the spec's rate, \
so the target rate is rate x threads; otherwise all workers share one limiter \
and the rate is their total.

Run length: --duration DUR (default 5s), --count N or --stages, one of them.
  --duration: workers stop once the clock passes the deadline (checked after \
each grant, and after each op's --work). An op whose grant is ready at or after the deadline is not \
counted; its worker still slept until it, so the run can overrun the deadline \
by up to about threads / rate.
  --count: exactly N ops in total, shared by all workers.
  --stages DUR:RATE,...: the run lasts the stages' total, as a --duration \
would (see Stages below).
  Ctrl-C ends the run early: each worker stops after its current op (a wait \
for a permit longer than 20ms is cut short and the permit given back; a token \
pool's waiting claim is waited for; --work longer than 20ms, and any \
--work-cpu spin, is cut short, and that op counts in ops and wait only), the report covers the ops so far, with \
the rate span counted as in count mode (and at least until the run stopped), and \
the exit status is 130.
  --max-behind DUR ends the run once it falls DUR behind its schedule \
(the rate span so far - ops started / target rate; see behind below), checked \
every 1ms by the reporting thread while ops are still due (before the \
deadline; in count mode, until the last op has started). The workers stop \
as for Ctrl-C (a long wait or --work is cut short), the report covers the \
ops so far, with the rate span counted until the check fired, an error line on \
standard error says how far behind the run fell (in place of the \
below-target warning), and the exit status is 3.

Stages (--stages DUR:RATE,...), as k6's ramping arrival rate: the rate \
ramps in a straight line from --rate's rate (without --rate, from 0) to \
the first stage's RATE over its DUR, then from there to the next stage's, \
and so on (10s:1k,30s:10k,10s:0: up to 1000 ops/s over 10 s, up to \
10000/s over 30 s, down over the last 10 s; a stage of 0s steps at once; \
RATE takes the suffixes and /min of --rate's rate). The ops due over a span \
from the start are the integral of that rate over it: op 1 is due at the \
start (also for a ramp from 0), op n when the integral reaches n - 1, so \
the ops due by any time are within 1 of the integral, and none is due at or \
after the stages' end. The workers take the ops in that order, each free \
worker the next, wait until it is due, then for its permit; an op's wait \
is measured from its due time. An op a worker takes after it was due while \
it was still busy with an earlier op (its --work) found every worker busy: \
too few --threads, as k6's insufficient VUs; the report counts them and \
the below-target warning says so. A thread of its own sets the running \
limiters' rate when the run starts and then every 100 ms while it moves by \
more than 0.5 %, until the stages end, the workers stop or Ctrl-C: the \
highest the ramp reaches until one op after the next 200 ms (at least a \
thousandth of the run's highest rate: a rate of 0 cannot be kept), so a \
limiter follows the ramp from above and hands no op a slot that ends after \
the next op is due (a ramp from a low rate is not held back by its first \
slot). Without --rate the limiter is built at the stages' highest rate with \
the spec's defaults; stages that never rise above 0 from 0 are refused. \
With the thread scope every worker's limiter has ops of its own by the \
stages (their rates are per limiter, as --rate's is), so the target is \
theirs x threads. A rate a limiter refuses (e.g. more permits per refresh \
period than refill or cycle can count) is warned about once on standard \
error; the limiter keeps the rate it had and the run goes on; the report \
counts the refusals. The target rate over a span is the ops due over it \
divided by it; the report's is over the rate span; behind, the \
below-target warning and --max-behind (over the time so far) are measured \
against it, not --rate's.

Fail-if (--fail-if COND, repeatable), as k6's thresholds, for CI: after the \
report, each condition that holds is told on standard error (\"error: \
--fail-if wait.p99>1ms: failed, measured 1ms 250us\") and the exit status \
is 99. COND is FIGURE OP VALUE: FIGURE is wait, or with --work service or \
response, with a statistic, .p50, .p90, .p95, .p99, .p99.9 (any .pNN from p0 to \
p100), .max or .mean (alone, its .p99), over the ops (service and \
response: over the completed ops; see Report); or rate (the achieved rate, \
ops/s); OP is >, >=, < or <=; VALUE is a duration for a time (50ms, 1.5s, \
250us) or a rate for rate (990, 1k, 60k/min). The statistics are the \
report's (p50, p90, p95, p99, p99.9, max, mean; another percentile from the \
same histogram). A condition that does not parse, or on a figure the run \
does not measure (service or response without --work; failures, which \
pace does not have), is refused before the run (exit status 2); quote it \
for the shell (> and < redirect).

Exit status: 0 when the run ended as planned (also when it fell behind: \
that is a warning); 1 for a runtime error (e.g. a limiter that refused a \
permit for good); 2 for a usage error, before the run; 3 when --max-behind \
stopped it; 4 when the limit shared through --redis stopped it (Redis \
failed under --on-redis-failure closed, or the key keeps another type or \
limit; the error line says why, after the report); 99 when a --fail-if condition held; 128 + the signal (130 Ctrl-C, \
SIGINT; 143 SIGTERM; 129 SIGHUP) when one stopped it. When several apply, \
the first of: the signal's, 4, 3, 99 (the conditions that held are told all \
the same).

Before the run, a warning on standard error says when the limiter's integer \
arithmetic gives a rate more than 0.1% off the target (see effective rate \
below). While the run goes on, a progress line on standard error shows the \
elapsed time, the ops so far and the rate over the last second, if standard \
error is a terminal. After the run, a warning on standard error says when the \
run fell behind: its achieved rate is more than 1% below the target and it \
ended at least 100ms behind its schedule (see behind below; the 100ms keep \
a short run whose last op a busy machine woke tens of ms late from being \
warned about, so runs shorter than 10s must be more than 1% behind; not \
checked for --limiter warmup, which grants below the rate \
while cold by design). Otherwise nothing else is written to it but a rate \
--stages' limiter refused (once, as a warning), \"wrote FILE\" for each file \
--plot and --hdr-out wrote (before the report), and after the report the \
--fail-if conditions that held and --max-behind's error line.

Report:
  stages          --stages only: the stages, from --rate's rate, and the rate \
changes made on the running limiters (the first, at the start, included) and \
those a limiter refused
  target rate     the spec's rate (x threads for the thread scope); with \
--stages their mean over the rate span (see Stages above)
  effective rate  the rate the limiter's integer arithmetic gives, summed over \
limiters (at --rate's rate, where --stages start): the Pacer and the pool give each op floor(1e9 / rate) whole \
nanoseconds, so they run at 1e9 / that (--rate 510M: 1 ns, 1e9 ops/s; \
--shards N: floor(1e9 x N / rate) per shard); bursty and warmup charge a \
permit whole microseconds (nanoseconds above 100000 ops/s), truncated per \
request (so this is what one-permit requests get; --batch leases of many \
permits lose less); refill refills a permit every floor(refresh period / \
limit) ns; cycle is exact. More than 0.1% off the target, the report says by \
how much and why, and a warning says so before the run
  achieved rate   ops / rate span
  rate span       the span the achieved rate is over. --duration (--stages): the duration (the stages' total). \
--count (or Ctrl-C): from the start of the schedule until the last op was \
granted, plus one slot (1 / target rate; with --stages at the rate set then): N ops on a perfect schedule take N slots, so a perfect run reads exactly \
the target rate. A run Ctrl-C ended counts at least until it stopped (the \
first clock reading at which a worker saw Ctrl-C; --max-behind: when its \
check fired), so the rate of a run \
that stalled (a worker in a long --work) is over the time it actually ran. \
The achieved rate is ops / rate span
  wall clock      the time the run took on the wall clock, from the start to \
the last worker's end (in JSON wall_ns); with --count it differs from the rate span \
by how early the first ops went (a burst) and how late the last ended
  behind          rate span - ops / target rate, at least 0: how far behind its \
target schedule the run ended, the time its missing ops would have taken \
(achieved = target x (1 - behind / rate span)). It needs nothing from the \
limiter, so it means the same for all of them: for the Pacer it is how late \
its schedule is; Guava's and Resilience4j's limiters have no schedule to be \
late against, but a run on them falls behind the target when its workers do \
not keep up; a cold warmup limiter is behind by design
  wall            from the start until every worker had stopped
  wait            p50, p90, p95, p99, p99.9, max and mean of the ops' wait times \
(HdrHistogram, 3 significant digits; max and mean exact)
  work            --work only: each op's work, then a table of the wait, \
service and response times (the same figures, in place of the wait lines)
  completed       --work only, when Ctrl-C cut some ops' work short: the ops \
whose work ran to the end (the others count in ops and wait only)
  backlog         how far the schedule is behind the clock at the end \
(RateLimiter::wait_stats; summed over limiters with the thread scope). For the \
token pool this is its waiting pool: time that arrived while the active pool \
was full and that ops have not caught up yet. For Guava's limiters it is how \
far their next free time is ahead of the clock: what the next op would wait. \
For Resilience4j's it is the time permits are reserved ahead of the clock
  max backlog     token pool only: the largest backlog seen during the run, \
sampled every 1ms (and at the end) by the reporting thread
  limiter wait    the limiter's own total wait (total_wait_ns): its backlog \
plus what it checkpointed at rate changes and stops, as nosqlbench counts it \
(same source; not shown for Guava's and Resilience4j's limiters, which keep no \
total). It is the schedule's delay, not the sum of the ops' waits above: \
0 while the schedule keeps up, however long each op waited for its slot
  refused         refill, cycle only: acquires refused because their wait \
would exceed --timeout (not counted in ops)
  fills           token pool only: how many times the pool was refilled \
(pre-fills included)
  cpu per op      the process's user + system CPU time during the run, less \
the reporting thread's, divided by ops (a filler thread's CPU time counts, and \
so does the progress line's on a terminal; with --work-cpu, so does the \
work's spinning)
  fail-if         --fail-if only: how many conditions held, and which (each \
is also told on standard error, with the value measured)

Plot (--plot FILE, SVG or PNG by the extension): the upper panel shows the \
ops per time bucket (--bucket) as a rate, against the target rate (dashed; \
with --stages, the staircase of rates set); \
the lower panel shows the longest and the mean wait of the ops in each \
bucket, placed by when each op started. Each worker adds its ops to its own \
buckets (a comparison and a few additions per op); without --plot nothing is \
recorded. The file is created before the run (one that cannot be is an \
error, exit status 1) and written after it, also when Ctrl-C or \
--max-behind ended it.

HdrHistogram log (--hdr-out FILE): the ops' wait times (with --work, and \
the service and response times of the completed ops), the histograms the \
report's statistics come from, in HdrHistogram's interval log format, which \
HistogramLogAnalyzer, HistogramLogProcessor and other HdrHistogram tools \
read: a #[StartTime: ...] header (when the schedule started), then one \
interval, the whole run until every worker had stopped (wall), as one line \
per figure tagged Tag=wait (and Tag=service, Tag=response), of values in \
nanoseconds (give such a tool a divisor of 1e6 for milliseconds). The file \
is created before the run (one that cannot be is an error, exit status 1) \
and written after it, also when Ctrl-C or --max-behind ended it.\n\n",
    crate::shared::redis_report_help!(),
    "\n\n\
Examples:
  ratekeeper pace --rate 10k,1.1 --threads 2 --duration 5s
  ratekeeper pace --rate 2000 --count 200 --json
  ratekeeper pace --rate 1M --strictness 0.5 --threads 2 --duration 500ms --precise
  ratekeeper pace --rate 10M --strictness 0 --batch --threads 2 --duration 2s
  ratekeeper pace --rate 10M --shards 2 --threads 2 --duration 2s
  ratekeeper pace --limiter pool --rate 10M --batch --threads 2 --duration 2s
  ratekeeper pace --limiter pool --rate 10k,1.1 --threads 2 --duration 5s
  ratekeeper pace --limiter pool --fill thread --fill-interval 100us --rate 50k,1.5,thread --threads 4
  ratekeeper pace --limiter bursty --max-burst 0.5 --rate 1000 --threads 2 --duration 3s
  ratekeeper pace --limiter warmup --warmup 2s --cold-factor 3 --rate 1000 --duration 3s
  ratekeeper pace --limiter refill --rate 1000 --refresh-period 100ms --capacity 200 --timeout 10ms --threads 4
  ratekeeper pace --limiter cycle --rate 1000 --refresh-period 100ms --timeout 0s --threads 2 --duration 3s
  ratekeeper pace --rate 2000,1.5 --threads 2 --duration 3s --plot pace.svg
  ratekeeper pace --rate 1000 --threads 4 --work 2ms~500us --duration 3s
  ratekeeper pace --rate 1000 --work 5ms --max-behind 100ms
  ratekeeper pace --rate 100 --stages 5s:2k,10s:2k,5s:0 --threads 2
  ratekeeper pace --rate 1000 --threads 4 --work 2ms --duration 10s --fail-if 'response.p99>5ms' --fail-if 'rate<990' --hdr-out ops.hlog

JSON output (--json): one object on one line. Durations are integer \
nanoseconds, rates are ops per second (floating point). Fields marked with \
limiters in parentheses appear only with those limiters (--limiter):
  schema           integer  the schema's version, 1: raised when a field is \
renamed, dropped or changes meaning (not when one is added)
  spec             string   the rate spec in canonical form, rate,burst,verb,scope
  limiter          string   \"pacer\", \"pool\", \"bursty\", \"warmup\", \"refill\" or \"cycle\"
  target_rate      number   ops/s the run aimed at; with --stages their mean \
over the rate span (see Stages above)
  stages           string   --stages as given, or null
  rate_changes     integer  (--stages) rates set on the running limiters, the \
first (at the start) included; null without --stages
  rate_changes_refused integer (--stages) rate changes a limiter refused; \
null without --stages
  start_rate       number   (--stages) --rate's rate (per limiter), where the \
ramp starts (0 without --rate); null without --stages
  effective_rate   number   ops/s the limiters' integer arithmetic gives at --rate's \
rate (see Report above); \
null for a limiter that does not limit at all
  strictness       number   (pacer) the strictness used (--strictness, else the spec's burst ratio)
  strictness_mode  string   (pacer) \"average\", \"burst_compensation\", \"strict\" or \"burst_ratio\"
  wait_policy      string   (pacer) \"default\" or \"precise\"
  access           string   \"exact\" (every acquire goes to the shared limiter, the default), \
\"batched\" (--batch: a handle per worker) or \"sharded\" (pacer with --shards)
  shards           integer  (pacer with --shards) the shard count
  burst_ratio      number   (pool) the pool's burst ratio (the spec's)
  filling          string   (pool) \"inline\" or \"thread\" (the filling in effect)
  fill_interval_ns integer  (pool) the filler thread's interval; null for inline
  max_burst_seconds number  (bursty) seconds of permits idle time may store
  warmup_ns        integer  (warmup) the warm-up period
  cold_factor      number   (warmup) how much slower than the rate a cold limiter is
  resolution       string   (bursty, warmup) the schedule's unit: \"micros\" \
(Guava's, at or below 100000 ops/s per limiter) or \"nanos\" (above)
  limit_for_period integer  (refill, cycle) permits per refresh period: rate x refresh period
  refresh_period_ns integer (refill, cycle) the refresh period
  timeout_ns       integer  (refill, cycle) how long an acquire may wait
  capacity         integer  (refill) the most permits the bucket stores
  initial_permits  integer  (refill) the permits in the bucket when it is built
  threads          integer  worker threads
  pacers           integer  (pacer) 1, or threads for the thread scope
  pools            integer  (pool) 1, or threads for the thread scope
  limiters         integer  (bursty, warmup, refill, cycle) 1, or threads for the thread scope
  mode             string   \"duration\" (also with --stages) or \"count\"
  duration_ns      integer  the requested duration, or the stages' total \
(null in count mode)
  count            integer  the requested count (null in duration mode)
  ops              integer  ops counted
  ops_due          number   (--stages) the ops due over the rate span: the \
integral of the stages' rate (x limiters for the thread scope); null without
  ops_found_workers_busy integer (--stages) ops taken after they were due \
while every worker was busy with an earlier op (see Stages above); null \
without
  rate_span_ns     integer  the span the achieved rate is over (see Report above)
  wall_ns          integer  the wall clock (see Report above)
  achieved_rate    number   ops / rate span
  behind_ns        integer  rate span - ops / target rate, at least 0 (see Report above)
  below_target     boolean  achieved_rate more than 1% below target_rate with \
behind_ns at least 100ms: the warning's condition; null for warmup and with \
--redis (not checked)
  wait_ns          object   {\"p50\", \"p90\", \"p95\", \"p99\", \"p999\", \"max\", \"mean\"}, integers
  work_ns          integer  (--work) each op's work, DUR
  work_jitter_ns   integer  (--work) its jitter, JITTER (0 without)
  work_cpu         boolean  (--work) whether the work spun (--work-cpu) or slept
  completed        integer  (--work) ops whose work ran to the end (all but \
those Ctrl-C cut short)
  service_ns       object   (--work) the same percentiles of end - start, over \
the completed ops
  response_ns      object   (--work) the same percentiles of end - scheduled \
(wait + service), over the completed ops
  backlog_ns       integer  the limiter's backlog at the end (the pool: its waiting \
pool; bursty, warmup: how far the next free time is ahead of the clock; refill, \
cycle: the time reserved ahead of the clock)
  max_backlog_ns   integer  (pool) the largest backlog sampled during the run
  total_wait_ns    integer  the limiter's total wait at the end (bursty, warmup, \
refill, cycle: equal to backlog_ns, as they keep no total)
  refused          integer  (refill, cycle) acquires refused by the timeout
  fills            integer  (pool) refills during the run, pre-fills included
  cpu_ns           integer  process CPU time (user + system) during the run, or null
  cpu_ns_per_op    integer  cpu_ns / ops, rounded; null without ops or CPU time
  interrupted      boolean  whether Ctrl-C ended the run (exit status 130)
  max_behind_ns    integer  --max-behind; null without
  stopped_by_max_behind boolean  whether --max-behind ended the run (exit status 3)
  fail_if          array    the --fail-if conditions as given (empty without)
  failed_conditions array   those that held after the run, as given (empty \
when none did; exit status 99)",
    crate::shared::redis_json_help!()
);
