-- GET contacts with a different valid access token on each request, in rotation: the tokens file
-- (one per line) is the first argument. Each thread starts at its own offset.
local tokens = {}
local i = 0
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("offset", counter * 997)
end
function init(args)
  for line in io.lines(args[1]) do tokens[#tokens + 1] = line end
  i = offset or 0
end
function request()
  i = i + 1
  local token = tokens[(i % #tokens) + 1]
  return wrk.format("GET", "/api/v1/crm/contacts", { ["Authorization"] = "Bearer " .. token })
end
