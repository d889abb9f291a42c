"""An agent loop in Python with lt (issue 28, item 4).

The model (any OpenAI-compatible endpoint: ollama, vLLM, OpenAI) gets the
guide to lt and the tools' declarations (``lt.prompt``), and answers a task
with one lt program. The program is checked (``lt.check``) before anything
runs; its diagnostics go back to the model until it sends a program that
checks, which then runs with the Python functions below as its tools
(``lt.run``), under a profile.

    python3 agent.py --base-url http://localhost:11434/v1 --model qwen2.5-coder:7b \\
        "Refund the last charge of customer c1"

HTTP is the standard library's (``urllib``); the only dependency is lt.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.request
from typing import Any, Dict, List, Optional

import lt

DECLARATIONS = """
tool lookup: {id: String} -{Read}-> {id: String, tier: String, cents: Int};
tool refund: {id: String, amount: Int} -{Write}-> {tx: String};
"""

PROFILE = {"name": "support", "effects": ["Read", "Write"], "max_calls": 5}


def lookup(arg: Dict[str, Any]) -> Dict[str, Any]:
    """The customer's account (a stand-in for a database)."""
    return {"id": arg["id"], "tier": "gold", "cents": 4999}


def refund(arg: Dict[str, Any]) -> Dict[str, Any]:
    """Refunds ``amount`` cents to the customer."""
    return {"tx": f"tx_{arg['id']}_{arg['amount']}"}


TOOLS = {"lookup": lookup, "refund": refund}


def chat(base_url: str, model: str, messages: List[Dict[str, str]], api_key: Optional[str] = None) -> str:
    """One chat completion: the text of the model's reply."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(
        base_url.rstrip("/") + "/chat/completions",
        data=json.dumps({"model": model, "messages": messages, "temperature": 0}).encode(),
        headers=headers,
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        reply = json.load(response)
    return str(reply["choices"][0]["message"]["content"])


def program_of(reply: str) -> str:
    """The program in a reply: the first fenced block, else the whole text."""
    m = re.search(r"```[a-zA-Z]*\n(.*?)```", reply, re.S)
    return (m.group(1) if m else reply).strip()


def solve(task: str, base_url: str, model: str, api_key: Optional[str] = None, rounds: int = 4) -> Dict[str, Any]:
    """Asks for a program until one checks (at most ``rounds`` times), runs
    it, and returns its value with the number of rounds and the program."""
    messages = [
        {"role": "system", "content": lt.prompt(DECLARATIONS)},
        {"role": "user", "content": task},
    ]
    for n in range(1, rounds + 1):
        reply = chat(base_url, model, messages, api_key)
        messages.append({"role": "assistant", "content": reply})
        program = program_of(reply)
        checked = lt.check(program, declarations=DECLARATIONS, profile=PROFILE)
        if not checked.ok:
            errors = "\n".join(str(d) for d in checked.diagnostics)
            messages.append(
                {
                    "role": "user",
                    "content": f"The program has errors; nothing ran. Fix them and send the whole program again.\n{errors}",
                }
            )
            continue
        result = lt.run(program, tools=TOOLS, declarations=DECLARATIONS, profile=PROFILE)
        return {"value": result.value, "calls": result.calls, "rounds": n, "program": program}
    raise SystemExit(f"no program checked after {rounds} rounds")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL", "http://localhost:11434/v1"))
    parser.add_argument("--model", default=os.environ.get("LT_MODEL", "qwen2.5-coder:7b"))
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    out = solve(args.task, args.base_url, args.model, os.environ.get("OPENAI_API_KEY"), args.rounds)
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
