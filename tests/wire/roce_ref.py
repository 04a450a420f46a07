"""roce_ref.py — a small, independent Python model of RoCEv2 framing, used by
the wire cross-check tests (test_scapy_xcheck.py, test_tshark.py).

It shares no code with softrnic's C codec: the opcode table, the extended
header layouts and the ICRC masking are written out here again from the
InfiniBand Architecture Specification Vol. 1 ("IBTA") and its RoCEv2 annex
A17, using only struct and zlib.  The tests use it to build the headers scapy
lacks, to parse frames field by field, and as a second ICRC implementation
next to scapy's.
"""

import ipaddress
import struct
import zlib

ROCEV2_PORT = 4791
CNP_OPCODE = 0x81

# Extended headers in wire order after the BTH (IBTA 9.2).
EXT_ORDER = ("deth", "reth", "atmeth", "aeth", "atmack", "imm", "ieth")

# Size of each extended header in bytes (IBTA 9.3).
EXT_LEN = {"deth": 8, "reth": 16, "atmeth": 28, "aeth": 4,
           "atmack": 8, "imm": 4, "ieth": 4}

# Payload rules: "none"; "full" = exactly one PMTU (FIRST/MIDDLE);
# "last" = 1..PMTU; "only" = 0..PMTU; "cnp" = the 16 reserved bytes (A17.9).
# Opcode low 5 bits for RC and UC (IBTA 9.2.1, table 36):
_RC_UC_OPS = {
    0x00: ("SEND_FIRST", (), "full"),
    0x01: ("SEND_MIDDLE", (), "full"),
    0x02: ("SEND_LAST", (), "last"),
    0x03: ("SEND_LAST_IMM", ("imm",), "last"),
    0x04: ("SEND_ONLY", (), "only"),
    0x05: ("SEND_ONLY_IMM", ("imm",), "only"),
    0x06: ("WRITE_FIRST", ("reth",), "full"),
    0x07: ("WRITE_MIDDLE", (), "full"),
    0x08: ("WRITE_LAST", (), "last"),
    0x09: ("WRITE_LAST_IMM", ("imm",), "last"),
    0x0a: ("WRITE_ONLY", ("reth",), "only"),
    0x0b: ("WRITE_ONLY_IMM", ("reth", "imm"), "only"),
}
_RC_ONLY_OPS = {
    0x0c: ("READ_REQUEST", ("reth",), "none"),
    0x0d: ("READ_RESP_FIRST", ("aeth",), "full"),
    0x0e: ("READ_RESP_MIDDLE", (), "full"),
    0x0f: ("READ_RESP_LAST", ("aeth",), "last"),
    0x10: ("READ_RESP_ONLY", ("aeth",), "only"),
    0x11: ("ACK", ("aeth",), "none"),
    0x12: ("ATOMIC_ACK", ("aeth", "atmack"), "none"),
    0x13: ("CMP_SWAP", ("atmeth",), "none"),
    0x14: ("FETCH_ADD", ("atmeth",), "none"),
    0x16: ("SEND_LAST_INV", ("ieth",), "last"),
    0x17: ("SEND_ONLY_INV", ("ieth",), "only"),
}

# opcode -> (name, extended headers, payload rule), for every opcode a
# RoCEv2 RC, UC or UD queue pair sends, plus the CNP.
OPCODES = {}
for _op, (_name, _hdrs, _rule) in _RC_UC_OPS.items():
    OPCODES[0x00 | _op] = ("RC_" + _name, _hdrs, _rule)
    OPCODES[0x20 | _op] = ("UC_" + _name, _hdrs, _rule)
for _op, (_name, _hdrs, _rule) in _RC_ONLY_OPS.items():
    OPCODES[0x00 | _op] = ("RC_" + _name, _hdrs, _rule)
OPCODES[0x64] = ("UD_SEND_ONLY", ("deth",), "only")
OPCODES[0x65] = ("UD_SEND_ONLY_IMM", ("deth", "imm"), "only")
OPCODES[CNP_OPCODE] = ("CNP", (), "cnp")

RESPONSE_OPCODES = {0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12}


def is_response(opcode):
    return opcode < 0x20 and opcode in RESPONSE_OPCODES


# Field names of each extended header, as used in the JSON lines.
EXT_FIELDS = {
    "deth": ("deth_qkey", "deth_sqpn"),
    "reth": ("reth_va", "reth_rkey", "reth_dma_len"),
    "atmeth": ("atmeth_va", "atmeth_rkey", "atmeth_swap_add", "atmeth_compare"),
    "aeth": ("aeth_syndrome", "aeth_msn"),
    "atmack": ("atmack",),
    "imm": ("imm",),
    "ieth": ("ieth",),
}

