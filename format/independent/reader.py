#!/usr/bin/env python3
"""Independent reader of the makalog on-disk format (versions 1, 2 and 3).

Written from format/FORMAT.md alone (see README.md and NOTES.md beside this file).
Standard library only.  Usage:

    python3 reader.py ROOT [ROOT...]

prints one compact JSON line per ROOT: every log of the root (one per session
directory, sorted by session id, then the claims log) with the records of its
valid prefix and the verdict on what follows that prefix, for a root that no
live process owns.
"""

import hashlib
import json
import math
import mmap
import os
import re
import stat
import struct
import sys
import zlib

# ---------------------------------------------------------------------------
# Constants from FORMAT.md

SEG_MAGIC = b"MKLGSEG\x00"
CLM_MAGIC = b"MKLGCLM\x00"
FOOTER_MAGIC = b"MKLGSEAL"
SEG_HEADER_LEN = 256
CLM_HEADER_LEN = 128
FOOTER_LEN = 68
MAX_PAYLOAD_LIMIT = 16 * 1024 * 1024
U64_MAX = (1 << 64) - 1
MARKER_MAX = 1025
JSON_MAX_DEPTH = 127  # FORMAT.md, `makalog dump`: at most 127 nested arrays and objects
                      # (a 128th is refused)

SEGMENT_KINDS = {
    1: "session_header",
    2: "message",
    3: "run",
    4: "run_event",
    5: "admission",
    6: "runtime_event",
    7: "run_seal",
    8: "turn_rejection",
}
CLAIM_KINDS = {
    1: "graph_intent_claim",
    2: "graph_intent_status",
    3: "subagent_spawn_claim",
    4: "session_create_claim",
}

SESSION_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,128}")
SEGMENT_NAME_RE = re.compile(r"([0-9]{20})\.seg")
HEX64_RE = re.compile(r"[0-9a-f]{64}")
NONZERO_RE = re.compile(rb"[^\x00]")

SEG_CHAIN_TAG = b"makalog segment chain v1\x00"
CLM_CHAIN_TAG = b"makalog claims chain v1\x00"


def crc32(*parts):
    c = 0
    for p in parts:
        c = zlib.crc32(p, c)
    return c & 0xFFFFFFFF


def u16(b, o):
    return struct.unpack_from("<H", b, o)[0]


def u32(b, o):
    return struct.unpack_from("<I", b, o)[0]


def u64(b, o):
    return struct.unpack_from("<Q", b, o)[0]


def first_nonzero(buf, start, end=None):
    """Offset of the first non-zero byte in buf[start:end], or None."""
    if end is None:
        end = len(buf)
    if start >= end:
        return None
    m = NONZERO_RE.search(buf, start, end)
    return m.start() if m else None


def all_zero(buf, start, end=None):
    return first_nonzero(buf, start, end) is None


# ---------------------------------------------------------------------------
# File access: never follow symlinks, open only regular files.


# FORMAT.md, "Segment file": a log is read to its last non-zero byte and at most this many of
# the zeros after it (the longest frame any header allows); the rest is taken as zeros.
ZEROS_KEPT = (16 << 20) + 57


def kept_end(buf):
    """Just past a log's last non-zero byte, then at most ZEROS_KEPT zeros, within the file."""
    n = len(buf)
    hi = n
    while hi > 0:
        lo = max(0, hi - (1 << 20))
        chunk = bytes(buf[lo:hi]).rstrip(b"\0")
        if chunk:
            return min(n, lo + len(chunk) + ZEROS_KEPT)
        hi = lo
    return min(n, ZEROS_KEPT)


class FileData:
    """Read-only view of a regular file (mmap, or b'' when empty); a log (a segment, the claims
    log) only as far as a reader reads it (kept_end)."""

    def __init__(self, path, log=False):
        self.buf = b""
        self._mm = None
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
            | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError("not a regular file")
            if st.st_size > 0:
                try:
                    self._mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
                    self.buf = self._mm
                except (ValueError, OSError):
                    # Fall back to reading (bounded by the file's size).
                    chunks = []
                    while True:
                        c = os.read(fd, 1 << 20)
                        if not c:
                            break
                        chunks.append(c)
                    self.buf = b"".join(chunks)
            if log:
                end = kept_end(self.buf)
                if end < len(self.buf):
                    self.buf = bytes(self.buf[:end])
        finally:
            os.close(fd)

    def close(self):
        if self._mm is not None:
            try:
                self._mm.close()
            except Exception:
                pass
            self._mm = None


