"""The incident tracker and monitoring behind examples/message_body, three
read-only tools (the data is below):

  get_incident: String -{Read}-> {id: String, title: String, severity: Int,
                                  status: String, opened_at: String}
  service_health: String -{Read}-> List {service: String, error_rate: Float, p95_ms: Int}
      the services of one area (the argument), error_rate in percent
  get_oncall: String -{Read}-> {name: String, handle: String}
      who is on call for a team (the argument)

Run as `python3 tools/ops.py get_incident` (or service_health, get_oncall).
Protocol: the argument is JSON on stdin, the result JSON on stdout; a failure
is exit status 1 with a one-line reason on stderr.
"""

import json
import sys

INCIDENTS = {
    "INC-4821": {"id": "INC-4821", "title": "Elevated checkout errors", "severity": 2,
                 "status": "investigating", "opened_at": "2024-06-03 09:12 UTC",
                 "reporter": "synthetic-monitor"},
}

HEALTH = {
    "checkout": [
        {"service": "cart", "error_rate": 0.12, "p95_ms": 210},
        {"service": "checkout-api", "error_rate": 4.271, "p95_ms": 1840},
        {"service": "payments-gateway", "error_rate": 1.05, "p95_ms": 920},
        {"service": "tax-service", "error_rate": 0.0, "p95_ms": 95},
        {"service": "fraud-check", "error_rate": 2.5, "p95_ms": 1310},
    ],
}

ONCALL = {
    "payments": {"name": "Priya Natarajan", "handle": "@priya", "phone": "+1 415 555 0107"},
}


def fail(message):
    sys.stderr.write(message + "\n")
    sys.exit(1)


def lookup(table, what):
    def tool(key):
        if key not in table:
            fail(f"no {what} {json.dumps(key)}")
        return table[key]
    return tool


TOOLS = {
    "get_incident": lookup(INCIDENTS, "incident"),
    "service_health": lookup(HEALTH, "service area"),
    "get_oncall": lookup(ONCALL, "team"),
}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in TOOLS:
        fail("usage: ops.py " + "|".join(TOOLS))
    try:
        arg = json.load(sys.stdin)
    except ValueError as e:
        fail(f"the argument is not JSON: {e}")
    if not isinstance(arg, str):
        fail("the argument must be a string")
    json.dump(TOOLS[sys.argv[1]](arg), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
