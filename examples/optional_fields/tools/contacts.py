"""The CRM behind examples/optional_fields, with its two tools:

  affected_accounts: String -{Read}-> List String
      the accounts an incident affects (the argument is the incident id)
  get_contact: String -{Read}-> {id: String, name: String, preferred_name?: String,
                                 email?: String, phone: Option String, preferences: Json}
      an account's contact record

Like many real CRMs, get_contact leaves out the fields it has no value for
(`preferred_name`, `email`) but always sends `phone`, as `null` when there is no
number; `preferences` is free-form JSON that differs from account to account.

Run as `python3 tools/contacts.py affected_accounts` or `... get_contact`.
Protocol: the argument is JSON on stdin, the result JSON on stdout; a failure
is exit status 1 with a one-line reason on stderr. The data is below.
"""

import json
import sys

INCIDENTS = {
    "INC-2291": ["acct_101", "acct_102", "acct_103", "acct_104", "acct_105"],
}

# Absent keys are really absent in the JSON the tool prints.
CONTACTS = {
    "acct_101": {"id": "acct_101", "name": "Ada Lovelace", "preferred_name": "Ada",
                 "email": "ada@example.com", "phone": "+44 20 7946 0001",
                 "preferences": {"language": "en", "channel": "email"}},
    "acct_102": {"id": "acct_102", "name": "Bruno Rossi",
                 "phone": "+39 02 555 0142",
                 "preferences": {"language": "it"}},
    "acct_103": {"id": "acct_103", "name": "Chen Wei", "email": "chen.wei@example.com",
                 "phone": None,
                 "preferences": {"channel": "sms", "timezone": "Asia/Shanghai"}},
    "acct_104": {"id": "acct_104", "name": "Dana Kowalski", "preferred_name": "Dana",
                 "phone": None,
                 "preferences": {}},
    "acct_105": {"id": "acct_105", "name": "Emil Vogel", "email": "emil@example.de",
                 "phone": "+49 30 555 0199",
                 "preferences": {"language": "de", "channel": "sms", "quiet_hours": [22, 7]}},
}


def fail(message):
    sys.stderr.write(message + "\n")
    sys.exit(1)


def affected_accounts(incident):
    if incident not in INCIDENTS:
        fail(f"no incident {json.dumps(incident)}")
    return INCIDENTS[incident]


def get_contact(account):
    if account not in CONTACTS:
        fail(f"no account {json.dumps(account)}")
    return CONTACTS[account]


def main():
    tools = {"affected_accounts": affected_accounts, "get_contact": get_contact}
    if len(sys.argv) != 2 or sys.argv[1] not in tools:
        fail("usage: contacts.py affected_accounts|get_contact")
    try:
        arg = json.load(sys.stdin)
    except ValueError as e:
        fail(f"the argument is not JSON: {e}")
    if not isinstance(arg, str):
        fail("the argument must be a string")
    json.dump(tools[sys.argv[1]](arg), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
