package quota

import "github.com/redis/go-redis/v9"

// Lua scripts of the Redis ledger. Each is one atomic step; together they
// are the whole state machine, so two daemons on one Redis cannot interleave
// inside one. Every script first checks the epoch key that Reconcile writes
// last: a Redis that was flushed or restarted empty answers -1 (state lost)
// instead of starting from zeros.
//
// Keys (P is the prefix): P epoch; P u:<user> hash {total finished uploading
// unfinished}; P s:<upload> hash {user declared received flushed infl
// target seq lease due}; P b:<upload> bitmap of the chunk indexes counted;
// P due, the ZSET of tasks scored by due time in ms (or lease end while
// claimed); P holds, the ZSET of holds (sessions with a hold field) scored by
// their lease end in ms. Keys built inside scripts from the prefix are not declared in
// KEYS, so the ledger needs one Redis (or one cluster slot), not a cluster.
//
// Status codes (first element of the reply): 0 ok, 1 over quota, 2 duplicate
// chunk, 3 unknown upload, -1 state lost, -2 unknown user, -3 upload reused
// with another size, -5 upload of another user, -6 too large.
//
// Arithmetic: Lua numbers are doubles, exact only up to 2^53. Figures are
// therefore replied as the strings Redis stores (exact int64s), changed only
// by HINCRBY (exact), and compared with a sum that is refused once it passes
// MaxBytes = 2^53-1. Rounding is monotone, so a true sum past 2^53-1 always
// computes past it too, and a sum within it is exact: the comparisons below
// decide exactly as the Go ledger's int64 arithmetic does.

// Reserve, or Hold when ARGV holdMs is not '0': a hold's session has the
// field hold (its lease end in ms) and is in the holds ZSET scored by it.
// KEYS epoch, u, s, holds. ARGV user, declared, holdMs, upload.
var reserveScript = redis.NewScript(luaAdmits + `
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
local u = redis.call('HMGET', KEYS[2], 'total', 'finished', 'uploading', 'unfinished')
if not u[1] then return {-2} end
local s = redis.call('HMGET', KEYS[3], 'user', 'declared', 'hold')
if s[1] then
  -- compared as strings: both are canonical decimal integers
  if s[1] ~= ARGV[1] or s[2] ~= ARGV[2] then return {-3, u[1], u[2], u[3], u[4]} end
  if s[3] and ARGV[3] ~= '0' then
    redis.call('HSET', KEYS[3], 'hold', ARGV[3])
    redis.call('ZADD', KEYS[4], ARGV[3], ARGV[4])
  end
  return {0, u[1], u[2], u[3], u[4]}
end
if not admits(tonumber(u[1]), tonumber(u[2]), tonumber(u[3]), tonumber(ARGV[2])) then
  return {1, u[1], u[2], u[3], u[4]}
end
local uploading = redis.call('HINCRBY', KEYS[2], 'uploading', ARGV[2])
redis.call('HSET', KEYS[3], 'user', ARGV[1], 'declared', ARGV[2], 'received', 0, 'flushed', 0,
  'infl', 0, 'target', 0, 'seq', 0, 'lease', 0, 'due', 0)
if ARGV[3] ~= '0' then
  redis.call('HSET', KEYS[3], 'hold', ARGV[3])
  redis.call('ZADD', KEYS[4], ARGV[3], ARGV[4])
end
return {0, u[1], u[2], uploading, u[4]}
`)

// Renew a hold's lease. KEYS epoch, s, holds. ARGV user, holdMs, upload.
var renewScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local s = redis.call('HMGET', KEYS[2], 'user', 'hold')
if not s[1] or not s[2] then return 3 end
if s[1] ~= ARGV[1] then return -5 end
redis.call('HSET', KEYS[2], 'hold', ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
return 0
`)

// luaAdmits is the admission rule (Go: admits), shared by the scripts.
const luaAdmits = `
local MAX = 9007199254740991
local function admits(total, finished, uploading, n)
  local sum = finished + uploading + n
  if finished < -MAX or uploading < -MAX or sum > MAX then return false end
  return total <= 0 or sum <= total
end
`

// The seed's "refresh": count a chunk once, push the task's due time later.
// KEYS epoch, u, s, b, due. ARGV user, index, n, dueMs, upload.
var chunkScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local s = redis.call('HMGET', KEYS[3], 'user', 'declared', 'received')
if not s[1] then return 3 end
if s[1] ~= ARGV[1] then return -5 end
if redis.call('GETBIT', KEYS[4], ARGV[2]) == 1 then return 2 end
-- received <= declared <= 2^53-1: the difference is exact
if tonumber(ARGV[3]) > tonumber(s[2]) - tonumber(s[3]) then return -6 end
redis.call('SETBIT', KEYS[4], ARGV[2], 1)
redis.call('HINCRBY', KEYS[3], 'received', ARGV[3])
redis.call('HSET', KEYS[3], 'due', ARGV[4])
redis.call('HINCRBY', KEYS[2], 'unfinished', ARGV[3])
redis.call('ZADD', KEYS[5], ARGV[4], ARGV[5])
return 0
`)

