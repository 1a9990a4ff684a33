//! `exec`'s help: the text above and below its options, with the JSON
//! schema.

/// `exec --help` text above the options.
pub const LONG_ABOUT: &str = "\
Run a command repeatedly at a rate, at most --concurrency runs at once, and \
report each run's service time and response time, with counts by exit status.

Each run takes a permit from the rate limiter, which says when the run was \
scheduled: when it was due had every run kept the ideal schedule. The run \
starts once its permit is ready and one of the --concurrency slots is free. \
For every run:
  wait       start - scheduled: how late it started (for the limiter or for a \
free slot)
  service    end - start: how long the command ran, its spawn included
  response   end - scheduled = wait + service: what a user arriving on \
schedule would have seen
Response times are measured from the schedule, as wrk2 does: a run held up \
because every slot was busy keeps its scheduled time, so the delay shows in \
its response time instead of silently stretching the schedule (no \
coordinated omission).

The command is run directly (not through a shell: write sh -c '...' for one), \
after --, with its standard input empty (/dev/null) and its standard error \
shared with ratekeeper's. Its standard output is ratekeeper's (before the \
report; with --json, ratekeeper's standard error, so that standard output \
carries the JSON alone) unless --stdout FILE appends every run's output to \
FILE, --discard-stdout discards it or --status-from-stdout reads it for a \
status (see Statuses). A command that cannot be found is refused before \
the run (exit status 2).

The options follow; after them, failures, each limiter, the run's length, \
--stages and --fail-if, what the report says, and the JSON schema.";

/// `exec -h` text below the options: examples, and where the rest is.
pub const AFTER_HELP: &str = "\
Examples:
  ratekeeper exec --rate 5 --concurrency 2 -n 20 -- curl -s http://127.0.0.1:8080/
  ratekeeper exec --rate 100 --concurrency 8 --duration 10s --discard-stdout --json -- ./probe.sh
  ratekeeper exec --rate 2 -n 10 --stdout runs.log --fail-fast -- sh -c 'date; ./check'
  ratekeeper exec --limiter warmup --warmup 5s --rate 50 --concurrency 4 --duration 20s --plot exec.svg -- ./client
  ratekeeper exec --limiter refill --rate 10 --capacity 20 --timeout 0s -n 50 -- ./probe.sh
  ratekeeper exec --rate 1 --stages 10s:100,30s:100,10s:0 --concurrency 16 --discard-stdout -- ./probe.sh
  ratekeeper exec --rate 50 -c 4 --duration 1m --fail-if 'response.p99>200ms' --fail-if 'failures>0' --hdr-out runs.hlog -- ./probe.sh

Each limiter's options, the Redis options, the report's fields and the \
JSON schema: ratekeeper exec --help";

/// `exec --help` text below the options: the details, examples and the
/// JSON schema.
pub const AFTER_LONG_HELP: &str = concat!(
    "\
A run that exits with a status other than 0, is killed by a signal, or cannot \
be started (spawned) has failed: it is counted, and the run goes on, unless \
--fail-fast: then no run is started after the first failure is seen, the \
runs still running are waited for, the report is printed and the exit status \
is 1.

Limiters (--limiter), with the same options as pace's: pacer (the default; \
ratekeeper's Pacer, the spec's burst ratio is its strictness unless \
--strictness overrides it; --precise), pool (nosqlbench's token pool, filled \
inline, or with --fill thread by a filler thread every --fill-interval), \
bursty (Guava's SmoothBursty, --max-burst), warmup (Guava's SmoothWarmingUp, \
--warmup required, --cold-factor), refill (Resilience4j's RefillLimiter: \
rate x --refresh-period permits per period, a bucket of --capacity holding \
--initial-permits at the start) and cycle (Resilience4j's CycleLimiter: that \
many permits at the start of each period). Above 100000 runs/s bursty and \
warmup keep their schedule in whole nanoseconds (JSON resolution \"nanos\"), \
where Guava's whole microseconds would charge a run up to half too little \
(above 1000000 runs/s, nothing: no limit at all); at or below, they are \
Guava's arithmetic exactly. With refill and cycle a permit whose wait would \
exceed --timeout (default 5s) is refused: the refusal is counted (refused) \
and the dispatcher sleeps until a permit could be granted within the \
timeout and asks again, so no run is dropped. Each limiter's options are \
refused with the others. The schedule starts when the run does; the spec's \
verb has no effect, and its scope must be the default (activity): one \
dispatcher takes every permit.

Run length: --duration DUR (default 5s), --count N or --stages, one of \
them. With --duration, runs are started while their permits are ready \
before the deadline; runs still running then are waited for.

Stages (--stages DUR:RATE,...), as k6's ramping arrival rate: the rate \
ramps in a straight line from --rate's rate (without --rate, from 0) to \
the first stage's RATE over its DUR, then from there to the next stage's, \
and so on (10s:1k,30s:10k,10s:0: up to 1000 runs/s over 10 s, up to \
10000/s over 30 s, down over the last 10 s; a stage of 0s steps at once; \
RATE takes the suffixes and /min of --rate's rate). The run lasts the \
stages' total, as a --duration would. The runs due over a span from the \
start are the integral of that rate over it: run 1 is due at the start \
(also for a ramp from 0), run n when the integral reaches n - 1, so the runs \
due by any time are within 1 of the integral, and none is due at or after \
the stages' end. The dispatcher waits until each run is due, then for its \
permit and a free slot; a run's scheduled time is its due time. A run due \
while every slot is busy found every slot busy: too little --concurrency, \
as k6's insufficient VUs; the report counts them and the below-target \
warning says so. A thread sets the running limiter's rate when the run \
starts and then every 100 ms while it moves by more than 0.5 %: the \
highest the ramp reaches until one run after the next 200 ms (at least a \
thousandth of the run's highest rate: a rate of 0 cannot be kept), so the \
limiter follows the ramp from above and hands no run a slot that ends after \
the next run is due (a ramp from a low rate is not held back by its first \
slot). Without --rate the limiter is built at the stages' highest rate with \
the spec's defaults; stages that never rise above 0 from 0 are refused. A \
rate the limiter refuses (e.g. more permits per refresh period than refill \
or cycle can count) is warned about once on standard error; the limiter \
keeps the rate it had and the run goes on; the report counts the refusals. \
The target rate is the runs due over the rate span (see Report) divided by \
it. The achieved rate, its warning and the runs due but not started are \
measured against it, not --rate's (the next run due and those after it \
are due when the stages have them due).

Falling behind: a run is due at its scheduled time; when every slot is busy \
(the command is slower than --concurrency / rate allows), runs start late, \
and in the end some that were due never start. At the end (the deadline, \
or the stop: a signal, --fail-fast, --max-behind, the count), the next run \
due is the first one not started: the one whose permit the dispatcher held \
(waiting for the permit or for a free slot; the permit is given back), else \
the one a slot (1 / target rate) after the last run started. Behind is the \
end minus that run's scheduled time (0 if it is not past; with --count, \
once every run started, how late the last one started). Due but not \
started are the runs scheduled before the end, from the next run due on, \
one slot apart (the schedule continued at the target rate), that never \
started (with --count, at most the runs left). With --duration a run whose \
permit was ready before the deadline but found no free slot by then is not \
started. Scheduled times are the limiter's: the Pacer and the pool keep \
every run that could not start due (their schedule does not move), so the \
count is every run the target rate had due; bursty and warmup (Guava) and \
refill and cycle (Resilience4j) let permits that were not taken in time go \
(beyond what they store), so with them it counts only the runs their \
schedule still held due, and the achieved rate tells the rest. When the achieved rate is more than 1% below the target (and by \
at least one whole run), a warning on standard error says so: \
\"warning: achieved X runs/s, Y % below the target Z runs/s: N runs due but \
not started, behind by D at the end\". --max-behind DUR ends the run once \
the next run due is DUR late (checked when its permit is taken and every \
20 ms while it waits for a free slot): no run is started after it, the \
runs still running are ended as at a signal (SIGTERM, SIGKILL after \
--grace) and count as interrupted, the report is printed, and the exit \
status is 3 (a signal's status wins if one came too).

Signals (Ctrl-C, SIGINT, and SIGTERM, as from kill, timeout or docker \
stop): the first stops starting runs (a permit being waited for is given \
back; with --limiter pool it is waited for) and ends the runs still \
running: each run is its own process group (its command is the group's \
leader), which ratekeeper sends SIGTERM, then SIGKILL if the command is \
still running --grace (default 5s) later; a further signal sends SIGKILL at \
once. When a run ratekeeper sent SIGTERM exits, what it left running in its \
group is given the rest of the grace period (on Linux; elsewhere it is \
killed at once) and then SIGKILL, so no process of the run is left; a \
process that moved to a group of its own is not followed. A signal that \
comes after the last run was started (with --count, or after the deadline) \
ends the runs still running the same way. A run sent SIGTERM that then ends \
by a signal or with a status other than 0 counts as interrupted, not \
failed, and is not timed; one that exits 0 counts as succeeded. Because \
each run is its own process group, a terminal's Ctrl-C reaches ratekeeper \
only, never the runs directly. (So on Linux, Android, macOS and FreeBSD; \
elsewhere runs stay in ratekeeper's process group, where a terminal's Ctrl-C \
reaches them too, and ratekeeper waits for them instead of signalling \
them.) As a background job of the terminal, a run that reads it \
(/dev/tty), or writes to it after stty tostop, is stopped by it; the \
terminal's other keys (Ctrl-Z, Ctrl-\\) and its hangup reach ratekeeper \
only. SIGINT, SIGTERM and SIGHUP (the terminal closed) make it end the runs \
as above; Ctrl-\\ (SIGQUIT) ends ratekeeper at once and leaves them running. \
The report covers every run started, and the exit status is 128 + the first \
signal: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP.

Fail-if (--fail-if COND, repeatable), as k6's thresholds, for CI: after the \
report, each condition that holds is told on standard error (\"error: \
--fail-if response.p99>50ms: failed, measured 73ms\") and the exit status \
is 99. COND is FIGURE OP VALUE: FIGURE is wait, service or response with a \
statistic, .p50, .p90, .p95, .p99, .p99.9 (any .pNN from p0 to p100), .max \
or .mean (alone, its .p99), over the runs timed (see Report); or rate (the \
achieved rate, runs/s) or failures (failed runs, see Report); OP is >, >=, \
< or <=; VALUE is a duration for a time (50ms, 1.5s, 250us), a rate for \
rate (990, 1k, 60k/min), and for failures a whole number (failures>0) or a \
percentage of the finished runs (failures>1%: the failed runs over those \
that ran to their end, succeeded or failed, not those interrupted at a \
stop; 0% when none did). Only failures takes a percentage. The statistics \
are the report's (p50, p90, p95, p99, p99.9, max, mean; another percentile \
from the same histogram). A condition that does not parse is refused before \
the run (exit status 2); quote it for the shell (> and < redirect).

Statuses (--status-from-stdout): ratekeeper reads every run's standard \
output (it goes nowhere else) and counts the runs by the status on its \
last line, trimmed: what curl -w '%{http_code}' prints after the body \
(text: status S lines; JSON: stdout_statuses). A run that printed nothing, \
or a last line over 32 bytes, has no status (\"(none)\", JSON \"\"); past \
100 different statuses a new one counts as \"other\". The exit status \
still decides whether a run failed: with curl --fail an HTTP error also \
exits 22, so --fail-if 'failures>1%' reads it: ratekeeper exec --rate 50 \
--status-from-stdout --fail-if 'failures>1%' -- curl -s -o /dev/null \
--fail -w '%{http_code}' URL. The output is read until it closes: a run \
that leaves a process behind holding it keeps its slot until that process \
ends.

Exit status: 0 when the run ended as planned (failed runs included: they \
are counted); 1 when --fail-fast stopped it (or for a runtime error); 2 for \
a usage error, before the run; 3 when --max-behind stopped it; 4 when the \
limit shared through --redis stopped it (Redis failed under \
--on-redis-failure closed, or the key keeps another type or limit; the \
error line says why, after the report); 99 \
when a --fail-if condition held; 128 + the first signal (130 SIGINT, 143 \
SIGTERM, 129 SIGHUP) when one stopped it. When several apply, the first of: \
the signal's, 4, 1, 3, 99 (the conditions that held are told all the same).

Report:
  runs            runs started (a run that could not be spawned included)
  run length      --duration's, the stages' total or --count's
  stdout          where the runs' standard output went
  stages          (--stages) the stages, from --rate's rate, and the rate \
changes made on the running limiter (the first, at the start, included) and \
those it refused
  target rate     --rate's rate; with --stages the stages' mean over the \
rate span (see Stages above)
  effective rate  the rate the limiter's integer arithmetic gives (at \
--rate's rate, where --stages start): the Pacer \
and the pool give each run floor(1e9 / rate) whole nanoseconds (--rate 510M: \
1 ns, 1e9 runs/s); bursty and warmup charge a run whole microseconds \
(nanoseconds above 100000 runs/s), truncated; refill refills a permit every \
floor(refresh period / limit) ns; cycle is exact. More than 0.1% off the target, \
the report says by how much and why, and a warning on standard error says so \
before the first run
  achieved rate   runs / rate span
  rate span       the span the achieved rate is over: --duration for a run \
that reached its deadline; otherwise (--count, or a run stopped early) from \
the start of the schedule until the last run started plus one slot (1 / \
target rate), or until the stop if that is later: a run stalled before a \
signal is measured over the time it actually ran
  not started     runs due before the end that never started (see Falling \
behind above)
  behind          how late the next run due was at the end (see Falling behind)
  wall clock      from the start of the schedule until the last run ended
  refused         refill, cycle only: permits refused because their wait would \
exceed --timeout (the dispatcher waited and asked again)
  stopped         by --max-behind (how far behind), by SIGINT or SIGTERM \
(see Signals above), with how many runs still running were sent SIGTERM \
and how many of them SIGKILL; or by --fail-fast
  exit N          runs that exited with status N
  signal N        runs killed by signal N (Unix), but for interrupted ones
  status S        (--status-from-stdout) runs that printed status S last \
(see Statuses above)
  spawn failed    runs that could not be started, with the first error
  interrupted     runs ratekeeper sent SIGTERM at a stop that then ended by \
a signal or with a status other than 0 (shown after a signal)
  fail-if         (--fail-if) how many conditions held, and which
  wait, service, response: p50, p90, p95, p99, p99.9, max and mean over the runs \
that ran to their end: not those that could not be spawned or were \
interrupted (HdrHistogram, 3 significant digits; max and mean exact)

While the run goes on, a progress line on standard error shows the elapsed \
time, the runs started, running and failed, and the rate over the last \
second, if standard error is a terminal; otherwise ratekeeper writes nothing \
to it but the warnings (the effective rate's, before the first run; a rate \
--stages' limiter refused, once; the achieved rate's, after the last), \
\"wrote FILE\" for each file --plot and --hdr-out wrote (before the \
report), and after the report the error of --fail-fast or --max-behind and \
the --fail-if conditions that held.

Plot (--plot FILE, SVG or PNG by the extension): the upper panel shows the \
runs started per time bucket (--bucket) as a rate, against the target rate \
(dashed; with --stages, the staircase of rates set); the lower panel shows \
the longest and the mean response time and the mean service time of the \
runs started in each bucket.

HdrHistogram log (--hdr-out FILE): the wait, service and response times of \
the runs timed (see Report), the histograms the report's statistics come \
from, in HdrHistogram's interval log format, which HistogramLogAnalyzer, \
HistogramLogProcessor and other HdrHistogram tools read: a \
#[StartTime: ...] header (when the schedule started), then one interval, \
the whole run until the last run ended, as one line per figure tagged \
Tag=wait, Tag=service and Tag=response, of values in nanoseconds (give such \
a tool a divisor of 1e6 for milliseconds). The file is created before the \
run (one that cannot be is an error, exit status 1) and written after it, \
also when a signal or a stop ended it.\n\n",
    crate::shared::redis_report_help!(),
    "\n\n\
Examples:
  ratekeeper exec --rate 5 --concurrency 2 -n 20 -- curl -s http://127.0.0.1:8080/
  ratekeeper exec --rate 100 --concurrency 8 --duration 10s --discard-stdout --json -- ./probe.sh
  ratekeeper exec --rate 2 -n 10 --stdout runs.log --fail-fast -- sh -c 'date; ./check'
  ratekeeper exec --limiter warmup --warmup 5s --rate 50 --concurrency 4 --duration 20s --plot exec.svg -- ./client
  ratekeeper exec --limiter refill --rate 10 --capacity 20 --timeout 0s -n 50 -- ./probe.sh
  ratekeeper exec --rate 1 --stages 10s:100,30s:100,10s:0 --concurrency 16 --discard-stdout -- ./probe.sh
  ratekeeper exec --rate 50 -c 4 --duration 1m --fail-if 'response.p99>200ms' --fail-if 'failures>0' --hdr-out runs.hlog -- ./probe.sh

JSON output (--json): one object on one line, alone on standard output (the \
runs' output goes to standard error unless --stdout, --discard-stdout or \
--status-from-stdout). Durations are integer nanoseconds, rates are runs per \
second (floating point). Fields marked with limiters in parentheses appear \
only with those limiters:
  schema           integer  the schema's version, 1: raised when a field is \
renamed, dropped or changes meaning (not when one is added)
  command          array    the command and its arguments (lossy UTF-8)
  spec             string   the rate spec in canonical form
  limiter          string   \"pacer\", \"pool\", \"bursty\", \"warmup\", \"refill\" or \"cycle\"
  strictness       number   (pacer) the strictness used
  strictness_mode  string   (pacer) \"average\", \"burst_compensation\", \"strict\" or \"burst_ratio\"
  wait_policy      string   (pacer) \"default\" or \"precise\"
  burst_ratio      number   (pool) the pool's burst ratio
  filling          string   (pool) \"inline\" or \"thread\"
  fill_interval_ns integer  (pool) the filler thread's interval; null for inline
  max_burst_seconds number  (bursty) seconds of permits idle time may store
  warmup_ns        integer  (warmup) the warm-up period
  cold_factor      number   (warmup) how much slower a cold limiter is
  resolution       string   (bursty, warmup) the schedule's unit: \"micros\" \
(Guava's, at or below 100000 runs/s) or \"nanos\" (above)
  limit_for_period integer  (refill, cycle) permits per refresh period: rate x refresh period
  refresh_period_ns integer (refill, cycle) the refresh period
  timeout_ns       integer  (refill, cycle) how long a permit may wait
  capacity         integer  (refill) the most permits the bucket stores
  initial_permits  integer  (refill) the permits in the bucket at the start
  target_rate      number   runs/s the schedule aims at: --rate's, or with \
--stages their mean over the rate span (see Stages above)
  stages           string   --stages as given, or null
  rate_changes     integer  (--stages) rates set on the running limiter, the \
first (at the start) included; null without --stages
  rate_changes_refused integer (--stages) rate changes the limiter refused; \
null without --stages
  start_rate       number   (--stages) --rate's rate, where the ramp starts \
(0 without --rate); null without --stages
  effective_rate   number   runs/s the limiter's integer arithmetic gives at \
--rate's rate (see Report above); null for a limiter that does not limit at all
  concurrency      integer  the most runs at once
  mode             string   \"duration\" (also with --stages) or \"count\"
  duration_ns      integer  the requested duration, or the stages' total \
(null in count mode)
  count            integer  the requested count (null in duration mode)
  stdout           string   where the runs' output went: \"inherit\", \"stderr\" \
(with --json), \"file\", \"discard\" or \"status\" (--status-from-stdout)
  stdout_file      string   (--stdout) the file
  runs             integer  runs started, spawn failures included
  runs_due         number   (--stages) the runs due over the rate span: the \
integral of the stages' rate; null without
  runs_found_slots_busy integer (--stages) runs due while every slot was \
busy (see Stages above); null without
  succeeded        integer  runs that exited with status 0
  failed           integer  runs - succeeded - interrupted_runs
  exit_codes       object   {\"STATUS\": runs}, e.g. {\"0\": 18, \"3\": 2}, \
interrupted runs apart
  signals          object   {\"SIGNAL\": runs} by signal number, e.g. {\"9\": 1}, \
interrupted runs apart
  stdout_statuses  object   (--status-from-stdout) {\"STATUS\": runs} by the \
status printed, e.g. {\"200\": 98, \"503\": 2}; \"\" for none
  spawn_failed     integer  runs that could not be started
  spawn_error      string   the first spawn error, or null
  interrupted_runs integer  runs sent SIGTERM at a stop that then ended by a \
signal or with a status other than 0: not failed
  terminated       integer  runs still running at a stop, sent SIGTERM
  killed           integer  of those, runs whose group was also sent SIGKILL \
(after the grace, or at a further signal)
  grace_ns         integer  --grace: from SIGTERM to SIGKILL
  rate_span_ns     integer  the span the achieved rate is over (see Report above)
  achieved_rate    number   runs / rate span
  due_not_started  integer  runs due before the end that never started (see \
Falling behind above)
  behind_ns        integer  how late the next run due was at the end
  below_target     boolean  whether the achieved rate was more than 1% (and \
at least one run) below the target: the warning; null with --redis (not checked)
  wall_ns          integer  the wall clock from the start of the schedule to the end of the last run
  wait_ns          object   {\"p50\", \"p90\", \"p95\", \"p99\", \"p999\", \"max\", \"mean\"}: start - scheduled
  service_ns       object   the same percentiles of end - start
  response_ns      object   the same percentiles of end - scheduled
  refused          integer  (refill, cycle) permits refused by the timeout (each run asked again)
  interrupted      boolean  whether SIGINT or SIGTERM stopped the run (exit \
status 130 or 143)
  signal           string   the signal that did: \"SIGINT\" or \"SIGTERM\"; null
  fail_fast        boolean  whether --fail-fast was given
  stopped_by_fail_fast boolean  whether a failure stopped the run (exit status 1)
  max_behind_ns    integer  --max-behind, or null
  stopped_by_max_behind boolean  whether --max-behind stopped the run (exit \
status 3)
  fail_if          array    the --fail-if conditions as given (empty without)
  failed_conditions array   those that held after the run, as given (empty \
when none did; exit status 99)",
    crate::shared::redis_json_help!()
);
