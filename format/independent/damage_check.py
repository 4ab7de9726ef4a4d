"""Damage scenarios on copies of the vectors (made under $TMPDIR).

Each scenario states the verdict FORMAT.md gives (the section it follows is named in the
label or the comment) and is checked against reader.py; the script prints every verdict and
exits non-zero if one differs.
"""
import json, os, shutil, sys, struct, tempfile, zlib
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import reader
V = os.path.join(os.path.dirname(HERE), "vectors")
T = tempfile.mkdtemp(prefix="makalog-independent-")
FAILS = []


def fresh(vec):
    d = os.path.join(T, vec.replace("/", "_"))
    if os.path.exists(d): shutil.rmtree(d)
    shutil.copytree(os.path.join(V, vec), d, symlinks=True)
    return d

def seg(d):
    sdir = os.path.join(d, "sessions", os.listdir(os.path.join(d, "sessions"))[0])
    segs = sorted(f for f in os.listdir(sdir) if f.endswith(".seg"))
    return sdir, segs

def rel(d, path):
    return os.path.relpath(path, d)

def check(label, d, verdict, file=None, offset=None, files=None, count=None, which=0):
    L = reader.read_root(d)["logs"][which]
    exp = {"verdict": verdict}
    if file is not None: exp["file"] = file
    if offset is not None: exp["offset"] = offset
    if files is not None: exp["files"] = files
    ok = L["end"] == exp and (count is None or L["count"] == count)
    print("%-4s %-64s count=%d end=%s" % ("ok" if ok else "FAIL", label, L["count"],
                                         json.dumps(L["end"])))
    if not ok:
        print("     expected count=%s end=%s" % (count, json.dumps(exp)))
        FAILS.append(label)

def rd(path): return bytearray(open(path, "rb").read())
def wr(path, b): open(path, "wb").write(bytes(b))

def flip(path, off, bit=0):
    b = rd(path); b[off] ^= 1 << bit; wr(path, b)

def trunc(path, n):
    with open(path, "r+b") as f: f.truncate(n)

def fix_header_crc(b, hlen):
    struct.pack_into("<I", b, hlen - 4, zlib.crc32(bytes(b[:hlen - 4])) & 0xFFFFFFFF)

def patch_header(path, hlen, off, data):
    b = rd(path); b[off:off + len(data)] = data; fix_header_crc(b, hlen); wr(path, b)

def fix_frame_crc(b, p, overhead):
    n = struct.unpack_from("<I", b, p)[0]
    c = zlib.crc32(bytes(b[p:p + 4]))
    c = zlib.crc32(bytes(b[p + 8:p + overhead + n]), c) & 0xFFFFFFFF
    struct.pack_into("<I", b, p + 4, c)

def records(d):
    return reader.read_root(d)["logs"][0]["records"]

def first_frame(path, overhead):
    b = rd(path); n = struct.unpack_from("<I", b, 256)[0]
    return bytes(b[256:256 + overhead + n])


