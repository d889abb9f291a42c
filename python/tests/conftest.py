"""Shared programs of the lt package's tests."""

LOOKUP = """
tool lookup: {id: String} -{Read}-> {id: String, tier: String, cents: Int};
match exec tool lookup {id = "c1"} {
  Ok(a) => a.tier,
  Err(e) => e
}
"""

REFUND = """
tool lookup: {id: String} -{Read}-> {id: String, tier: String, cents: Int};
tool refund: {id: String, amount: Int} -{Write}-> {tx: String};
match exec tool lookup {id = "c1"} {
  Ok(a) => match exec tool refund {id = a.id, amount = a.cents} {
    Ok(r) => r.tx,
    Err(e) => e
  },
  Err(e) => e
}
"""

GATHER = """
tool slow: {n: Int} -{Read}-> Int;
let g = gather { a = exec tool slow {n = 1}, b = exec tool slow {n = 2}, c = exec tool slow {n = 3} } in
match g.a { Ok(a) => match g.b { Ok(b) => match g.c { Ok(c) => a + b + c, Err(e) => 0 }, Err(e) => 0 }, Err(e) => 0 }
"""


def lookup(arg):
    return {"id": arg["id"], "tier": "gold", "cents": 4999}


def refund(arg):
    return {"tx": "tx_" + arg["id"] + "_" + str(arg["amount"])}
