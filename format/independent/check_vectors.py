"""Self-check: read every golden vector and compare with its expected.jsonl."""
import json, os, subprocess, sys, glob
HERE = os.path.dirname(os.path.abspath(__file__))
base = os.path.join(os.path.dirname(HERE), "vectors")
roots = sorted(glob.glob(base + "/v*/*/"))
roots = [r.rstrip("/") for r in roots]
out = subprocess.run([sys.executable, os.path.join(HERE, "reader.py")] + roots, capture_output=True, text=True)
if out.stderr: print(out.stderr)
lines = out.stdout.splitlines()
assert len(lines) == len(roots)
ok = True
for r, line in zip(roots, lines):
    obj = json.loads(line)
    name = r[len(base)+1:]
    if obj.get("not_a_root"):
        print(name, "NOT A ROOT"); ok = False; continue
    exp = [json.loads(l) for l in open(r + "/expected.jsonl", encoding="utf-8") if l.strip()]
    msgs = []
    for log in obj["logs"]:
        if log["end"] != {"verdict": "clean"}:
            msgs.append("%s end %s" % (log["log"], log["end"])); ok = False
        msgs.append("%s count=%d head=%d" % (log["log"], log["count"], log["headSeq"]))
    if os.path.isdir(r + "/sessions"):
        recs = [rec for log in obj["logs"] if log["log"] != "claims.log" for rec in log["records"]]
        same = recs == exp
        if not same:
            ok = False
            for i,(a,b) in enumerate(zip(recs, exp)):
                if a != b: print("  first diff at", i, a, b); break
            print("  len", len(recs), len(exp))
        msgs.append("records==expected: %s (%d)" % (same, len(exp)))
    else:
        msgs.append("claims expected lines: %d" % len(exp))
    print(name, "; ".join(msgs))
print("ALL OK" if ok else "FAIL")
sys.exit(0 if ok else 1)