for v in ("v1", "v2", "v3"):
    has_d = v != "v1"
    OV = 57 if has_d else 49
    print("=====", v)

    # --- single-segment: the last segment, frames (steps 2-4, 6)
    S = v + "/single-segment"
    d = fresh(S); sdir, segs = seg(d); F = "sessions/vector-1/" + segs[0]
    p = os.path.join(sdir, segs[0])
    R = records(d); offs = [r["offset"] for r in R]; size = os.path.getsize(p)
    print("offsets", offs, "size", size)
    P = lambda d: os.path.join(seg(d)[0], segs[0])

    trunc(p, offs[-1] + 30)
    check("single: truncate last frame mid-frame", d, "torn_tail", F, offs[-1], count=4)
    d = fresh(S); trunc(P(d), offs[-1])
    check("single: truncate at frame boundary", d, "clean", count=4)
    d = fresh(S); flip(P(d), offs[-1] + 40)
    check("single: flip bit in last frame's payload", d, "torn_tail", F, offs[-1], count=4)
    d = fresh(S); flip(P(d), size - 1)
    check("single: flip bit in last frame's chain (CRC fails)", d, "torn_tail", F, offs[-1])
    d = fresh(S); flip(P(d), offs[1] + 40)
    check("single: flip bit in 2nd frame (evidence after)", d, "damage", F, offs[1], count=1)
    d = fresh(S); wr(P(d), b"\x01" * 100 + b"\0" * 300)
    check("single: junk header, zeros after 256: torn create", d, "torn_create", F, count=0)
    d = fresh(S); wr(P(d), b"")
    check("single: empty file: torn create", d, "torn_create", F)
    d = fresh(S); wr(P(d), b"\x07" * 100)
    check("single: 100-byte file (shorter than a header): torn create", d, "torn_create", F)
    d = fresh(S)
    with open(P(d), "ab") as f: f.write(b"\0" * 5000 + b"\x07" + b"\0" * 10)
    check("single: zeros, a stray byte: torn tail at end of valid data", d, "torn_tail", F, size,
          count=5)
    d = fresh(S); b = rd(P(d)); fr = bytes(b[offs[2]:offs[3]])
    with open(P(d), "ab") as f: f.write(fr)
    # step 4: out of sequence (and in v2/v3 d below the previous d): damage, no search
    check("single: frame 3 repeated at the end", d, "damage", F, size, count=5)

    # step 2 + 6: a zeroed frame, later frames intact: damage at B, the first non-zero byte
    d = fresh(S); b = rd(P(d)); b[offs[1]:offs[2]] = bytes(offs[2] - offs[1]); wr(P(d), b)
    B = next(i for i in range(offs[1], len(b)) if b[i])
    check("single: frame 2 zeroed, 3-5 intact: damage at B", d, "damage", F, B, count=1)
    # step 6: the search covers the bytes from P (the zero frame head, where reading stopped)
    # to the end of the file, candidates from P + 1 on, seq bound next + floor(L / overhead):
    # the frame after the zeroed one (at B) is a candidate, valid, and evidence (version 1:
    # any valid frame; versions 2/3: its d is at least next).  Damage at B (NOTES.md, N1).
    R = records(fresh(S))
    for z in (2, 3):
        d = fresh(S); b = rd(P(d)); b[offs[z]:offs[z + 1]] = bytes(offs[z + 1] - offs[z])
        wr(P(d), b)
        B = next(i for i in range(offs[z], len(b)) if b[i])
        ev = (not has_d) or any(r["durableSeq"] >= z + 1 for r in R[z + 1:])
        assert ev and B == offs[z + 1], (z, B)
        check("single: frame %d zeroed, later frames intact: damage at B (N1)" % (z + 1), d,
              "damage", F, B, count=z)
    if has_d:
        # step 4: d below the previous frame's d is damage (was a bad frame before)
        d = fresh(S); b = rd(P(d)); struct.pack_into("<Q", b, offs[-1] + 17, 0)
        fix_frame_crc(b, offs[-1], OV); wr(P(d), b)
        check("single: last frame's d below previous d (CRC fixed)", d, "damage", F, offs[-1],
              count=4)
        # step 3: d not below seq is a bad frame: torn tail without evidence
        d = fresh(S); b = rd(P(d)); struct.pack_into("<Q", b, offs[-1] + 17, 5)
        fix_frame_crc(b, offs[-1], OV); wr(P(d), b)
        check("single: last frame's d = its seq (CRC fixed): bad frame", d, "torn_tail", F,
              offs[-1], count=4)

    # `makalog dump`: payloads nested 127 deep (payload) and 128 deep (payloadHex), appended
    # as valid frames (seq, d, chain, CRC) to the last segment and read end to end
    d = fresh(S); b = rd(P(d)); R0 = records(d); last = R0[-1]
    n_last = struct.unpack_from("<I", b, last["offset"])[0]
    pos = last["offset"] + OV + n_last; assert all(x == 0 for x in b[pos:])
    b = b[:pos]; prev = bytes.fromhex(last["chain"]); sq = last["seq"] + 1
    dd = last.get("durableSeq", 0)
    nest = [b"[" * 127 + b"]" * 127, b"[" * 128 + b"]" * 128,
            b'{"k":' * 127 + b"0" + b"}" * 127, b'{"k":' * 128 + b"0" + b"}" * 128]
    for pl in nest:
        head = struct.pack("<IIQB", len(pl), 0, sq, 2) + (struct.pack("<Q", dd) if has_d else b"")
        ch = reader.chain_next(prev, sq, 2, pl, 0, len(pl))
        fr = bytearray(head + pl + ch); fix_frame_crc(fr, 0, OV); b += fr
        prev = ch; sq += 1
    wr(P(d), b)
    check("single: 4 frames, payloads nested 127/128 deep, appended", d, "clean",
          count=len(R0) + 4)
    got = [("payload" in r, "payloadHex" in r) for r in records(d)[len(R0):]]
    want = [(True, False), (False, True), (True, False), (False, True)]
    ok = got == want and records(d)[len(R0)]["payload"] == eval("[" * 127 + "]" * 127)
    print("%-4s %-64s %s" % ("ok" if ok else "FAIL", "single: depth 127 payload, 128 payloadHex",
                             got))
    if not ok: FAILS.append("nested payload end to end")

    # Third revision, item 22: the only segment renamed to 2^64 (20 digits, above 2^64 - 1)
    # is not a segment, so the session has none (item 24): no record, genesis head, clean.
    # Before the revision this was damage at byte 0.  Renamed to 2^64 - 1 it is a segment
    # whose header's first seq (1) is not its name's number: damage at byte 24 (fourth
    # revision, "Where a segment belongs"; before: byte 0).
    d = fresh(S); os.rename(P(d), os.path.join(seg(d)[0], "18446744073709551616.seg"))
    check("single: only seg renamed 18446744073709551616.seg: no segment", d, "clean",
          count=0)
    L0 = reader.read_root(d)["logs"][0]
    if not (L0["headSeq"] == 0 and L0["chain"] == reader.genesis("vector-1").hex()):
        FAILS.append("2^64 name: genesis head"); print("FAIL genesis head", L0)
    d = fresh(S); os.rename(P(d), os.path.join(seg(d)[0], "18446744073709551615.seg"))
    check("single: only seg renamed 18446744073709551615.seg: 24", d, "damage",
          "sessions/vector-1/18446744073709551615.seg", 24)

    # "Where a header that does not decode is reported"
    d = fresh(S); flip(P(d), 20)
    check("single: header byte flipped: CRC at 252", d, "damage", F, 252, count=0)
    d = fresh(S); flip(P(d), 3)
    check("single: magic flipped: 0", d, "damage", F, 0)
    # step 3 (fourth revision): the magic is checked first, the CRC (of bytes 0..252) before
    # the fields after the magic: a wrong magic with a CRC recomputed over it is still 0
    d = fresh(S); patch_header(P(d), 256, 3, b"X")
    check("single: magic wrong, CRC recomputed: 0", d, "damage", F, 0)
    d = fresh(S); flip(P(d), 3); flip(P(d), 20)
    check("single: magic and byte 20 flipped: 0 (magic before CRC)", d, "damage", F, 0)
    sid_len = struct.unpack_from("<H", rd(P(d)), 64)[0]
    for label, off, data, exp_off in (
            ("version 9", 8, b"\x09\x00", 8),
            ("checksum algorithm 2", 10, b"\x02", 10),
            ("flags 1", 11, b"\x01", 11),
            ("max payload 0", 12, b"\0\0\0\0", 12),
            ("max payload 16 MiB + 1", 12, struct.pack("<I", (16 << 20) + 1), 12),
            ("first seq 0", 24, b"\0" * 8, 24),
            ("session id length 0", 64, b"\0\0", 64),
            ("session id length 129", 64, b"\x81\x00", 64),
            ("session id byte '!'", 67, b"!", 66),
            ("session id byte 0xff (not UTF-8)", 66, b"\xff", 66),
            ("non-zero padding after the id", 66 + sid_len + 3, b"\x01", 66 + sid_len + 3),
            ("non-zero reserved byte 230", 230, b"\x01", 230)):
        d = fresh(S); patch_header(P(d), 256, off, data)
        check("single: header CRC ok, %s: %d" % (label, exp_off), d, "damage", F, exp_off)
    # a header that does not decode and only zeros after byte 256: torn create, whatever fails
    for label, off, data in (("version 9", 8, b"\x09\x00"),
                             ("session id byte '!'", 67, b"!")):
        d = fresh(S); b = rd(P(d)); b[off:off + len(data)] = data; fix_header_crc(b, 256)
        wr(P(d), bytes(b[:256]) + bytes(500))
        check("single: header CRC ok, %s, zeros after: torn create" % label, d, "torn_create", F)
    # a header that decodes but names another (valid) session: where it belongs, byte 66
    # (fourth revision: "damage at the field that shows it"; before: byte 0)
    d = fresh(S); patch_header(P(d), 256, 66 + sid_len - 1, b"9")
    check("single: header names another session: 66", d, "damage", F, 66)
    # a longer id naming another session is still reported at 66 (the session id), not 64
    d = fresh(S); patch_header(P(d), 256, 64, struct.pack("<H", sid_len + 1))
    patch_header(P(d), 256, 66 + sid_len, b"x")
    check("single: header names a longer session id: 66", d, "damage", F, 66)
    # "Where a segment belongs", each check at its byte, the first met reported
    d = fresh(S); patch_header(P(d), 256, 32, b"\xee")
    check("single: prev chain not genesis (CRC fixed): 32", d, "damage", F, 32, count=0)
    d = fresh(S); patch_header(P(d), 256, 16, struct.pack("<Q", 1))
    check("single: ordinal 1 (CRC fixed): 16", d, "damage", F, 16, count=0)
    d = fresh(S); patch_header(P(d), 256, 16, struct.pack("<Q", 1))
    patch_header(P(d), 256, 32, b"\xee")
    check("single: ordinal 1 and prev chain wrong: 16 (ordinal first)", d, "damage", F, 16)
    d = fresh(S); patch_header(P(d), 256, 24, struct.pack("<Q", 2))
    check("single: first seq 2 in 00..01.seg: 24", d, "damage", F, 24)
    d = fresh(S); patch_header(P(d), 256, 24, struct.pack("<Q", 2))
    os.rename(P(d), os.path.join(seg(d)[0], "00000000000000000002.seg"))
    # first seq 2 = its name's number, but the first file needs first seq 1: "has ordinal 0
    # and `first seq` 1 (byte 16)", both reported at 16 (NOTES.md, N9)
    check("single: first seq 2 in 00..02.seg (ordinal 0): 16", d, "damage",
          "sessions/vector-1/00000000000000000002.seg", 16)
    d = fresh(S); patch_header(P(d), 256, 24, struct.pack("<Q", 2))
    patch_header(P(d), 256, 16, struct.pack("<Q", 3))
    check("single: first seq != name and ordinal 3: 24 (name first)", d, "damage", F, 24)
    d = fresh(S); patch_header(P(d), 256, 66 + sid_len - 1, b"9")
    patch_header(P(d), 256, 24, struct.pack("<Q", 2)); patch_header(P(d), 256, 32, b"\xee")
    check("single: other session, first seq != name, chain: 66 (session first)", d, "damage",
          F, 66)

    # --- rolled: sealed segments, footers, continuity
    S = v + "/rolled"
    d = fresh(S); sdir, segs = seg(d)
    G = lambda i: "sessions/vector-2/" + segs[i]
    Q = lambda d, i: os.path.join(seg(d)[0], segs[i])
    s0 = os.path.getsize(Q(d, 0)); foot0 = s0 - 68
    n0 = sum(1 for r in records(d) if r["file"] == G(0))
    print("segments", segs, "seg 1 frames", n0, "footer at", foot0)

    flip(Q(d, 0), 300)
    check("rolled: flip bit in sealed seg 1 frame", d, "damage", G(0), 256, count=0)
    d = fresh(S); flip(Q(d, 0), s0 - 30)
    check("rolled: seg 1 footer CRC fails: damage at footer", d, "damage", G(0), foot0, count=n0)
    d = fresh(S); b = rd(Q(d, 0)); struct.pack_into("<Q", b, foot0 + 24, n0 + 1)
    struct.pack_into("<I", b, foot0 + 64, zlib.crc32(bytes(b[foot0:foot0 + 64])) & 0xFFFFFFFF)
    wr(Q(d, 0), b)
    check("rolled: seg 1 footer frame count wrong (CRC ok): footer", d, "damage", G(0), foot0)
    d = fresh(S); flip(Q(d, 1), 70)
    check("rolled: corrupt header of seg 2 (CRC): 252", d, "damage", G(1), 252, count=n0)
    d = fresh(S); trunc(Q(d, 1), 100)
    check("rolled: seg 2 cut to 100 bytes (not last): at its length", d, "damage", G(1), 100)
    d = fresh(S); wr(Q(d, 1), b"")
    check("rolled: seg 2 empty (not last): at 0", d, "damage", G(1), 0)
    d = fresh(S); wr(Q(d, 1), bytes(4096))
    check("rolled: seg 2 all zeros (not last): magic, 0", d, "damage", G(1), 0)
    d = fresh(S); flip(Q(d, len(segs) - 1), 3)
    check("rolled: magic of last seg flipped, data after: 0", d, "damage", G(-1), 0)
    d = fresh(S); os.remove(Q(d, 2))
    check("rolled: middle segment deleted", d, "mismatch", files=[G(1), G(3)])
    d = fresh(S); trunc(Q(d, 0), foot0)
    check("rolled: seal footer of seg 1 removed", d, "damage", G(0), foot0, count=n0)
    d = fresh(S); trunc(Q(d, 0), s0 - 10)
    check("rolled: seal footer of seg 1 cut short", d, "damage", G(0), foot0, count=n0)
    d = fresh(S)
    with open(Q(d, 0), "ab") as f: f.write(b"\0" * 100)
    check("rolled: zeros after seg 1 footer (allowed)", d, "clean")
    d = fresh(S)
    with open(Q(d, 0), "ab") as f: f.write(b"\0" * 10 + b"x")
    # step 5 + 6: no evidence: damage at the end of the valid data (the footer's start)
    check("rolled: junk after seg 1 footer, no evidence", d, "damage", G(0), foot0)
    d = fresh(S); ev = first_frame(Q(d, 2), OV)
    with open(Q(d, 0), "ab") as f: f.write(b"x" + ev)
    check("rolled: junk + evidence frame after seg 1 footer: damage at B", d, "damage", G(0), s0)
    d = fresh(S)
    for s_ in segs[1:]: os.remove(Q(d, segs.index(s_)))
    check("rolled: only seg 1 left (sealed last segment)", d, "clean", count=n0)
    with open(Q(d, 0), "ab") as f: f.write(b"junk")
    check("rolled: only seg 1 left + junk after footer", d, "torn_tail", G(0), foot0)
    d = fresh(S)
    for s_ in segs[1:]: os.remove(Q(d, segs.index(s_)))
    with open(Q(d, 0), "ab") as f: f.write(b"x" + ev)
    check("rolled: only seg 1 left + junk + evidence: damage at B", d, "damage", G(0), s0)
    # "The search for evidence after damage": a whole footer that decodes is evidence in
    # version 1; in versions 2 and 3 its position is passed over (no evidence: a torn tail)
    d = fresh(S)
    for s_ in segs[1:]: os.remove(Q(d, segs.index(s_)))
    foot = bytes(rd(Q(d, 0))[foot0:s0])
    with open(Q(d, 0), "ab") as f: f.write(b"x" + foot)
    if has_d:
        check("rolled: only seg 1 left + junk + a footer copy: torn tail", d, "torn_tail",
              G(0), foot0)
    else:
        check("rolled: only seg 1 left + junk + a footer copy: damage at B", d, "damage",
              G(0), s0)
    d = fresh(S)
    for s_ in segs[1:]: os.remove(Q(d, segs.index(s_)))
    trunc(Q(d, 0), s0 - 5)
    check("rolled: only seg 1 left, footer cut short", d, "torn_tail", G(0), foot0)
    d = fresh(S); wr(Q(d, len(segs) - 1), bytes(4096))
    check("rolled: last segment all zeros (torn create)", d, "torn_create", G(-1))
    d = fresh(S); p = Q(d, len(segs) - 1); b = rd(p); b[0] ^= 1
    wr(p, bytes(b[:256]) + b"\0" * 100)
    check("rolled: last segment junk header + zeros (torn create)", d, "torn_create", G(-1))
    d = fresh(S)
    shutil.copy(os.path.join(V, v, "single-segment/sessions/vector-1",
                             "00000000000000000001.seg"), Q(d, 0))
    check("rolled: seg 1 replaced by another session's segment: 66", d, "damage", G(0), 66,
          count=0)
    d = fresh(S); os.rename(Q(d, len(segs) - 1), os.path.join(seg(d)[0],
                                                             "00000000000000000099.seg"))
    check("rolled: last segment renamed (name != first seq): 24", d, "damage",
          "sessions/vector-2/00000000000000000099.seg", 24)
    d = fresh(S); os.symlink("/etc/passwd", os.path.join(seg(d)[0], "00000000000000000999.seg"))
    check("rolled: symlink segment appended (ignored)", d, "clean")

    # Third revision, "Entries of a root": a segment's name is exactly 20 ASCII digits and
    # `.seg` whose number fits in 64 bits; any other name (a number above 2^64 - 1, another
    # length) is an unexpected entry, not part of the log (NOTES.md, item 22).
    last = rd(Q(d, len(segs) - 1))
    for nm in ("18446744073709551616.seg", "99999999999999999999.seg",
               "000000000000000000099.seg", "0000000000000000099.seg"):
        d = fresh(S); wr(os.path.join(seg(d)[0], nm), last)
        check("rolled: copy of last seg as %s: not a segment" % nm, d, "clean")
    # (Were they segments, the last segment would be followed by another and, having no
    # footer, be damage: "clean" shows they are left out.)
    # "Where a segment belongs" (item 13): the first segment file in name order has ordinal
    # 0, first seq 1, prev chain genesis; a session whose first segments are missing is
    # damage at byte 16 of the first file left (fourth revision; before: byte 0).
    d = fresh(S); os.remove(Q(d, 0))
    check("rolled: seg 1 deleted: 16 of the first file left", d, "damage", G(1), 16, count=0)
    d = fresh(S); os.remove(Q(d, 0)); os.remove(Q(d, 1))
    check("rolled: segs 1-2 deleted: 16 of the first file left", d, "damage", G(2), 16, count=0)
    # the first file left made to look first (ordinal 0, CRC fixed): its first seq is not 1
    d = fresh(S); os.remove(Q(d, 0)); patch_header(Q(d, 1), 256, 16, struct.pack("<Q", 0))
    check("rolled: seg 1 deleted, seg 2 ordinal 0: 16 (first seq not 1)", d, "damage", G(1),
          16, count=0)
    # ... and also first seq 1 but still named for its real first seq: 24 (name first)
    patch_header(Q(d, 1), 256, 24, struct.pack("<Q", 1))
    check("rolled: seg 1 deleted, seg 2 ordinal 0, first seq 1: 24", d, "damage", G(1), 24)
    # ... and renamed 00..01.seg: only its prev chain (seg 1's last chain) is left: 32
    os.rename(Q(d, 1), Q(d, 0))
    check("rolled: seg 2 made first in all but prev chain: 32", d, "damage", G(0), 32,
          count=0)
    # a later segment naming another session: 66 at that file, the prefix before it kept
    d = fresh(S); sl = struct.unpack_from("<H", rd(Q(d, 1)), 64)[0]
    patch_header(Q(d, 1), 256, 66 + sl - 1, b"9")
    check("rolled: seg 2 names another session: 66", d, "damage", G(1), 66, count=n0)
    # a later segment whose first seq is not its name's: 24 (before the continuation check)
    d = fresh(S); fs = struct.unpack_from("<Q", rd(Q(d, 1)), 24)[0]
    patch_header(Q(d, 1), 256, 24, struct.pack("<Q", fs + 1))
    check("rolled: seg 2 first seq != its name: 24", d, "damage", G(1), 24, count=n0)
    # a later segment with a wrong prev chain only breaks the continuation: a mismatch
    d = fresh(S); patch_header(Q(d, 1), 256, 40, b"\xee")
    check("rolled: seg 2 prev chain wrong: mismatch (not 32)", d, "mismatch",
          files=[G(0), G(1)], count=n0)
    # a later file with ordinal 0 is not the first file: it breaks only the continuation
    # (ordinal), a mismatch naming both files (before the revision: damage at 0)
    n01 = sum(1 for r in records(fresh(S)) if r["file"] in (G(0), G(1)))
    d = fresh(S); patch_header(Q(d, 2), 256, 16, struct.pack("<Q", 0))
    check("rolled: seg 3 ordinal 0 (CRC fixed): mismatch", d, "mismatch", files=[G(1), G(2)],
          count=n01)
    # item 24: a session directory with no segment: no record, genesis head, clean
    d = fresh(S)
    for i in range(len(segs)): os.rename(Q(d, i), Q(d, i) + ".old")
    L0 = reader.read_root(d)["logs"][0]
    ok = (L0["headSeq"] == 0 and L0["chain"] == reader.genesis("vector-2").hex())
    check("rolled: all segs renamed *.seg.old: no segment, clean", d, "clean", count=0)
    if not ok: FAILS.append("no segment: genesis head"); print("FAIL genesis head", L0)
    d = fresh(S); os.mkdir(os.path.join(d, "sessions", "vector-0"))
    wr(os.path.join(d, "sessions", "vector-0", "18446744073709551616.seg"), last)
    L0 = reader.read_root(d)["logs"][0]
    ok = (L0["log"] == "sessions/vector-0" and L0["headSeq"] == 0
          and L0["chain"] == reader.genesis("vector-0").hex())
    check("rolled: extra session dir, only a 2^64 name: clean", d, "clean", count=0)
    if not ok: FAILS.append("empty session: genesis head"); print("FAIL genesis head", L0)

    # --- claims log
    S = v + "/claims"
    d = fresh(S); p = os.path.join(d, "claims.log")
    co = [r["offset"] for r in records(d)]
    b = rd(p); end = co[-1] + len(bytes(b[co[-1]:]).rstrip(b"\0"))
    C = lambda d: os.path.join(d, "claims.log")
    flip(p, co[-1] + 50)
    check("claims: flip bit in last frame", d, "torn_tail", "claims.log", co[-1])
    d = fresh(S); flip(C(d), co[2] + 50)
    check("claims: flip bit in 3rd frame", d, "damage", "claims.log", co[2], count=2)
    d = fresh(S); trunc(C(d), co[-1] + 20)
    check("claims: truncated mid last frame", d, "torn_tail", "claims.log", co[-1])
    d = fresh(S); flip(C(d), 20)
    check("claims: header byte 20 flipped: CRC at 124", d, "damage", "claims.log", 124)
    d = fresh(S); patch_header(C(d), 128, 20, b"\xaa")
    check("claims: root id changed, CRC fixed: 16", d, "damage", "claims.log", 16)
    d = fresh(S); patch_header(C(d), 128, 100, b"\x01")
    check("claims: reserved byte 100 set, CRC fixed: 100", d, "damage", "claims.log", 100)
    d = fresh(S); patch_header(C(d), 128, 8, b"\x04\x00")
    check("claims: version 4, CRC fixed: 8", d, "damage", "claims.log", 8)
    d = fresh(S); wr(C(d), bytes(4096))
    check("claims: all zeros (torn create)", d, "torn_create", "claims.log")
    d = fresh(S); wr(C(d), b"\x05" * 60)
    check("claims: 60-byte file (torn create)", d, "torn_create", "claims.log")
    d = fresh(S); b = rd(C(d)); b[8] = 9; fix_header_crc(b, 128); wr(C(d), bytes(b[:128]) + bytes(99))
    check("claims: version 9, CRC fixed, zeros after 128: torn create", d, "torn_create",
          "claims.log")
    d = fresh(S)
    with open(C(d), "r+b") as f:
        f.seek(end); f.write(b"MKLGSEAL" + b"\0" * 60)
    check("claims: footer magic after last frame (a bad frame)", d, "torn_tail", "claims.log",
          end)

