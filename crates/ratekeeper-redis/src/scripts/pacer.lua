-- The Pacer's shared schedule (nosqlbench's ticks accumulator), one atomic
-- step per grant, on the server's clock. Mirrors ratekeeper's in-memory
-- Pacer (crates/ratekeeper/src/pacer): see ratekeeper-redis's docs.
--
-- KEYS[1]  the schedule: a string "o i a g k p b s" of integers: the origin
--          (server clock, whole us), the ideal (the accumulator) and the
--          actual (strict/burst spacing), i and a in ns since o; the
--          permits granted on the key so far; and the limit it keeps (k
--          kind, p ns per permit, b the burst slice, s the shift). (One GET
--          and one SET ... PX: each redis.call costs a few microseconds.)
-- ARGV[1]  kind: 0 average, 1 burst compensation, 2 strict or burst ratio
-- ARGV[2]  span: permits x the slice of one permit (ns)
-- ARGV[3]  burst span: permits x the burst slice (ns; kind 2)
-- ARGV[4]  compensation shift (kind 1: forfeit gap / 2^shift)
-- ARGV[5]  the most the grant may wait (ns), or -1 for any wait
-- ARGV[6]  now (whole us) for tests, or -1 for the server's TIME
-- ARGV[7]  how long an idle schedule is kept (ms) once caught up
-- ARGV[8]  permits asked for
-- ARGV[9]  1 to take over a key that keeps another limit, else 0
-- ARGV[10] ns per permit (the limit's p)
-- ARGV[11] the burst slice (the limit's b)
-- ARGV[12] permits this process granted on its own while the server could
--          not decide (a local fallback): counted on the key, and taken
--          from the schedule's backlog (the slots behind the clock), never
--          from slots ahead of it, so that the backlog is not caught up again
-- Reply: { granted 1|0, scheduled - now (ns), ready - now (ns), i - now (ns),
--          now (the server clock, whole us), permits granted on the key }
-- A key that holds another value is refused with WRONGTYPE; one that keeps
-- another limit, with RKLIMIT and that limit ("pacer k p b s" or "refill
-- npp capacity initial"), unless ARGV[9] takes it over: the schedule
-- stays (every grant made stands) and later slots follow the new limit.
-- Every value is an integer below 2^53 (a Lua double holds it exactly).
local key = KEYS[1]
local kind = tonumber(ARGV[1])
local span = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local shift = tonumber(ARGV[4])
local max_wait = tonumber(ARGV[5])
local now_us = tonumber(ARGV[6])
local idle_ms = tonumber(ARGV[7])
local permits = tonumber(ARGV[8])
local adopt = tonumber(ARGV[9]) == 1
local op = tonumber(ARGV[10])
local slice = tonumber(ARGV[11])
local charge = tonumber(ARGV[12])
if now_us < 0 then
  local t = redis.call('TIME')
  now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local o, i, a, g
local state = redis.call('GET', key)
if state then
  local k, p, b, s
  o, i, a, g, k, p, b, s = string.match(state,
    '^(%-?%d+) (%-?%d+) (%-?%d+) (%d+) (%d+) (%d+) (%d+) (%d+)$')
  if o == nil then
    local bucket = string.match(state, '^%-?%d+ %-?%d+ %d+ (%d+ %d+ %d+)$')
    if bucket then
      return redis.error_reply('RKLIMIT refill ' .. bucket)
    end
    return redis.error_reply('WRONGTYPE the key holds a value that is not a ratekeeper schedule')
  end
  if (tonumber(k) ~= kind or tonumber(p) ~= op or tonumber(b) ~= slice
      or tonumber(s) ~= shift) and not adopt then
    return redis.error_reply(string.format('RKLIMIT pacer %s %s %s %s', k, p, b, s))
  end
  o, i, a, g = tonumber(o), tonumber(i), tonumber(a), tonumber(g)
else
  -- A new schedule starts now (as an idle Pacer's first reservation).
  o, i, a, g = now_us, 0, 0, 0
end
local now = (now_us - o) * 1000
if now >= 4503599627370496 then
  -- 2^52 ns (52 days) since the origin: move it up, keeping a day, so that
  -- every value stays below 2^53.
  local d = (now_us - o) - 86400000000
  o = o + d
  now = now - d * 1000
  i = math.max(i - d * 1000, -4503599627370496)
  a = math.max(a - d * 1000, -4503599627370496)
end
if charge > 0 then
  i = math.max(i, math.min(i + charge * op, now))
  g = (g + charge) % 9007199254740992
end
-- Kept until the schedule has caught up with the clock, and idle_ms after
-- (at least 1 ms: Redis refuses PX 0).
local function store()
  local ahead = math.max(i, a, now) - now
  redis.call('SET', key, string.format('%.0f %.0f %.0f %.0f %d %.0f %.0f %d',
      o, i, a, g, kind, op, slice, shift),
    'PX', math.max(math.ceil(ahead / 1000000) + idle_ms, 1))
end
local slot = i
local ready
if kind == 2 then
  ready = math.max(a, slot, now)
else
  ready = math.max(slot, now)
end
if max_wait >= 0 and ready - now > max_wait then
  if charge > 0 then
    store()
  end
  return { 0, slot - now, ready - now, i - now, now_us, g }
end
i = slot + span
if kind == 1 then
  local finish = slot + span
  if now > finish then
    i = i + math.floor((now - finish) / 2 ^ shift)
  end
elseif kind == 2 and ready ~= slot then
  a = ready + burst
end
-- The count wraps below 2^53.
g = (g + permits) % 9007199254740992
store()
return { 1, slot - now, ready - now, i - now, now_us, g }
