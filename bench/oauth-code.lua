-- Code exchanges (OAuth 2.1 authorization code with PKCE), two requests each on one connection:
-- the person's authorization answers with a code, which the next request exchanges at the token
-- endpoint with the PKCE verifier. Gatehouse: POST /api/v1/oauth2/authorize (the authorization
-- page's call) with the person's token, the code in the JSON's redirectTo; the peer: GET of its
-- authorization endpoint with the person's session cookie, the code in the Location header. Run
-- with -t N -c N (one connection per thread: requests and answers alternate).
-- Arguments: "gatehouse" or "peer"; the authorization (Gatehouse: the JSON body; the peer: path
-- and query); the person's credential (Gatehouse: "Bearer …"; the peer: a Cookie header); the
-- token endpoint's path; the client's Authorization header; the rest of the token request's form
-- ("&redirect_uri=…&code_verifier=…").
-- Prints "exchanges N failed M" at the end: the token answers with an access token, and the
-- authorizations or exchanges that did not give one.
local threads = {}
function setup(thread)
  table.insert(threads, thread)
end

local mode, authorize, credential, token_path, basic, tail
local code
local waiting_for_token = false
exchanges, failed = 0, 0
function init(args)
  mode, authorize, credential, token_path, basic, tail = args[1], args[2], args[3], args[4], args[5], args[6]
end

function request()
  if code then
    local c = code
    code = nil
    waiting_for_token = true
    return wrk.format("POST", token_path, {
      ["Content-Type"] = "application/x-www-form-urlencoded",
      ["Authorization"] = basic,
    }, "grant_type=authorization_code&code=" .. c .. tail)
  elseif mode == "gatehouse" then
    return wrk.format("POST", "/api/v1/oauth2/authorize", {
      ["Content-Type"] = "application/json",
      ["Authorization"] = credential,
    }, authorize)
  else
    return wrk.format("GET", authorize, { ["Cookie"] = credential })
  end
end

function response(status, headers, body)
  if waiting_for_token then
    waiting_for_token = false
    if status == 200 and body:find('"access_token"', 1, true) then
      exchanges = exchanges + 1
    else
      failed = failed + 1
    end
    return
  end
  if mode == "gatehouse" then
    code = body:match('[?&]code=([^&"]+)')
  else
    local location = headers["Location"] or headers["location"]
    code = location and location:match("[?&]code=([^&]+)")
  end
  if not code then failed = failed + 1 end
end

function done(summary, latency, requests)
  local n, f = 0, 0
  for _, thread in ipairs(threads) do
    n = n + thread:get("exchanges")
    f = f + thread:get("failed")
  end
  io.write(string.format("exchanges %d failed %d\n", n, f))
end