# --- the marker (third revision, items 3 and 28): any JSON white space around the object,
# 1,025 bytes at most in all; a key given twice or a value of another JSON type is refused.
print("===== marker")
def marker_case(label, text, is_root):
    d = fresh("v3/rolled"); wr(os.path.join(d, ".makalog-root.json"), text)
    got = not reader.read_root(d).get("not_a_root", False)
    ok = got == is_root
    print("%-4s marker: %-56s root=%s" % ("ok" if ok else "FAIL", label, got))
    if not ok: FAILS.append("marker: " + label)
M = open(os.path.join(V, "v3/rolled/.makalog-root.json"), "rb").read().strip()
RID = json.loads(M)["rootId"]
body = M[1:-1]
marker_case("as written (newline)", M + b"\n", True)
marker_case("no newline", M, True)
marker_case("white space around and inside", b" \r\n\t" + M.replace(b",", b" ,\n ") + b"\n\n ",
            True)
marker_case("padded with spaces to 1,025 bytes", M + b" " * (1025 - len(M)), True)
marker_case("padded with spaces to 1,026 bytes", M + b" " * (1026 - len(M)), False)
marker_case("keys in another order", json.dumps(
    {"formatVersion": 3, "rootId": RID, "kind": "interactive", "schemaVersion": 1}).encode(),
    True)