def lstat_kind(path):
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return "link"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if stat.S_ISREG(st.st_mode):
        return "file"
    return "other"


# ---------------------------------------------------------------------------
# Payload rendering, as `makalog dump` does: payload when it parses as JSON,
# payloadHex otherwise.  FORMAT.md: JSON as RFC 8259 has it, in UTF-8 with no
# byte-order mark, white space around the value allowed, at most 127 nested arrays
# and objects (a 128th is refused), no \u escape of a lone surrogate, no number too
# large for a 64-bit float; a key repeated in an object keeps its last value.


class _NotJson(Exception):
    pass


def _reject_constant(name):
    raise _NotJson(name)


def _parse_float(s):
    v = float(s)
    if math.isinf(v) or math.isnan(v):
        raise _NotJson(s)  # a number too large for a 64-bit float
    return v


def _parse_int(s):
    v = int(s)  # kept exact in the output (NOTES.md)
    try:
        float(v)
    except OverflowError:
        raise _NotJson(s)  # a number too large for a 64-bit float
    return v


def _has_lone_surrogate(s):
    for ch in s:
        o = ord(ch)
        if 0xD800 <= o <= 0xDFFF:
            return True
    return False


def _check_tree(obj):
    """Iterative walk: no lone surrogates, nesting depth bounded."""
    stack = [(obj, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            if depth > JSON_MAX_DEPTH:
                return False
            for k, x in v.items():
                if _has_lone_surrogate(k):
                    return False
                stack.append((x, depth + 1))
        elif isinstance(v, list):
            if depth > JSON_MAX_DEPTH:
                return False
            for x in v:
                stack.append((x, depth + 1))
        elif isinstance(v, str):
            if _has_lone_surrogate(v):
                return False
    return True


def render_payload(payload):
    """Returns ('payload', obj) or ('payloadHex', hex)."""
    raw = bytes(payload)
    try:
        text = raw.decode("utf-8", errors="strict")
        obj = json.loads(text, parse_constant=_reject_constant, parse_float=_parse_float,
                         parse_int=_parse_int)
        if _check_tree(obj):
            return "payload", obj
    except (_NotJson, ValueError, RecursionError, MemoryError, OverflowError):
        pass
    return "payloadHex", raw.hex()


# ---------------------------------------------------------------------------
# Frame layout


class Layout:
    def __init__(self, version):
        # Version 1: 17-byte frame head; versions 2 and 3: 25 bytes (durable seq).
        self.has_d = version >= 2
        self.head = 25 if self.has_d else 17
        self.overhead = self.head + 32  # 49 or 57


def decode_frame_at(buf, pos, layout, max_payload):
    """Decode the frame at pos (the caller has already taken a frame head of zeros as the
    end of data).  Returns (status, info):
    ('bad', None)  fewer bytes than the frame head or the whole frame, a length over the
                   bound, or a CRC mismatch
    ('ok', dict)   CRC-valid frame (kind / seq / d rules are checked by the caller)
    """
    end = len(buf)
    left = end - pos
    if left < layout.head:
        return "bad", None
    n = u32(buf, pos)
    if n > max_payload:
        return "bad", None
    if n + layout.overhead > left:
        return "bad", None
    head = layout.head
    stored_crc = u32(buf, pos + 4)
    mv = memoryview(buf)
    try:
        c = crc32(mv[pos:pos + 4], mv[pos + 8:pos + layout.overhead + n])
    finally:
        mv.release()
    if c != stored_crc:
        return "bad", None
    seq = u64(buf, pos + 8)
    kind = buf[pos + 16]
    d = u64(buf, pos + 17) if layout.has_d else None
    pstart = pos + head
    return "ok", {
        "n": n,
        "seq": seq,
        "kind": kind,
        "d": d,
        "payload_start": pstart,
        "chain": bytes(buf[pstart + n:pstart + n + 32]),
        "size": layout.overhead + n,
    }


def chain_next(prev, seq, kind, buf, pstart, n):
    h = hashlib.sha256()
    h.update(prev)
    h.update(struct.pack("<QBI", seq, kind, n))
    mv = memoryview(buf)
    try:
        h.update(mv[pstart:pstart + n])
    finally:
        mv.release()
    return h.digest()


# ---------------------------------------------------------------------------
# The search for evidence after damage (FORMAT.md, "Reading and recovery"),
# and the steps of "Reading a log, step by step".


def evidence_search(buf, p_start, next_seq, layout, max_payload, known_kinds, footers):
    """FORMAT.md, "The search for evidence after damage".

    p_start is P, where reading stopped (the bad frame's offset, the end of data, or the
    footer's offset).  The search covers the bytes from P to the end of the same file (L of
    them); every position from P + 1 on is a candidate.  Returns 'evidence', 'budget' (the
    count of candidate-frame bytes went strictly over 8 * L + 1 MiB: damage) or 'none'.

    Both 'evidence' and 'budget' make the tail damage, so the order in which candidates are
    visited cannot change a verdict; footers are visited first, then frames.
    """
    end = len(buf)
    L = end - p_start
    budget = 8 * L + (1 << 20)
    spent = 0
    overhead = layout.overhead
    start = p_start + 1
    if start >= end:
        return "none"

    # Footers (segments only): a position where the footer magic starts is a footer if a
    # whole footer decodes there.  Version 1: evidence.  Versions 2 and 3: passed over (not
    # searched at all).  A footer's CRC is not counted in the budget (only candidate frames).
    if footers and not layout.has_d:
        q = buf.find(FOOTER_MAGIC, start)
        while q != -1:
            if q + FOOTER_LEN <= end:
                mv = memoryview(buf)
                try:
                    ok = crc32(mv[q:q + 64]) == u32(buf, q + 64)
                finally:
                    mv.release()
                if ok:
                    return "evidence"
            q = buf.find(FOOTER_MAGIC, q + 1)

    # Candidate frames: the overhead fits before the end of the file, the sequence number
    # lies in [next, next + floor(L / overhead)], the kind is known in the file's version,
    # the length is within the header's bound and the whole frame fits before the end of
    # the file.  Only then is the CRC computed, and the frame's whole length counted.
    last_cand = end - overhead          # p + overhead <= end
    if start > last_cand or next_seq > U64_MAX:
        return "none"
    lo = next_seq
    hi = min(U64_MAX, next_seq + L // overhead)
    # A regex lookahead only skips positions whose seq bytes and kind cannot pass; every
    # match is re-checked below.
    k = 0  # number of top (most significant) bytes shared by lo and hi
    while k < 8 and (lo >> (8 * (7 - k))) == (hi >> (8 * (7 - k))):
        k += 1
    top = struct.pack("<Q", lo)[8 - k:] if k else b""
    kind_class = b"".join(re.escape(bytes([x])) for x in sorted(known_kinds))
    pat = re.compile(
        b"(?=.{%d}" % (8 + 8 - k) + re.escape(top) + b"[" + kind_class + b"])",
        re.DOTALL,
    )
    for m in pat.finditer(buf, start, end):
        p = m.start()
        if p > last_cand:
            break
        # A footer-magic position whose footer does not decode is "any other position":
        # its length field reads 0x474C4B4D, above every header bound (16 MiB), so it is
        # never a candidate frame; one whose footer decodes was handled above.
        seq = u64(buf, p + 8)
        if seq < lo or seq > hi:
            continue
        kind = buf[p + 16]
        if kind not in known_kinds:
            continue
        n = u32(buf, p)
        if n > max_payload or p + overhead + n > end:
            continue
        spent += overhead + n
        if spent > budget:
            return "budget"
        mv = memoryview(buf)
        try:
            ok = crc32(mv[p:p + 4], mv[p + 8:p + overhead + n]) == u32(buf, p + 4)
        finally:
            mv.release()
        if not ok:
            continue
        if layout.has_d:
            d = u64(buf, p + 17)
            if d >= seq:
                continue  # does not decode: not a valid frame
            if d >= next_seq:
                return "evidence"
        else:
            return "evidence"
    return "none"


def bad_tail(buf, fname, b, valid_end, next_seq, layout, max_payload, known_kinds, footers,
             sealed):
    """FORMAT.md "Reading a log, step by step", step 6: a bad tail starting at b.

    valid_end is both the end of the valid data and P, where reading stopped (the bad frame,
    the end of data, or the footer).  The search for evidence covers the bytes from P to the
    end of the file, with candidates from P + 1 on.  Evidence, or a search that gives up,
    makes the tail damage at b.  Otherwise it is a write that never completed: a torn tail at
    valid_end in the last segment or the claims log, and damage at that same offset in a
    sealed segment.
    """
    if sealed and b == valid_end:
        return {"verdict": "damage", "file": fname, "offset": b}  # same either way
    r = evidence_search(buf, valid_end, next_seq, layout, max_payload, known_kinds, footers)
    if r != "none":
        return {"verdict": "damage", "file": fname, "offset": b}
    if sealed:
        return {"verdict": "damage", "file": fname, "offset": valid_end}
    return {"verdict": "torn_tail", "file": fname, "offset": valid_end}


class LogState:
    """The head of a log's valid prefix, carried across its files."""

    def __init__(self, genesis_value):
        self.records = []
        self.chain = genesis_value
        self.head_seq = 0
        self.next_seq = 1


def walk_frames(buf, fname, pos, layout, max_payload, known_kinds, footers, sealed, st,
                make_record):
    """Reads the frames of one file from pos (just after its header), FORMAT.md "Reading a
    log, step by step", steps 1 to 6.  Appends valid records to st.

    footers: True in a segment (the footer magic starts a footer), False in the claims log.
    sealed:  True for a segment followed by another.
    Returns (verdict or None, footer_seen, valid_end): verdict None means the file ended
    cleanly (end of file, zeros, or a valid footer and zeros).
    """
    size = len(buf)
    prev_d = None
    count_here = 0

    def tail(b, valid_end):
        return bad_tail(buf, fname, b, valid_end, st.next_seq, layout, max_payload,
                        known_kinds, footers, sealed)

    while pos < size:
        # 1. A footer (segments only).
        if footers and bytes(buf[pos:pos + 8]) == FOOTER_MAGIC:
            status = footer_at(buf, pos, st.next_seq, count_here, st.chain)
            if status == "bad":      # 5. does not decode: a bad tail at the footer
                return tail(pos, pos), False, pos
            if status == "wrong":    # decodes but disagrees: damage at the footer
                return {"verdict": "damage", "file": fname, "offset": pos}, False, pos
            nz = first_nonzero(buf, pos + FOOTER_LEN)
            if nz is not None:       # non-zero bytes after a valid footer
                return tail(nz, pos), False, pos
            return None, True, pos
        # 2. A frame head of zeros (or fewer zero bytes up to the end): end of data.
        if all_zero(buf, pos, pos + layout.head):
            nz = first_nonzero(buf, pos + layout.head)
            if nz is None:
                return None, False, pos
            return tail(nz, pos), False, pos
        # 3. Bad frames.
        status, fr = decode_frame_at(buf, pos, layout, max_payload)
        if status != "ok" or fr["seq"] == 0 or fr["kind"] not in known_kinds or (
                layout.has_d and fr["d"] >= fr["seq"]):
            return tail(pos, pos), False, pos
        # 4. Checks against the log: damage, no search for evidence.
        damage = {"verdict": "damage", "file": fname, "offset": pos}
        if fr["seq"] != st.next_seq or fr["seq"] == U64_MAX:
            return damage, False, pos
        if layout.has_d and prev_d is not None and fr["d"] < prev_d:
            return damage, False, pos
        c = chain_next(st.chain, fr["seq"], fr["kind"], buf, fr["payload_start"], fr["n"])
        if c != fr["chain"]:
            return damage, False, pos
        rec = make_record(fr, pos, c)
        key, val = render_payload(buf[fr["payload_start"]:fr["payload_start"] + fr["n"]])
        rec[key] = val
        st.records.append(rec)
        st.chain = c
        st.head_seq = fr["seq"]
        st.next_seq = fr["seq"] + 1
        prev_d = fr["d"]
        count_here += 1
        pos += fr["size"]
    return None, False, pos


# ---------------------------------------------------------------------------
# Segment header


def decode_prefix(buf, length, magic):
    """Checks 1 to 4 of FORMAT.md, "Where a header that does not decode is reported", which a
    segment header and the claims log header share (their first 16 bytes and a CRC in their
    last 4). Returns ((version, max_payload), None), or (None, offset) for the first that fails.
    """
    size = len(buf)
    if size < length:
        return None, size                      # 1. fewer bytes than the header
    if bytes(buf[0:8]) != magic:
        return None, 0                         # 2. magic
    crc_at = length - 4
    if crc32(bytes(buf[0:crc_at])) != u32(buf, crc_at):
        return None, crc_at                    # 3. header CRC (magic included), before the
                                               #    fields after the magic
    version = u16(buf, 8)
    if version not in (1, 2, 3):
        return None, 8                         # 4. version, algorithm, flags, max payload
    if buf[10] != 1:
        return None, 10
    if buf[11] != 0:
        return None, 11
    max_payload = u32(buf, 12)
    if not 1 <= max_payload <= MAX_PAYLOAD_LIMIT:
        return None, 12
    return (version, max_payload), None


def decode_segment_header(buf):
    """Returns (header dict, None), or (None, offset) when the header does not decode.

    The checks run in the order of FORMAT.md, "Where a header that does not decode is
    reported", and the first that fails gives the offset.
    """
    prefix, bad = decode_prefix(buf, SEG_HEADER_LEN, SEG_MAGIC)
    if prefix is None:
        return None, bad
    version, max_payload = prefix
    ordinal = u64(buf, 16)
    first_seq = u64(buf, 24)
    if first_seq == 0:
        return None, 24                        # 5. first seq, id length, id, padding
    prev_chain = bytes(buf[32:64])
    sid_len = u16(buf, 64)
    if not 1 <= sid_len <= 128:
        return None, 64
    sid_raw = bytes(buf[66:66 + sid_len])
    try:
        sid = sid_raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, 66
    if not SESSION_ID_RE.fullmatch(sid):
        return None, 66
    nz = first_nonzero(buf, 66 + sid_len, 252)
    if nz is not None:
        return None, nz
    return {
        "version": version,
        "max_payload": max_payload,
        "ordinal": ordinal,
        "first_seq": first_seq,
        "prev_chain": prev_chain,
        "session": sid,  # a valid session id; compared with the directory's name (66)
    }, None


def decode_claims_header(buf):
    """As decode_segment_header, for the 128-byte claims log header."""
    prefix, bad = decode_prefix(buf, CLM_HEADER_LEN, CLM_MAGIC)
    if prefix is None:
        return None, bad
    version, max_payload = prefix
    nz = first_nonzero(buf, 48, 124)
    if nz is not None:
        return None, nz
    return {"version": version, "max_payload": max_payload,
            "root_id": bytes(buf[16:48])}, None


# ---------------------------------------------------------------------------
# Reading one session


def genesis(session):
    return hashlib.sha256(SEG_CHAIN_TAG + session.encode("ascii")).digest()


def belongs(hdr, session, name_seq, is_first):
    """FORMAT.md, "Where a segment belongs": None, or the offset of the first check that
    fails, in the text's order."""
    if hdr["session"] != session:
        return 66          # the header names another session (the session id)
    if hdr["first_seq"] != name_seq:
        return 24          # first seq is not the number the file name's 20 digits give
    if is_first:
        if hdr["ordinal"] != 0 or hdr["first_seq"] != 1:
            return 16      # "has ordinal 0 and `first seq` 1 (byte 16)": both at 16
        if hdr["prev_chain"] != genesis(session):
            return 32      # prev chain is not genesis(session)
    return None


def read_session(root, session):
    rel_dir = "sessions/" + session
    sdir = os.path.join(root, "sessions", session)
    names = []
    try:
        with os.scandir(sdir) as it:
            for e in it:
                m = SEGMENT_NAME_RE.fullmatch(e.name)
                if not m or int(m.group(1)) > U64_MAX:
                    # index, index.tmp, *.torn-*, stray entries, and 20-digit names above
                    # 2^64 - 1: not segments ("unexpected entry", a finding), so ignored.
                    continue
                try:
                    if not e.is_file(follow_symlinks=False):
                        continue  # never opened (symlinks, devices, directories...)
                except OSError:
                    continue
                names.append(e.name)
    except OSError:
        names = []
    names.sort()

    out = {"log": rel_dir}
    st = LogState(genesis(session))
    end = {"verdict": "clean"}
    prev_file = None       # relative name of the previous segment
    prev_ordinal = None

    # FORMAT.md: segments in name order; for each, its header, where it belongs, whether
    # it continues the segment before it, then its frames and its end.  The first problem
    # met ends the valid prefix.
    for idx, name in enumerate(names):
        is_last = idx == len(names) - 1
        fname = rel_dir + "/" + name
        name_seq = int(name[:20])
        try:
            fd = FileData(os.path.join(sdir, name), log=True)
        except OSError:
            end = {"verdict": "damage", "file": fname, "offset": 0}  # I/O: NOTES.md
            break
        try:
            buf = fd.buf
            hdr, bad_at = decode_segment_header(buf)
            if hdr is None:
                if is_last and all_zero(buf, SEG_HEADER_LEN):
                    end = {"verdict": "torn_create", "file": fname}
                else:
                    end = {"verdict": "damage", "file": fname, "offset": bad_at}
                break
            # Where a segment belongs (FORMAT.md, "What a reader checks besides the frames"),
            # in this order, each damage at the field that shows it, the first met reported:
            # the header names the directory's session (66); its first seq is its name's
            # number (24); the first segment file in name order has ordinal 0 and first seq 1
            # (16), then prev chain genesis(session) (32).  (A later file with ordinal 0
            # breaks only the continuation: a mismatch.)
            bad_at = belongs(hdr, session, name_seq, prev_file is None)
            if bad_at is not None:
                end = {"verdict": "damage", "file": fname, "offset": bad_at}
                break
            # Whether it continues the segment before it: ordinal, first seq, prev chain.
            if prev_file is not None:
                if (hdr["ordinal"] != prev_ordinal + 1 or hdr["first_seq"] != st.next_seq
                        or hdr["prev_chain"] != st.chain):
                    end = {"verdict": "mismatch", "files": [prev_file, fname]}
                    break

            layout = Layout(hdr["version"])
            kinds = set(range(1, 9)) if hdr["version"] >= 3 else set(range(1, 8))

            def make_record(fr, pos, c, fname=fname, has_d=layout.has_d):
                rec = {
                    "session": session,
                    "seq": fr["seq"],
                    "kind": SEGMENT_KINDS[fr["kind"]],
                    "file": fname,
                    "offset": pos,
                    "chain": c.hex(),
                }
                if has_d:
                    rec["durableSeq"] = fr["d"]
                return rec

            verdict, footer_seen, valid_end = walk_frames(
                buf, fname, SEG_HEADER_LEN, layout, hdr["max_payload"], kinds, True,
                not is_last, st, make_record)
            if verdict is not None:
                end = verdict
                break
            if not is_last and not footer_seen:
                # A sealed segment that ends without a footer (end of file, or zeros):
                # damage at the end of its valid data.
                end = {"verdict": "damage", "file": fname, "offset": valid_end}
                break
            prev_file = fname
            prev_ordinal = hdr["ordinal"]
        finally:
            fd.close()

    out["records"] = st.records
    out["count"] = len(st.records)
    out["headSeq"] = st.head_seq
    out["chain"] = st.chain.hex()
    out["end"] = end
    return out


def footer_at(buf, pos, next_seq, count, chain):
    """'valid', 'wrong' (CRC holds but a field disagrees), or 'bad' (incomplete / CRC)."""
    if pos + FOOTER_LEN > len(buf):
        return "bad"
    if crc32(bytes(buf[pos:pos + 64])) != u32(buf, pos + 64):
        return "bad"
    off = u64(buf, pos + 8)
    last_seq = u64(buf, pos + 16)
    n = u64(buf, pos + 24)
    c = bytes(buf[pos + 32:pos + 64])
    if off != pos or last_seq != next_seq - 1 or n != count or c != chain:
        return "wrong"
    return "valid"


# ---------------------------------------------------------------------------
# Claims log


def read_claims(root, root_id):
    fname = "claims.log"
    st = LogState(hashlib.sha256(CLM_CHAIN_TAG + root_id).digest())
    end = {"verdict": "clean"}
    try:
        fd = FileData(os.path.join(root, fname), log=True)
    except OSError:
        fd = None
        end = {"verdict": "damage", "file": fname, "offset": 0}  # I/O: NOTES.md
    if fd is not None:
        try:
            buf = fd.buf
            hdr, bad_at = decode_claims_header(buf)
            if hdr is None:
                # The claims log may end in a torn tail, as the last segment may: only
                # zeros after where its 128-byte header would end make a torn create.
                if all_zero(buf, CLM_HEADER_LEN):
                    end = {"verdict": "torn_create", "file": fname}
                else:
                    end = {"verdict": "damage", "file": fname, "offset": bad_at}
            elif hdr["root_id"] != root_id:
                end = {"verdict": "damage", "file": fname, "offset": 16}
            else:
                def make_record(fr, pos, c):
                    return {
                        "seq": fr["seq"],
                        "kind": CLAIM_KINDS[fr["kind"]],
                        "offset": pos,
                        "chain": c.hex(),
                    }

                verdict, _, _ = walk_frames(
                    buf, fname, CLM_HEADER_LEN, Layout(hdr["version"]), hdr["max_payload"],
                    set(CLAIM_KINDS), False, False, st, make_record)
                if verdict is not None:
                    end = verdict
        finally:
            fd.close()
    return {
        "log": fname,
        "records": st.records,
        "count": len(st.records),
        "headSeq": st.head_seq,
        "chain": st.chain.hex(),
        "end": end,
    }


# ---------------------------------------------------------------------------
# Root


def _pairs_no_dup(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise _NotJson("duplicate key")
        d[k] = v
    return d


def read_marker(root):
    """Returns the root id (32 bytes) or None when the path is not a root."""
    path = os.path.join(root, ".makalog-root.json")
    if lstat_kind(path) != "file":
        return None
    try:
        fd = FileData(path)
    except OSError:
        return None
    try:
        raw = bytes(fd.buf[:MARKER_MAX + 1])
        if len(fd.buf) > MARKER_MAX:
            return None
    finally:
        fd.close()
    try:
        obj = json.loads(raw.decode("utf-8"), object_pairs_hook=_pairs_no_dup,
                         parse_constant=_reject_constant)
    except (_NotJson, ValueError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    if set(obj) != {"schemaVersion", "kind", "rootId", "formatVersion"}:
        return None

    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool)

    if not (is_int(obj["schemaVersion"]) and obj["schemaVersion"] == 1):
        return None
    if obj["kind"] != "interactive":
        return None
    if not (isinstance(obj["rootId"], str) and HEX64_RE.fullmatch(obj["rootId"])):
        return None
    if not (is_int(obj["formatVersion"]) and obj["formatVersion"] in (1, 2, 3)):
        return None
    return bytes.fromhex(obj["rootId"])


def read_root(root):
    if lstat_kind(root) != "dir":
        return {"root": root, "not_a_root": True}
    root_id = read_marker(root)
    if root_id is None:
        return {"root": root, "not_a_root": True}
    logs = []
    sessions_dir = os.path.join(root, "sessions")
    if lstat_kind(sessions_dir) == "dir":
        sessions = []
        try:
            with os.scandir(sessions_dir) as it:
                for e in it:
                    if not SESSION_ID_RE.fullmatch(e.name):
                        continue  # "not a session directory": a finding, not a log
                    try:
                        if not e.is_dir(follow_symlinks=False):
                            continue
                    except OSError:
                        continue
                    sessions.append(e.name)
        except OSError:
            sessions = []
        for s in sorted(sessions):
            logs.append(read_session(root, s))
    if lstat_kind(os.path.join(root, "claims.log")) == "file":
        logs.append(read_claims(root, root_id))
    return {"root": root, "logs": logs}


def emit(obj):
    try:
        line = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        data = line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        data = line.encode("ascii")
    sys.stdout.buffer.write(data + b"\n")
    sys.stdout.buffer.flush()


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: python3 reader.py ROOT [ROOT...]\n")
        return 2
    for root in argv[1:]:
        emit(read_root(root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
