"""Network by domain: a filtering HTTP/HTTPS proxy outside the sandbox (issue 21).

The sandbox keeps its own network namespace with nothing in it but loopback; the only way out is a Unix socket
bound into it, behind which this proxy decides per host name. Modules: `domains` (patterns, presets, the
verdict: deny wins over allow), `grants` (the user's "always" answers, kept outside the repository), `proxy`
(the asyncio server: CONNECT tunnels and plain HTTP, no TLS interception), `relay` (the stdlib-only script that
runs inside the sandbox and turns 127.0.0.1:3128 into the Unix socket). The sandbox side (binds, environment)
and the session's proxy (`network_for`) are `coder/sandbox/network.py`, which imports this package, never the
other way round. Nothing here imports the engine: questions and events go through callbacks.
"""
