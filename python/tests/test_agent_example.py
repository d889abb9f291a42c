"""The agent loop of examples/python_agent: a local HTTP server plays the
model (OpenAI's chat completions), replaying recorded replies; the first
program has an error, whose diagnostic must reach the model, and the
second runs with the example's Python tools."""

import http.server
import json
import pathlib
import subprocess
import sys
import threading

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python_agent"


def serve(replies):
    requests = []

    class Model(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append({"path": self.path, "body": body})
            text = replies[min(len(requests), len(replies)) - 1]
            out = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, requests


def test_the_agent_feeds_diagnostics_back_and_runs_the_fixed_program():
    replies = json.loads((EXAMPLE / "recorded.json").read_text())
    server, requests = serve(replies)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        out = subprocess.run(
            [sys.executable, str(EXAMPLE / "agent.py"), "--base-url", url, "--model", "m",
             "Refund the last charge of customer c1"],
            capture_output=True, text=True, timeout=60,
        )
    finally:
        server.shutdown()
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["value"] == "tx_c1_4999" and result["calls"] == 2 and result["rounds"] == 2
    assert [r["path"] for r in requests] == ["/v1/chat/completions"] * 2
    first, second = (r["body"]["messages"] for r in requests)
    assert first[0]["role"] == "system" and "tool lookup" in first[0]["content"]
    assert first[1] == {"role": "user", "content": "Refund the last charge of customer c1"}
    feedback = second[-1]["content"]
    assert second[-1]["role"] == "user" and "E0202" in feedback and "last_charge" in feedback
