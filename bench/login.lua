-- Password logins (no 2FA) for the account the benchmark created.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"email":"bench@example.com","password":"correct horse battery staple"}'