marker_case("a key given twice (same value)", b"{" + body + b',"formatVersion":3}', False)
marker_case("schemaVersion 1.0", M.replace(b'"schemaVersion":1', b'"schemaVersion":1.0'), False)
marker_case("schemaVersion true", M.replace(b'"schemaVersion":1', b'"schemaVersion":true'),
            False)
marker_case('formatVersion "3"', M.replace(b'"formatVersion":3', b'"formatVersion":"3"'), False)
marker_case("formatVersion 3e0", M.replace(b'"formatVersion":3', b'"formatVersion":3e0'), False)
marker_case("a byte-order mark before it", b"\xef\xbb\xbf" + M, False)
marker_case("a non-JSON white space (form feed) after it", M + b"\x0c", False)

# --- sequence number 2^64 - 1 is damage (step 4).  No consistent log reaches it (the first
# segment starts at 1), so the walk is driven directly.
print("===== unit")
U = (1 << 64) - 1
lay = reader.Layout(2)
def mkframe(seq, d, kind, payload, prev):
    n = len(payload)
    body = struct.pack("<QBQ", seq, kind, d) + payload
    ch = reader.chain_next(prev, seq, kind, bytes(25) + payload, 25, n)
    fr = bytearray(struct.pack("<II", n, 0) + body + ch)
    fix_frame_crc(fr, 0, 57)
    return bytes(fr), ch
