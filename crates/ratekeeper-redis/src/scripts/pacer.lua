-- The Pacer's shared schedule (nosqlbench's ticks accumulator), one atomic
-- step per grant, on the server's clock. Mirrors ratekeeper's in-memory
-- Pacer (crates/ratekeeper/src/pacer): see ratekeeper-redis's docs.
--
-- KEYS[1]  the schedule: a string "o i a" of three integers: the origin
--          (server clock, whole us), the ideal (the accumulator) and the
--          actual (strict/burst spacing), i and a in ns since o. (One GET
--          and one SET ... PX: each redis.call costs a few microseconds.)
-- ARGV[1]  kind: 0 average, 1 burst compensation, 2 strict or burst ratio
-- ARGV[2]  span: permits x the slice of one permit (ns)
-- ARGV[3]  burst span: permits x the burst slice (ns; kind 2)
-- ARGV[4]  compensation shift (kind 1: forfeit gap / 2^shift)
-- ARGV[5]  the most the grant may wait (ns), or -1 for any wait
-- ARGV[6]  now (whole us) for tests, or -1 for the server's TIME
-- ARGV[7]  how long an idle schedule is kept (ms) once caught up
-- Reply: { granted 1|0, scheduled - now (ns), ready - now (ns), i - now (ns),
--          now (the server clock, whole us) }
-- Every value is an integer below 2^53 (a Lua double holds it exactly).
local key = KEYS[1]
local kind = tonumber(ARGV[1])
local span = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local shift = tonumber(ARGV[4])
local max_wait = tonumber(ARGV[5])
local now_us = tonumber(ARGV[6])
local idle_ms = tonumber(ARGV[7])
if now_us < 0 then
  local t = redis.call('TIME')
  now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local o, i, a
local state = redis.call('GET', key)
if state then
  o, i, a = string.match(state, '^(%-?%d+) (%-?%d+) (%-?%d+)$')
  if o == nil then
    return redis.error_reply('WRONGTYPE the key holds a value that is not a ratekeeper schedule')
  end
  o, i, a = tonumber(o), tonumber(i), tonumber(a)
else
  -- A new schedule starts now (as an idle Pacer's first reservation).
  o, i, a = now_us, 0, 0
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
local slot = i
local ready
if kind == 2 then
  ready = math.max(a, slot, now)
else
  ready = math.max(slot, now)
end
if max_wait >= 0 and ready - now > max_wait then
  return { 0, slot - now, ready - now, i - now, now_us }
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
-- Kept until the schedule has caught up with the clock, and idle_ms after
-- (at least 1 ms: Redis refuses PX 0).
local ahead = math.max(i, a, now) - now
redis.call('SET', key, string.format('%.0f %.0f %.0f', o, i, a),
  'PX', math.max(math.ceil(ahead / 1000000) + idle_ms, 1))
return { 1, slot - now, ready - now, i - now, now_us }
