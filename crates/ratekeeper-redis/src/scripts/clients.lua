-- A hard cap on the live clients of one prefix (RedisLimiterBuilder::
-- max_clients). Appended to the Pacer's or the bucket's script, turned into
-- `limit(key, now_us)` (its `local key = KEYS[1]` and `local now_us = ...`
-- lines removed; see backend.rs), which decides on `key` exactly as the
-- uncapped script does and returns its reply.
--
-- KEYS[1]  the client's key ({prefix}client)
-- KEYS[2]  the registry: a sorted set of live client keys, each scored by
--          when its limit has recovered (server clock, whole ms, rounded
--          up): its schedule caught up, its bucket full
-- KEYS[3]  the overflow limit every new client shares when the registry is
--          full of clients in debt and the policy is 1 (shared)
-- ARGV[1..12] the limit's own arguments (ARGV[6]: now, ARGV[7]: idle ms)
-- ARGV[13] the cap on live clients (1 to 2^32)
-- ARGV[14] the policy for a full registry: 0 deny new clients, 1 one
--          shared overflow limit, 2 evict the least indebted client
-- Reply: the limit's six values (zeros when the client is denied), then
--   { outcome: 0 tracked, 1 denied new, 2 overflowed, 3 tracked after
--     evicting the least indebted; the registry's size after;
--     recovered clients evicted; indebted clients evicted;
--     for a denial, ns until the first live client recovers }
-- Each call removes at most 8 recovered clients (the earliest first) and 2
-- indebted ones: O(log N) per call for N live clients. All keys
-- share the prefix's hash tag (one cluster slot). Every value is an
-- integer below 2^53.
local client, registry, overflow = KEYS[1], KEYS[2], KEYS[3]
local cap = tonumber(ARGV[13])
local policy = tonumber(ARGV[14])
local idle_ms = tonumber(ARGV[7])
local now_us = tonumber(ARGV[6])
if now_us < 0 then
  local t = redis.call('TIME')
  now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local now_ms = math.floor(now_us / 1000)
-- Removes up to `n` recovered clients (score <= now): their state equals a
-- new limiter's, or holds only credit, so dropping them admits nothing
-- more. Returns how many.
local function sweep(n)
  local gone = redis.call('ZRANGEBYSCORE', registry, '-inf', now_ms, 'LIMIT', 0, n)
  if #gone > 0 then
    redis.call('DEL', unpack(gone))
    redis.call('ZREM', registry, unpack(gone))
  end
  return #gone
end
local recovered = sweep(4)
local outcome, debt, retry = 0, 0, 0
local key = client
if not redis.call('ZSCORE', registry, client) then
  local live = redis.call('ZCARD', registry)
  if live >= cap then
    -- Room for the new client: recovered clients go first (the sweep
    -- above stops at 4), then the policy.
    local freed = sweep(math.min(live - cap + 1, 4))
    recovered = recovered + freed
    live = live - freed
  end
  if live >= cap then
    if policy == 0 then
      local first = redis.call('ZRANGE', registry, 0, 0, 'WITHSCORES')
      retry = math.min(math.max(tonumber(first[2]) - now_ms, 0) * 1000000, 4503599627370496)
      return { 0, 0, 0, 0, 0, 0, 1, live, recovered, 0, retry }
    elseif policy == 1 then
      key = overflow
      outcome = 2
    else
      -- The least indebted recovers first: the lowest score. At most two
      -- a call, so that a lowered cap drains without a long script.
      local n = math.min(live - cap + 1, 2)
      local popped = redis.call('ZPOPMIN', registry, n)
      for j = 1, #popped, 2 do
        redis.call('DEL', popped[j])
      end
      debt = #popped / 2
      outcome = 3
    end
  end
end
local reply = limit(key, now_us)
if reply.err then
  return reply
end
if key == client then
  local ttl = redis.call('PTTL', client)
  if ttl >= 0 then
    -- The key lives until it has recovered, plus idle_ms: its recovery,
    -- one ms late at most (a server that does not freeze time in scripts
    -- may have moved on since it set the TTL).
    redis.call('ZADD', registry, math.ceil(now_us / 1000) + ttl - idle_ms + 1, client)
  else
    redis.call('ZREM', registry, client)
  end
end
reply[7] = outcome
reply[8] = redis.call('ZCARD', registry)
reply[9] = recovered
reply[10] = debt
reply[11] = retry
return reply