BTH_FIELDS = ("opcode", "se", "migreq", "pad", "tver", "pkey", "fecn", "becn",
              "dqpn", "ackreq", "psn")


# ---- extended headers (IBTA 9.3) ------------------------------------------

def pack_ext(name, f):
    """Bytes of one extended header from the JSON-style field dict f."""
    if name == "deth":      # Q_Key(32) | reserved(8) SrcQP(24)
        return struct.pack(">II", f["deth_qkey"], f["deth_sqpn"] & 0xffffff)
    if name == "reth":      # VA(64) | R_Key(32) | DMA Length(32)
        return struct.pack(">QII", f["reth_va"], f["reth_rkey"], f["reth_dma_len"])
    if name == "atmeth":    # VA(64) | R_Key(32) | Swap/Add(64) | Compare(64)
        return struct.pack(">QIQQ", f["atmeth_va"], f["atmeth_rkey"],
                           f["atmeth_swap_add"], f["atmeth_compare"])
    if name == "aeth":      # Syndrome(8) MSN(24)
        return struct.pack(">I", (f["aeth_syndrome"] << 24) | (f["aeth_msn"] & 0xffffff))
    if name == "atmack":    # original remote data (64)
        return struct.pack(">Q", f["atmack"])
    if name == "imm":       # immediate data (32)
        return struct.pack(">I", f["imm"])
    if name == "ieth":      # R_Key to invalidate (32)
        return struct.pack(">I", f["ieth"])
    raise ValueError("unknown extended header " + name)


def unpack_ext(name, b):
    """Field dict of one extended header from its bytes."""
    if name == "deth":
        qkey, w = struct.unpack(">II", b)
        return {"deth_qkey": qkey, "deth_sqpn": w & 0xffffff, "_deth_resv": w >> 24}
    if name == "reth":
        va, rkey, dlen = struct.unpack(">QII", b)
        return {"reth_va": va, "reth_rkey": rkey, "reth_dma_len": dlen}
    if name == "atmeth":
        va, rkey, swap, cmp_ = struct.unpack(">QIQQ", b)
        return {"atmeth_va": va, "atmeth_rkey": rkey,
                "atmeth_swap_add": swap, "atmeth_compare": cmp_}
    if name == "aeth":
        (w,) = struct.unpack(">I", b)
        return {"aeth_syndrome": w >> 24, "aeth_msn": w & 0xffffff}
    if name == "atmack":
        return {"atmack": struct.unpack(">Q", b)[0]}
    if name == "imm":
        return {"imm": struct.unpack(">I", b)[0]}
    if name == "ieth":
        return {"ieth": struct.unpack(">I", b)[0]}
    raise ValueError("unknown extended header " + name)


# ---- BTH (IBTA 9.2) ----------------------------------------------------------

def pack_bth(f):
    b1 = (f["se"] << 7) | (f["migreq"] << 6) | (f["pad"] << 4) | f["tver"]
    b4 = (f["fecn"] << 7) | (f["becn"] << 6)        # A17.4.1: resv8a -> F/B ECN
    return struct.pack(">BBHBBBBI", f["opcode"], b1, f["pkey"], b4,
                       (f["dqpn"] >> 16) & 0xff, (f["dqpn"] >> 8) & 0xff,
                       f["dqpn"] & 0xff, (f["ackreq"] << 31) | (f["psn"] & 0xffffff))


def unpack_bth(b):
    opcode, b1, pkey, b4, q2, q1, q0, w = struct.unpack(">BBHBBBBI", b[:12])
    return {"opcode": opcode, "se": bool(b1 >> 7), "migreq": bool((b1 >> 6) & 1),
            "pad": (b1 >> 4) & 3, "tver": b1 & 0xf, "pkey": pkey,
            "fecn": bool(b4 >> 7), "becn": bool((b4 >> 6) & 1), "_bth_resv6": b4 & 0x3f,
            "dqpn": (q2 << 16) | (q1 << 8) | q0, "ackreq": bool(w >> 31),
            "_bth_resv7": (w >> 24) & 0x7f, "psn": w & 0xffffff}


class ParseError(Exception):
    pass


def parse_ib(b):
    """Parse a RoCEv2 UDP payload (BTH .. ICRC) into a field dict."""
    if len(b) < 16:
        raise ParseError("too short for BTH + ICRC")
    f = unpack_bth(b)
    info = OPCODES.get(f["opcode"])
    if info is None:
        raise ParseError("opcode 0x%02x not modelled" % f["opcode"])
    at = 12
    for name in EXT_ORDER:
        if name in info[1]:
            n = EXT_LEN[name]
            if at + n > len(b) - 4:
                raise ParseError("truncated " + name)
            f.update(unpack_ext(name, b[at:at + n]))
            at += n
    body_end = len(b) - 4
    if f["pad"] > body_end - at:
        raise ParseError("pad larger than the payload area")
    payload = b[at:body_end - f["pad"]]
    f["payload_len"] = len(payload)
    f["payload_crc32"] = zlib.crc32(payload) & 0xffffffff
    f["_payload"] = payload
    f["_pad_bytes"] = b[body_end - f["pad"]:body_end]
    f["icrc"] = struct.unpack("<I", b[body_end:])[0]
    return f


