-- Chained refreshes: each connection presents the refresh token it was given last.
-- Run with as many threads as connections (-t N -c N), so each thread's requests and responses
-- alternate on one connection. The starting tokens are in the file named by the first argument,
-- one per line; thread i takes line i.
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("index", counter)
end

local token
function init(args)
  local i = 0
  for line in io.lines(args[1]) do
    i = i + 1
    if i == index then token = line end
  end
  assert(token, "not enough starting tokens for thread " .. index)
end

function request()
  return wrk.format("POST", "/api/v1/auth/refresh", { ["Content-Type"] = "application/json" },
    '{"refreshToken":"' .. token .. '"}')
end

function response(status, headers, body)
  local next_token = body:match('"refreshToken":"([^"]+)"')
  if status == 200 and next_token then token = next_token end
end
