-- The refill bucket (Resilience4j's strict token bucket, GCRA in its
-- "empty instant" form) on the server's clock. Mirrors ratekeeper's
-- in-memory RefillLimiter (crates/ratekeeper/src/resilience4j/bucket.rs).
--
-- KEYS[1]  the bucket: a string "o e g n c j" of integers: the origin
--          (server clock, whole us) and the instant the bucket would be
--          empty, in ns since o; the permits granted on the key so far; and
--          the limit it keeps (n ns per permit, c capacity, j initial
--          permits) (one GET and one SET ... PX)
-- ARGV[1]  ns per permit (npp)
-- ARGV[2]  capacity (permits)
-- ARGV[3]  initial permits of a new bucket
-- ARGV[4]  permits asked for
-- ARGV[5]  the most the grant may wait (ns), or -1 for any wait
-- ARGV[6]  now (whole us) for tests, or -1 for the server's TIME
-- ARGV[7]  how long a full bucket is kept (ms)
-- ARGV[8]  the fewest permits to grant: ARGV[4] for all or nothing; less
--          for "as many as fit the maximum wait, at most ARGV[4]" (a lease)
-- ARGV[9]  1 to take over a key that keeps another limit, else 0
-- ARGV[10], ARGV[11]  unused (the Pacer's)
-- ARGV[12] permits this process granted on its own while the server could
--          not decide (a local fallback): counted on the key, and taken
--          from what the bucket holds, never into debt
-- Reply: { granted 1|0, wait (ns), available permits after the decision,
--          now (the server clock, whole us), permits granted, permits
--          granted on the key }
-- A refusal writes nothing, except to a new bucket, which starts at its
-- first request, granted or not, to a bucket taken over, and to one
-- charged with permits granted elsewhere (ARGV[12]). A key that
-- holds another value is refused with WRONGTYPE; one that keeps another
-- limit, with RKLIMIT and that limit ("refill npp capacity initial" or
-- "pacer k p b s"), unless ARGV[9] takes it over: the permits it holds
-- (or owes) at that moment are kept, at most the new capacity, and refill
-- at the new rate. Every value is an integer below 2^53.
local key = KEYS[1]
local npp = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local initial = tonumber(ARGV[3])
local permits = tonumber(ARGV[4])
local max_wait = tonumber(ARGV[5])
local now_us = tonumber(ARGV[6])
local idle_ms = tonumber(ARGV[7])
local least = tonumber(ARGV[8])
local adopt = tonumber(ARGV[9]) == 1
local charge = tonumber(ARGV[12])
if now_us < 0 then
  local t = redis.call('TIME')
  now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local o, e, g
local state = redis.call('GET', key)
local new = not state
local changed = false
if state then
  local n, c, j
  o, e, g, n, c, j = string.match(state, '^(%-?%d+) (%-?%d+) (%d+) (%d+) (%d+) (%d+)$')
  if o == nil then
    local pacer = string.match(state,
      '^%-?%d+ %-?%d+ %-?%d+ %d+ (%d+ %d+ %d+ %d+)$')
    if pacer then
      return redis.error_reply('RKLIMIT pacer ' .. pacer)
    end
    return redis.error_reply('WRONGTYPE the key holds a value that is not a ratekeeper bucket')
  end
  o, e, g = tonumber(o), tonumber(e), tonumber(g)
  n, c, j = tonumber(n), tonumber(c), tonumber(j)
  if n ~= npp or c ~= capacity or j ~= initial then
    if not adopt then
      return redis.error_reply(string.format('RKLIMIT refill %.0f %.0f %.0f', n, c, j))
    end
    -- Checkpoint: the permits held (or owed) under the old limit now, at
    -- most the new capacity, refilling at the new rate from here.
    local now0 = (now_us - o) * 1000
    local held = math.min((now0 - math.max(e, now0 - c * n)) / n, capacity)
    e = now0 - math.floor(held * npp)
    changed = true
  end
else
  -- A new bucket holds its initial permits.
  o, e, g = now_us, -initial * npp, 0
end
local full = capacity * npp
local now = (now_us - o) * 1000
if now >= 4503599627370496 then
  local d = (now_us - o) - 86400000000
  o = o + d
  now = now - d * 1000
  e = math.max(e - d * 1000, now - full)
end
if charge > 0 then
  local held = math.max(e, now - full)
  e = math.max(held, math.min(held + charge * npp, now))
  g = (g + charge) % 9007199254740992
  changed = true
end
local base = math.max(e, now - full)
if least < permits and max_wait >= 0 then
  -- As many as fit the wait, and at least `least` (else refused below).
  local fit = math.floor((now + max_wait - base) / npp)
  if fit < permits then
    permits = math.max(fit, least)
  end
end
local next = base + permits * npp
local wait = next - now
-- min(C, (now - index) / npp), the quotient truncated toward zero.
local function available(index)
  local q = (now - index) / npp
  if q >= 0 then q = math.floor(q) else q = math.ceil(q) end
  return math.min(capacity, q)
end
-- Keeps the bucket emptying at `index` until it is full again (then it
-- equals a new one when initial = capacity), and idle_ms after (at least
-- 1 ms: Redis refuses PX 0).
local function store(index)
  redis.call('SET', key, string.format('%.0f %.0f %.0f %.0f %.0f %.0f',
      o, index, g, npp, capacity, initial),
    'PX', math.max(math.ceil(math.max(index + full - now, 0) / 1000000) + idle_ms, 1))
end
if max_wait >= 0 and wait > max_wait then
  if new or changed then
    -- The refill counts from now, as the in-memory limiter's from its
    -- creation: a new key left unwritten would start again at every
    -- request, and never fill for a request above its initial permits.
    -- A bucket taken over keeps its checkpoint, a charged one its charge.
    store(e)
  end
  return { 0, wait, available(e), now_us, 0, g }
end
-- The count wraps below 2^53.
g = (g + permits) % 9007199254740992
store(next)
return { 1, math.max(wait, 0), available(next), now_us, permits, g }