// Claim due tasks: the ZRANGEBYSCORE, the hand-over and the lease are one
// step, so no task is taken twice and none is taken between a read and a
// delete (seed 3.5). A claimed task stays in the ZSET scored at its lease
// end: if its scanner dies, another re-sends the same flush (same seq).
// KEYS epoch, due. ARGV nowMs, leaseEndMs, limit, prefix.
// Reply: {0, upload, user, seq, target, ...} or {-1}.
var claimScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
local now = tonumber(ARGV[1])
local lease = ARGV[2]
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
local out = {0}
for _, id in ipairs(ids) do
  local sk = ARGV[4] .. 's:' .. id
  local s = redis.call('HMGET', sk, 'user', 'received', 'flushed', 'infl', 'target', 'seq', 'lease')
  if not s[1] then
    redis.call('ZREM', KEYS[2], id)
  elseif s[4] == '1' and tonumber(s[7]) > now then
    redis.call('ZADD', KEYS[2], s[7], id)
  elseif s[4] ~= '1' and s[2] == s[3] then
    redis.call('ZREM', KEYS[2], id)
  else
    local seq, target = s[6], s[5]
    if s[4] ~= '1' then
      seq = tostring(redis.call('HINCRBY', sk, 'seq', 1))
      target = s[2]
      redis.call('HSET', sk, 'infl', 1, 'target', target)
    end
    redis.call('HSET', sk, 'lease', lease)
    redis.call('ZADD', KEYS[2], lease, id)
    table.insert(out, id)
    table.insert(out, s[1])
    table.insert(out, seq)
    table.insert(out, target)
  end
end
return out
`)

// Acknowledge a flush that SQLite committed. KEYS s, due. ARGV upload, seq.
var ackScript = redis.NewScript(`
local s = redis.call('HMGET', KEYS[1], 'infl', 'seq', 'target', 'received', 'due')
if not s[1] or s[1] ~= '1' or s[2] ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'flushed', s[3], 'infl', 0)
if s[3] == s[4] then
  redis.call('ZREM', KEYS[2], ARGV[1])
else
  redis.call('ZADD', KEYS[2], s[5], ARGV[1])
end
return 1
`)

// End a session (merge if size >= 0, else abort/expiry): remove the task and
// its pending bytes, release the reservation, move a merge's bytes to
// finished, and say what had been flushed — one step.
// KEYS epoch, u, s, b, due, holds. ARGV user, upload, size.
// Reply {0, declared, received, flushed, infl, target} or {status}.
var endScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
local s = redis.call('HMGET', KEYS[3], 'user', 'declared', 'received', 'flushed', 'infl', 'target')
if not s[1] then return {3} end
if s[1] ~= ARGV[1] then return {-5} end
local size = tonumber(ARGV[3])
if size > tonumber(s[2]) then return {-6} end
if redis.call('EXISTS', KEYS[2]) == 1 then
  -- (negated as strings: Lua would print big numbers in exponent form,
  -- and Redis refuses '-0')
  if s[2] ~= '0' then redis.call('HINCRBY', KEYS[2], 'uploading', '-' .. s[2]) end
  if s[3] ~= '0' then redis.call('HINCRBY', KEYS[2], 'unfinished', '-' .. s[3]) end
  if size >= 0 then redis.call('HINCRBY', KEYS[2], 'finished', ARGV[3]) end
end
redis.call('DEL', KEYS[3], KEYS[4])
redis.call('ZREM', KEYS[5], ARGV[2])
redis.call('ZREM', KEYS[6], ARGV[2])
return {0, s[2], s[3], s[4], s[5], s[6]}
`)

// KEYS epoch, u. ARGV delta.
var addFinishedScript = redis.NewScript(luaAdmits + `
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
local u = redis.call('HMGET', KEYS[2], 'total', 'finished', 'uploading', 'unfinished')
if not u[1] then return {-2} end
local delta = tonumber(ARGV[1])
if delta > 0 and not admits(tonumber(u[1]), tonumber(u[2]), tonumber(u[3]), delta) then
  return {1, u[1], u[2], u[3], u[4]}
end
redis.call('HINCRBY', KEYS[2], 'finished', ARGV[1])
return {0}
`)

// Load a user first seen after Reconcile. KEYS epoch, u. ARGV total, finished.
var loadUserScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('HSET', KEYS[2], 'total', ARGV[1], 'finished', ARGV[2], 'uploading', 0, 'unfinished', 0)
end
return 0
`)

// KEYS epoch, u. ARGV total.
var setTotalScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('EXISTS', KEYS[2]) == 0 then return -2 end
redis.call('HSET', KEYS[2], 'total', ARGV[1])
return 0
`)

// KEYS epoch, u.
var usageScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
local u = redis.call('HMGET', KEYS[2], 'total', 'finished', 'uploading', 'unfinished')
if not u[1] then return {-2} end
return {0, u[1], u[2], u[3], u[4]}
`)

// Release the holds whose lease ended at or before nowMs, as endScript does
// without a merge. KEYS epoch, holds. ARGV nowMs, limit, prefix.
// Reply: the number released, or -1.
var expireHoldsScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local now = tonumber(ARGV[1])
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
local n = 0
for _, id in ipairs(ids) do
  local sk = ARGV[3] .. 's:' .. id
  local s = redis.call('HMGET', sk, 'user', 'declared', 'received', 'hold')
  if s[1] and s[4] and tonumber(s[4]) <= now then
    local uk = ARGV[3] .. 'u:' .. s[1]
    if redis.call('EXISTS', uk) == 1 then
      if s[2] ~= '0' then redis.call('HINCRBY', uk, 'uploading', '-' .. s[2]) end
      if s[3] ~= '0' then redis.call('HINCRBY', uk, 'unfinished', '-' .. s[3]) end
    end
    redis.call('DEL', sk, ARGV[3] .. 'b:' .. id)
    redis.call('ZREM', ARGV[3] .. 'due', id)
    n = n + 1
  end
  if not s[1] or not s[4] or tonumber(s[4]) <= now then
    redis.call('ZREM', KEYS[2], id)
  end
end
return n
`)
