-- wrk script for the benchmark driver (tests/src/bin/perf.rs).
--   wrk ... -s bench/wrk/report.lua URL -- METHOD [BODY [KEY_PREFIX]]
-- Sends METHOD with BODY; with KEY_PREFIX, every request carries its own
-- Idempotency-Key (KEY_PREFIX-thread-n), as a client retrying safely would.
-- At the end prints one JSON line: requests, duration, errors, statuses and
-- the latency percentiles (µs) the driver draws the CDFs from.

local threads = {}

function setup(thread)
  thread:set("thread_id", #threads)
  table.insert(threads, thread)
end

function init(args)
  method = args[1] or "GET"
  body = args[2]
  prefix = args[3]
  sent = 0
  statuses = {}
end

function request()
  sent = sent + 1
  local headers = wrk.headers
  if prefix then
    headers["Idempotency-Key"] = prefix .. "-" .. thread_id .. "-" .. sent
  end
  return wrk.format(method, nil, headers, body)
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local counts = {}
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("statuses")) do
      counts[status] = (counts[status] or 0) + n
    end
  end
  local parts = {}
  for status, n in pairs(counts) do
    table.insert(parts, string.format('"%d":%d', status, n))
  end
  local points = {}
  local p = 1
  while p <= 100 do
    table.insert(points, string.format("[%g,%d]", p, latency:percentile(p)))
    if p < 90 then p = p + 1 elseif p < 99 then p = p + 0.5 else p = p + 0.1 end
  end
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d,"non_2xx_3xx":%d,"statuses":{%s},"max_us":%d,"percentiles_us":[%s]}\n',
    summary.requests, summary.duration, summary.errors.connect, summary.errors.read,
    summary.errors.write, summary.errors.timeout, summary.errors.status,
    table.concat(parts, ","), latency.max, table.concat(points, ",")))
end
