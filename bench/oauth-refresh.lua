-- Chained refreshes at an OAuth token endpoint (RFC 6749 §6): each connection presents the
-- refresh token it was given last (both providers rotate them on every use). Run with as many
-- threads as connections (-t N -c N), so each thread's requests and answers alternate on one
-- connection. Arguments: the token endpoint's path, the Authorization header (client_secret_basic)
-- and the file of starting refresh tokens, one per line; thread i takes line i, and at the end the
-- file holds each chain's last token, where the next run goes on (a consumed token presented again
-- would end its session).
local threads = {}
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("index", counter)
  table.insert(threads, thread)
end

function init(args)
  path, auth, file = args[1], args[2], args[3]
  local i = 0
  for line in io.lines(file) do
    i = i + 1
    if i == index then token = line end
  end
  assert(token, "not enough starting tokens for thread " .. index)
end

function request()
  return wrk.format("POST", path, {
    ["Content-Type"] = "application/x-www-form-urlencoded",
    ["Authorization"] = auth,
  }, "grant_type=refresh_token&refresh_token=" .. token)
end

function response(status, headers, body)
  local next_token = body:match('"refresh_token":"([^"]+)"')
  if status == 200 and next_token then token = next_token end
end

function done(summary, latency, requests)
  local out = assert(io.open(threads[1]:get("file"), "w"))
  for _, thread in ipairs(threads) do
    out:write(thread:get("token"), "\n")
  end
  out:close()
end
