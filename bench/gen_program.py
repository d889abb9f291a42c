"""Generates a well-typed lt program of about N lines (default 500), for
workload (d) of bench/compare.py: the same 25-line blocks as
benches/check.rs's generator (records, lists, map/filter/fold, `match exec
tool` with both arms, traverse, if/else, a linear `!String` token, a lambda
applied to a record), one long `let` chain.

Usage: python3 bench/gen_program.py [LINES] > program.lt
"""
import sys


def generate(target_lines=500):
    blocks = max(target_lines // 25, 1)
    groups = max(-(-blocks // 20), 1)
    out = [f"// Generated benchmark program: {blocks} blocks, {groups * 3} tools."]
    for k in range(groups):
        out.append(f"tool lookup_{k}: String -{{Read}}-> {{name: String, balance: Int, tier: String}};")
        out.append(f"tool refund_{k}: {{account: String, amount: Int}} -{{Write}}-> {{tx: String, ok: Bool}};")
        out.append(f"tool send_{k}: {{token: String, body: String}} -{{Network}}-> Unit;")
    out.append("let acc_0 = 0 in")
    for i in range(1, blocks + 1):
        k = (i - 1) // 20
        p = i - 1
        out.append(f"""(* block {i}: look up an account, refund, notify *)
let cfg_{i} = {{id = "cust_{i}", limit = {i} % 50 + 10, verbose = false}} in
let xs_{i} = [1, 2, 3, cfg_{i}.limit, {i}] in
let doubled_{i} = map (fn x: Int => x * 2 + 1) xs_{i} in
let big_{i} = filter (fn x: Int => x > 3 && x != 7) doubled_{i} in
let total_{i} = fold (fn acc: Int => fn x: Int => acc + x) 0 big_{i} in
let acct_{i} = match exec tool lookup_{k} cfg_{i}.id {{
    Ok(a) => {{name = a.name, cents = a.balance + total_{i}}},
    Err(e) => {{name = e, cents = 0}}
  }} in
let refunds_{i} =
  match traverse (fn n: Int => exec tool refund_{k} {{account = acct_{i}.name, amount = n}}) big_{i} {{
    Ok(rs) => fold (fn acc: Int => fn r: {{tx: String, ok: Bool}} =>
                      if r.ok then acc + 1 else acc) 0 rs,
    Err(e) => 0 - 1
  }} in
let score_{i} = if total_{i} > 100 && acct_{i}.cents >= 0
                then total_{i} * 3 - acct_{i}.cents / 2
                else (total_{i} + {i}) % 7 in
let label_{i} = if refunds_{i} > 0 then acct_{i}.name ++ " refunded" else "no refund for " ++ acct_{i}.name in
let tok_{i}: !String = "tok_{i}" in
let sent_{i} = match exec tool send_{k} {{token = tok_{i}, body = label_{i}}} {{ Ok(u) => 1, Err(e) => 0 }} in
let acc_{i} = acc_{p} + score_{i} + refunds_{i} + sent_{i} in // running total
let fnc_{i} = fn r: {{name: String, cents: Int}} => r.cents + acc_{i} in
let applied_{i} = fnc_{i} acct_{i} in""")
    out.append(f"acc_{blocks} + applied_{blocks}")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(generate(int(sys.argv[1]) if len(sys.argv) > 1 else 500))
