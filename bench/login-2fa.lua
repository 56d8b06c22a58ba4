-- Two-factor logins: password step, then the challenge completed with a recovery code (a TOTP
-- code is single use per 30 s step per account, so a load test cannot use one per flow). The
-- accounts file has "email code" lines; each flow takes the next line. Run with as many threads as
-- connections so each thread alternates its two requests on one connection.
local lines = {}
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("index", counter)
  thread:set("threads", 0)
end
local n, next_line, temp, current
function init(args)
  for line in io.lines(args[1]) do lines[#lines + 1] = line end
  n = tonumber(args[2])
  next_line = index
end
function request()
  if temp then
    local email, code = current:match("(%S+) (%S+)")
    local body = '{"tempToken":"' .. temp .. '","code":"' .. code .. '"}'
    temp = nil
    return wrk.format("POST", "/api/v1/auth/2fa/verify", { ["Content-Type"] = "application/json" }, body)
  end
  current = lines[((next_line - 1) % #lines) + 1]
  next_line = next_line + n
  local email = current:match("(%S+) ")
  return wrk.format("POST", "/api/v1/auth/login", { ["Content-Type"] = "application/json" },
    '{"email":"' .. email .. '","password":"correct horse battery staple"}')
end
function response(status, headers, body)
  temp = body:match('"tempToken":"([^"]+)"')
end
