"""The expense system behind examples/float_report, two read-only tools:

  list_expenses: String -{Read}-> List {id: String, employee: String, category: String,
                                        amount: Float, currency: String}
      the expense claims submitted in one month (the argument, "YYYY-MM"),
      read from data/expenses.json; amounts are JSON numbers with fractions
  fx_rates: String -{Read}-> List {currency: String, rate: Float}
      how much one unit of each currency is worth in the argument currency
      (only "EUR" is supported); there is no rate for CHF

Run as `python3 tools/finance.py list_expenses` (or fx_rates).
Protocol: the argument is JSON on stdin, the result JSON on stdout; a failure
is exit status 1 with a one-line reason on stderr.
"""

import json
import os
import re
import sys

EXAMPLE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Fixed reference rates (to EUR), so that the report is the same every run.
RATES_TO_EUR = [
    {"currency": "EUR", "rate": 1.0},
    {"currency": "USD", "rate": 0.9214},
    {"currency": "GBP", "rate": 1.1693},
]


def fail(message):
    sys.stderr.write(message + "\n")
    sys.exit(1)


def list_expenses(month):
    if not isinstance(month, str) or not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", month):
        fail(f"the argument must be a month such as \"2024-05\", got {json.dumps(month)}")
    with open(os.path.join(EXAMPLE_DIR, "data", "expenses.json"), encoding="utf-8") as f:
        expenses = json.load(f)
    return [e for e in expenses if e["submitted"].startswith(month + "-")]


def fx_rates(base):
    if base != "EUR":
        fail(f"no rates to {json.dumps(base)} (only \"EUR\")")
    return RATES_TO_EUR


TOOLS = {"list_expenses": list_expenses, "fx_rates": fx_rates}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in TOOLS:
        fail("usage: finance.py " + "|".join(TOOLS))
    try:
        arg = json.load(sys.stdin)
    except ValueError as e:
        fail(f"the argument is not JSON: {e}")
    json.dump(TOOLS[sys.argv[1]](arg), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
