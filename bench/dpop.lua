-- GET with an access token, as a bearer token or DPoP-bound (RFC 9449 §7), for bench/dpop.sh.
-- Both kinds go through this script, so that the cost of making requests in Lua falls on both.
-- Arguments: the path, the scheme (Bearer or DPoP), the token, the proofs' file prefix ("-" for
-- none) and any further headers as "Name: value". Thread i reads PREFIX.i, its own slice of the
-- proofs (bench/dpop-proofs.mjs made them), and sends each once: the server accepts a jti once,
-- so a proof sent again would be a 401. Past the end of its slice a thread starts over (those are
-- the 401s wrk counts as non-2xx), and the summary line says so: "proofs USED of HAVE REUSED".
local threads = {}
function setup(thread)
  table.insert(threads, thread)
  thread:set("index", #threads)
end

function init(args)
  path = args[1]
  headers = { ["Authorization"] = args[2] .. " " .. args[3] }
  for i = 5, #args do
    local name, value = args[i]:match("^([^:]+):%s*(.*)$")
    headers[name] = value
  end
  proofs = {}
  if args[4] ~= "-" then
    for line in io.lines(args[4] .. "." .. index) do proofs[#proofs + 1] = line end
    assert(#proofs > 0, "no proofs for thread " .. index)
  end
  have, used = #proofs, 0
end

function request()
  if have > 0 then
    used = used + 1
    headers["DPoP"] = proofs[(used - 1) % have + 1]
  end
  return wrk.format("GET", path, headers)
end

function done(summary, latency, requests)
  local h, u, r = 0, 0, 0
  for _, thread in ipairs(threads) do
    local have, used = thread:get("have"), thread:get("used")
    h, u, r = h + have, u + used, r + math.max(0, used - have)
  end
  if h > 0 then io.write(string.format("proofs %d of %d %d\n", u, h, r)) end
end
