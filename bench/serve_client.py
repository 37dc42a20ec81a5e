"""The two doors of `showdown serve --http` that the GPU-session drivers use, as the UI uses
them: POST /api/call (one JSON reply) and POST /api/job (Server-Sent Events: `data: {"event":…}`
lines, then one final message with `ok` or `err`). Shared by bench/lab_jobs.py and
bench/explainer_jobs.py.
"""
import json, urllib.request


def post(url, path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    return urllib.request.urlopen(req, timeout=3600)


def call(url, body):
    """One request through /api/call; its JSON reply."""
    with post(url, "/api/call", body) as r:
        return json.load(r)


def job(url, body):
    """One job through /api/job: (final message, list of its events)."""
    events, final = [], None
    with post(url, "/api/job", body) as r:
        for raw in r:
            line = raw.decode().rstrip("\n")
            if not line.startswith("data: "):
                continue
            msg = json.loads(line[6:])
            if "event" in msg:
                events.append(msg["event"])
            else:
                final = msg
    return final, events