g = b"\x11" * 32
f1, c1 = mkframe(U - 1, U - 2, 2, b"{}", g)
f2, _ = mkframe(U, U - 1, 2, b"{}", c1)
buf = bytes(256) + f1 + f2
st = reader.LogState(g); st.next_seq = U - 1
vd, _, _ = reader.walk_frames(buf, "x.seg", 256, lay, 1 << 20, set(range(1, 8)), True, False,
                              st, lambda fr, pos, c: {"seq": fr["seq"]})
exp = {"verdict": "damage", "file": "x.seg", "offset": 256 + len(f1)}
ok = vd == exp and [r["seq"] for r in st.records] == [U - 1]
print("%-4s %-64s end=%s" % ("ok" if ok else "FAIL", "seq 2^64-2 valid, then seq 2^64-1: damage",
                             json.dumps(vd)))
if not ok: FAILS.append("seq 2^64-1")

# --- the search for evidence, driven directly (FORMAT.md, "The search for evidence after
# damage").  P = 0 here: a junk byte where reading stopped, then candidates.
def blocks(L, lens, seq, kind=2):
    """A buffer of L bytes: 0xff at P = 0, then a 17-byte frame head every 17 bytes from 1,
    one per frame length in lens, CRC 0xffffffff (wrong), zeros after."""
    b = bytearray(L); b[0] = 0xff
    for i, f in enumerate(lens):
        struct.pack_into("<IIQB", b, 1 + 17 * i, f - 49, 0xffffffff, seq, kind)
    return bytes(b)