# ---- IP / UDP / Ethernet ----------------------------------------------------

def inet_checksum(b):
    """RFC 1071 ones'-complement sum; 0 over a header with a valid checksum."""
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(">%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff


def parse_frame(frame):
    """Parse Ethernet [802.1Q] / IPv4|IPv6 / UDP / RoCEv2 into one field dict.
    Raises ParseError for anything else."""
    at = 12
    etype = struct.unpack(">H", frame[at:at + 2])[0]
    at += 2
    if etype == 0x8100:
        etype = struct.unpack(">H", frame[at + 2:at + 4])[0]
        at += 4
    ip_start = at
    f = {}
    if etype == 0x0800:
        vihl, tos, tot, ident, frag, ttl, proto = struct.unpack(">BBHHHBB", frame[at:at + 10])
        if vihl != 0x45 or proto != 17:
            raise ParseError("not a plain IPv4/UDP header")
        if inet_checksum(frame[at:at + 20]) != 0:
            raise ParseError("bad IPv4 header checksum")
        f.update(ip_version=4, dscp=tos >> 2, ecn=tos & 3, ttl=ttl, ip_id=ident,
                 df=bool(frag & 0x4000), _frag=frag & 0xbfff,
                 ip_src=str(ipaddress.IPv4Address(frame[at + 12:at + 16])),
                 ip_dst=str(ipaddress.IPv4Address(frame[at + 16:at + 20])))
        ip_len = tot
        at += 20
    elif etype == 0x86dd:
        w, plen, nh, hlim = struct.unpack(">IHBB", frame[at:at + 8])
        if w >> 28 != 6 or nh != 17:
            raise ParseError("not a plain IPv6/UDP header")
        f.update(ip_version=6, dscp=(w >> 22) & 0x3f, ecn=(w >> 20) & 3, ttl=hlim,
                 flow_label=w & 0xfffff,
                 ip_src=str(ipaddress.IPv6Address(frame[at + 8:at + 24])),
                 ip_dst=str(ipaddress.IPv6Address(frame[at + 24:at + 40])))
        ip_len = 40 + plen
        at += 40
    else:
        raise ParseError("ethertype 0x%04x" % etype)
    if ip_start + ip_len > len(frame):
        raise ParseError("IP length beyond the frame")
    sport, dport, ulen, csum = struct.unpack(">HHHH", frame[at:at + 8])
    if ulen != ip_start + ip_len - at:
        raise ParseError("UDP length %d disagrees with IP length" % ulen)
    f.update(sport=sport, dport=dport, udp_csum=csum)
    f.update(parse_ib(frame[at + 8:ip_start + ip_len]))
    f["_ip_packet"] = frame[ip_start:ip_start + ip_len]
    return f


# ---- ICRC (IBTA A17.3.3) ----------------------------------------------------

def icrc_of_ip_packet(ip):
    """ICRC of a whole IP packet (IP header .. ICRC exclusive of the ICRC
    itself: pass the packet without its last 4 bytes).  Variant fields are
    replaced by ones, and the 8-byte pseudo-LRH of ones leads (A17.3.3):
    IPv4 TOS, TTL, header checksum; IPv6 traffic class, flow label, hop
    limit; UDP checksum; BTH byte 4 (FECN/BECN/resv6)."""
    m = bytearray(ip)
    if m[0] >> 4 == 4:
        ihl = (m[0] & 0xf) * 4
        m[1] = 0xff                 # TOS (DSCP + ECN)
        m[8] = 0xff                 # TTL
        m[10:12] = b"\xff\xff"      # header checksum
    elif m[0] >> 4 == 6:
        ihl = 40
        m[0] |= 0x0f                # traffic class (high nibble) ...
        m[1:4] = b"\xff\xff\xff"    # ... rest of traffic class + flow label
        m[7] = 0xff                 # hop limit
    else:
        raise ParseError("not IPv4/IPv6")
    m[ihl + 6:ihl + 8] = b"\xff\xff"    # UDP checksum
    m[ihl + 8 + 4] = 0xff               # BTH resv8a / FECN / BECN
    return zlib.crc32(b"\xff" * 8 + bytes(m)) & 0xffffffff


def icrc_bytes(value):
    """The ICRC is carried least significant byte first."""
    return struct.pack("<I", value)


def same_ip(a, b):
    return ipaddress.ip_address(a) == ipaddress.ip_address(b)