def search(buf, nxt, lay, maxp=1 << 20, footers=True):
    return reader.evidence_search(buf, 0, nxt, lay, maxp, set(range(1, 8)), footers)
def unit(label, got, want):
    ok = got == want
    print("%-4s %-64s got=%s" % ("ok" if ok else "FAIL", label, got))
    if not ok: FAILS.append(label)
L1 = reader.Layout(1)
NX = 0x6060606060606060  # no byte of it is a kind, nor zero: only the block heads can match
Lb = 65536; TB = 8 * Lb + (1 << 20); k = 30
lens = [TB // k] * (k - 1); lens.append(TB - sum(lens))
unit("budget: count == 8L + 1 MiB: search goes on", search(blocks(Lb, lens, NX), NX, L1),
     "none")
lens[-1] += 1
unit("budget: count == 8L + 1 MiB + 1 (whole frames counted)",
     search(blocks(Lb, lens, NX), NX, L1), "budget")
unit("frames that do not fit before the end are not counted",
     search(blocks(Lb, [Lb] * 200, NX), NX, L1), "none")
fe, _ = mkframe(6, 5, 2, b"{}", g)  # valid, d = 5 >= next = 5: evidence wherever searched
unit("a valid frame at P itself is no candidate", search(fe + bytes(100), 5, lay), "none")
unit("the same frame at P + 1 is evidence", search(b"\xff" + fe + bytes(100), 5, lay),
     "evidence")
# seq bound next + floor(L / overhead), L counted from P: a valid v1 frame at the very end
for extra, want in ((0, "evidence"), (1, "none")):
    Lf = 4900; n = 2; nxt = 10
    b = bytearray(Lf); b[0] = 0xff; p = Lf - 49 - n
    struct.pack_into("<IIQB", b, p, n, 0, nxt + Lf // 49 + extra, 2)
    b[p + 17:p + 19] = b"{}"; fix_frame_crc(b, p, 49)
    unit("seq bound: next + L//overhead + %d, frame at the end" % extra,
         search(bytes(b), nxt, L1), want)
# a whole footer that decodes: evidence in version 1, passed over in versions 2 and 3
fb = bytearray(68); fb[:8] = b"MKLGSEAL"
struct.pack_into("<I", fb, 64, zlib.crc32(bytes(fb[:64])) & 0xffffffff)
unit("footer after P, version 1: evidence", search(b"\xff" + bytes(fb), 5, L1), "evidence")
unit("footer after P, version 2: passed over", search(b"\xff" + bytes(fb), 5, lay), "none")
unit("footer after P, claims log (no footers): no candidate",
     search(b"\xff" + bytes(fb), 5, L1, footers=False), "none")

# --- payload vs payloadHex (FORMAT.md, `makalog dump`)
for raw, key in ((b'{"a":1}', "payload"), (b' \t\n[1,2]\r\n', "payload"), (b'"x"', "payload"),
                 (b"\xef\xbb\xbf{}", "payloadHex"), (b'{"a":1,"a":2}', "payload"),
                 (b"[" * 127 + b"]" * 127, "payload"), (b"[" * 128 + b"]" * 128, "payloadHex"),
                 (b'{"a":' * 127 + b"1" + b"}" * 127, "payload"),
                 (b'{"a":' * 128 + b"1" + b"}" * 128, "payloadHex"),
                 (b'[{"a":' * 63 + b"[]" + b"}]" * 63, "payload"),      # 127 mixed
                 (b'[{"a":' * 64 + b"1" + b"}]" * 64, "payloadHex"),    # 128 mixed
                 (b' [' * 127 + b'"x"' + b'] ' * 127, "payload"),
                 (b'"\\ud83d\\ude00"', "payload"), (b'"\\ud800"', "payloadHex"),
                 (b'{"\\udc00":1}', "payloadHex"), (b"1e308", "payload"),
                 (b"1e309", "payloadHex"), (b"-1e309", "payloadHex"),
                 (b"1" + b"0" * 308, "payload"), (b"1" + b"0" * 309, "payloadHex"),
                 (b"NaN", "payloadHex"), (b"", "payloadHex"), (b"{\"a\":\xff}", "payloadHex"),
                 (b"\x00", "payloadHex"), (b"1 2", "payloadHex")):
    k, val = reader.render_payload(raw)
    ok = k == key and (k != "payload" or raw.strip() != b'{"a":1,"a":2}' or val == {"a": 2})
    print("%-4s payload %-60r -> %s" % ("ok" if ok else "FAIL", raw[:40], k))
    if not ok: FAILS.append("payload %r" % raw[:40])

shutil.rmtree(T)
print("ALL OK" if not FAILS else "FAILED: %d" % len(FAILS))
sys.exit(1 if FAILS else 0)
