#!/usr/bin/python3
"""test_scapy_xcheck.py — cross-check softrnic's wire codec against scapy and
against an independent struct/zlib model of RoCEv2 (roce_ref.py).

 (a) scapy -> softrnic decoder.  scapy builds thousands of seeded random
     frames of every RC, UC, UD opcode and the CNP, over IPv4 and IPv6, some
     with an 802.1Q tag, some with a real UDP checksum.  The BTH, AETH and the
     CNP padding are scapy's own layers; the extended headers scapy lacks
     (RETH, AtomicETH, DETH, ImmDt, IETH, AtomicAckETH) are packed with struct
     from the IBTA layouts in roce_ref.py.  wire_dump must decode every field
     as set, with icrc_ok; frames whose ICRC was deliberately corrupted must
     decode with icrc_ok false; a handful of malformed frames must be
     rejected with the error the contract names.
 (b) softrnic encoder -> scapy.  wire_gen writes random frames; scapy parses
     them and its BTH/AETH/IP/UDP fields must equal wire_gen's .fields.jsonl;
     roce_ref parses the extended headers and payload; the ICRC in each frame
     must equal scapy's compute_icrc (IPv4) and roce_ref's zlib ICRC (both).
 (c) round trip: wire_dump of wire_gen's pcap equals the .fields.jsonl.
 (d) with --rxe-dir: every frame of the kernel Soft-RoCE captures decodes
     with icrc_ok and the same fields roce_ref reads.
 (e) wire_gen and wire_dump reject bad arguments and bad files cleanly.

scapy limitation (scapy 2.5 contrib/roce.py): BTH.compute_icrc only handles
an IPv4 underlayer; for IPv6 it logs "not supported" and returns 0.  IPv6
frames are therefore covered by roce_ref.icrc_of_ip_packet alone, which is
itself checked against scapy on every IPv4 frame and against all rxe frames.

Exit status 0 on success, 1 on any mismatch; last line is a summary.
"""

import argparse
import glob
import logging
import os
import random
import struct
import subprocess
import sys
import zlib

sys.dont_write_bytecode = True        # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import roce_ref  # noqa: E402
from xcheck_common import Checker, ensure_dir, run_wire_dump, run_wire_gen  # noqa: E402

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
# Only the layers needed (scapy.all loads every layer and costs seconds).
from scapy.compat import raw  # noqa: E402
from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.inet6 import IPv6  # noqa: E402
from scapy.layers.l2 import Dot1Q, Ether  # noqa: E402
from scapy.packet import Raw  # noqa: E402
from scapy.contrib.roce import AETH, BTH, CNPPadding  # noqa: E402
from scapy.utils import PcapWriter, rdpcap  # noqa: E402

PMTUS = (256, 512, 1024, 2048, 4096)
ALL_OPCODES = sorted(roce_ref.OPCODES)

# wire_dump error codes named by the contract (src/wire/wire.h).
E_TVER, E_OPCODE, E_IP_HEADER, E_NOT_ROCE, E_UDP_CSUM = -2, -3, -9, -11, -16


def bswap32(v):
    return struct.unpack("<I", struct.pack(">I", v))[0]


# ---- (a) random frames built with scapy -------------------------------------

def random_payload_len(rng, rule):
    pmtu = rng.choice(PMTUS)
    return {"none": 0, "full": pmtu, "last": rng.randint(1, pmtu),
            "only": rng.randint(0, pmtu), "cnp": 16}[rule]


def random_syndrome(rng, bare_ack):
    kind = rng.choice((0, 1, 3)) if bare_ack else 0     # IBTA 9.3.5 table 43
    value = rng.randrange(5) if kind == 3 else rng.randrange(32)
    return (kind << 5) | value


def random_ip_fields(rng, ipv6):
    f = {"dscp": rng.randrange(64), "ecn": rng.randrange(4), "ttl": rng.randint(1, 255),
         "sport": rng.randint(0xc000, 0xffff), "dport": roce_ref.ROCEV2_PORT}
    if ipv6:
        f["ip_version"] = 6
        f["flow_label"] = rng.getrandbits(20)
        f["ip_src"] = str(roce_ref.ipaddress.IPv6Address(b"\xfd" + rng.randbytes(15)))
        f["ip_dst"] = str(roce_ref.ipaddress.IPv6Address(b"\xfd" + rng.randbytes(15)))
    else:
        f["ip_version"] = 4
        f["ip_id"] = rng.getrandbits(16)
        f["df"] = rng.random() < 0.5
        f["ip_src"] = "%d.%d.%d.%d" % (rng.randint(1, 223), rng.randrange(256),
                                       rng.randrange(256), rng.randrange(256))
        f["ip_dst"] = "%d.%d.%d.%d" % (rng.randint(1, 223), rng.randrange(256),
                                       rng.randrange(256), rng.randrange(256))
    return f


def random_ib_fields(rng, opcode):
    name, hdrs, rule = roce_ref.OPCODES[opcode]
    cnp = rule == "cnp"
    response = roce_ref.is_response(opcode)
    pkey = 0
    while pkey & 0x7fff == 0:           # IBTA 10.9: low 15 bits 0 = invalid P_Key
        pkey = rng.getrandbits(16)
    may_solicit = rule in ("last", "only") and ("imm" in hdrs or "SEND" in name)
    f = {"opcode": opcode, "tver": 0, "pkey": pkey, "dqpn": rng.getrandbits(24),
         "se": (not cnp) and may_solicit and rng.random() < 0.5,
         "migreq": (not cnp) and rng.random() < 0.5,
         "fecn": (not cnp) and rng.random() < 0.5,
         "becn": cnp or rng.random() < 0.5,
         "ackreq": (not cnp) and (not response) and rng.random() < 0.5,
         "psn": 0 if cnp else rng.getrandbits(24)}
    plen = random_payload_len(rng, rule)
    payload = bytes(16) if cnp else rng.randbytes(plen)
    f["pad"] = (4 - plen % 4) % 4
    if "deth" in hdrs:
        f.update(deth_qkey=rng.getrandbits(32), deth_sqpn=rng.getrandbits(24))
    if "reth" in hdrs:
        dlen = plen if rule == "only" else rng.getrandbits(32)
        f.update(reth_va=rng.getrandbits(64), reth_rkey=rng.getrandbits(32), reth_dma_len=dlen)
    if "atmeth" in hdrs:
        f.update(atmeth_va=rng.getrandbits(64) & ~7, atmeth_rkey=rng.getrandbits(32),
                 atmeth_swap_add=rng.getrandbits(64), atmeth_compare=rng.getrandbits(64))
    if "aeth" in hdrs:
        f.update(aeth_syndrome=random_syndrome(rng, opcode == 0x11),
                 aeth_msn=rng.getrandbits(24))
    if "atmack" in hdrs:
        f["atmack"] = rng.getrandbits(64)
    if "imm" in hdrs:
        f["imm"] = rng.getrandbits(32)
    if "ieth" in hdrs:
        f["ieth"] = rng.getrandbits(32)
    f["payload_len"] = plen
    f["payload_crc32"] = zlib.crc32(payload) & 0xffffffff
    return f, payload


def scapy_bth(f, **extra):
    return BTH(opcode=f["opcode"], solicited=int(f["se"]), migreq=int(f["migreq"]),
               padcount=f["pad"], version=f["tver"], pkey=f["pkey"], fecn=int(f["fecn"]),
               becn=int(f["becn"]), dqpn=f["dqpn"], ackreq=int(f["ackreq"]), psn=f["psn"],
               **extra)


def scapy_frame(rng, f, payload, vlan, real_udp_csum):
    """The frame as scapy builds it.  For IPv4 scapy computes the ICRC; for
    IPv6 (unsupported by scapy) roce_ref's ICRC is filled in."""
    l2 = Ether(src="02:00:00:%02x:%02x:%02x" % tuple(rng.randbytes(3)),
               dst="02:00:01:%02x:%02x:%02x" % tuple(rng.randbytes(3)))
    if vlan:
        l2 = l2 / Dot1Q(vlan=vlan)
    tos = (f["dscp"] << 2) | f["ecn"]
    if f["ip_version"] == 4:
        l3 = IP(src=f["ip_src"], dst=f["ip_dst"], tos=tos, ttl=f["ttl"], id=f["ip_id"],
                flags="DF" if f["df"] else 0)
    else:
        l3 = IPv6(src=f["ip_src"], dst=f["ip_dst"], tc=tos, fl=f["flow_label"], hlim=f["ttl"])
    udp = UDP(sport=f["sport"], dport=f["dport"], chksum=None if real_udp_csum else 0)
    name, hdrs, rule = roce_ref.OPCODES[f["opcode"]]
    icrc = {} if f["ip_version"] == 4 else {"icrc": 0}
    if f["opcode"] == 0x11:             # scapy's own AETH layer
        ib = scapy_bth(f, **icrc) / AETH(syndrome=f["aeth_syndrome"], msn=f["aeth_msn"])
    elif rule == "cnp":                 # scapy's own CNP padding layer
        ib = scapy_bth(f, **icrc) / CNPPadding()
    else:
        body = b"".join(roce_ref.pack_ext(h, f) for h in roce_ref.EXT_ORDER if h in hdrs)
        body += payload + bytes(f["pad"])
        ib = scapy_bth(f, **icrc) / Raw(body) if body else scapy_bth(f, **icrc)
    pkt = l2 / l3 / udp / ib
    if f["ip_version"] == 6:
        frame = raw(pkt)
        ip_at = 18 if vlan else 14
        value = roce_ref.icrc_of_ip_packet(frame[ip_at:-4])
        pkt[BTH].icrc = bswap32(value)  # scapy's field reads the LE bytes as big-endian
    return raw(pkt)


def corrupt_icrc(frame):
    return frame[:-1] + bytes([frame[-1] ^ 0x01])


def part_a(chk, args, rng):
    """scapy builds, softrnic decodes."""
    pcap = os.path.join(args.workdir, "scapy_built.pcap")
    expected = []
    stats = {"ipv6": 0, "vlan": 0, "udp_csum": 0, "bad_icrc": 0}
    writer = PcapWriter(pcap, linktype=1, sync=False)
    for i in range(args.count):
        opcode = ALL_OPCODES[i % len(ALL_OPCODES)]
        ipv6 = rng.random() < 0.5
        vlan = rng.randint(1, 4094) if rng.random() < 0.1 else 0
        real_csum = rng.random() < 0.3
        f = random_ip_fields(rng, ipv6)
        ibf, payload = random_ib_fields(rng, opcode)
        f.update(ibf)
        frame = scapy_frame(rng, f, payload, vlan, real_csum)
        where = "a/frame %d (opcode 0x%02x, IPv%d)" % (i + 1, opcode, f["ip_version"])
        # scapy's ICRC (IPv4) and roce_ref's must agree before softrnic is
        # asked (for IPv6 the ICRC was roce_ref's to begin with).
        ref = roce_ref.parse_frame(frame)
        zlib_icrc = roce_ref.icrc_of_ip_packet(ref["_ip_packet"][:-4])
        chk.equal(ref["icrc"], zlib_icrc, where, "scapy ICRC vs roce_ref zlib ICRC")
        f["icrc"] = ref["icrc"]
        f["udp_csum"] = ref["udp_csum"]
        f["icrc_ok"] = True
        if i % 25 == 24:
            frame = corrupt_icrc(frame)
            f["icrc"] ^= 0x01000000     # last wire byte = most significant
            f["icrc_ok"] = False
            if f["udp_csum"]:           # the UDP checksum covers the ICRC
                frame = fix_udp_csum(frame)
                f["udp_csum"] = roce_ref.parse_frame(frame)["udp_csum"]
            stats["bad_icrc"] += 1
        stats["ipv6"] += ipv6
        stats["vlan"] += bool(vlan)
        stats["udp_csum"] += f["udp_csum"] != 0
        writer.write(frame)
        expected.append(("valid", where, f))
    for where, frame, want_err in malformed_frames(rng):
        writer.write(frame)
        expected.append(("malformed", where, want_err))
    writer.close()

    decoded = run_wire_dump(args.wire_dump, pcap)
    chk.equal(len(decoded), len(expected), "a", "frames decoded")
    for (kind, where, want), got in zip(expected, decoded):
        if kind == "valid":
            if not chk.check("error" not in got, where, "rejected: %s" % got.get("error")):
                continue
            chk.check("verify_error" not in got, where,
                      "ICRC-verifying decode failed otherwise: %s" % got.get("verify_error"))
            chk.compare_fields(got, want, where, ignore=("frame", "verify_error"))
        else:
            if chk.check("error" in got, where, "malformed frame accepted: %s" % got) and want:
                chk.equal(got["errcode"], want, where, "error code (%s)" % got["error"])
    return "a) %d scapy frames (%d IPv6, %d 802.1Q, %d UDP csum, %d bad ICRC) + %d malformed" % (
        args.count, stats["ipv6"], stats["vlan"], stats["udp_csum"], stats["bad_icrc"],
        sum(1 for e in expected if e[0] == "malformed"))


def fix_udp_csum(frame):
    """Recompute a non-zero UDP checksum after the frame was edited."""
    pkt = Ether(frame)
    del pkt[UDP].chksum
    return raw(pkt)


def malformed_frames(rng):
    """(where, frame, expected errcode or None for 'any error')."""
    out = []

    def ok_frame(opcode=0x04, ipv6=False, real_csum=False):
        f = random_ip_fields(rng, ipv6)
        ibf, payload = random_ib_fields(rng, opcode)
        f.update(ibf)
        return f, payload, scapy_frame(rng, f, payload, 0, real_csum)

    def with_ib(frame, mutate):
        """Edit the IB part, re-seal IPv4 checksum/UDP length, keep ICRC valid."""
        pkt = Ether(frame)
        ib = bytearray(raw(pkt[UDP].payload))
        ib = mutate(ib)
        ip = pkt[IP] if IP in pkt else pkt[IPv6]
        pkt[UDP].remove_payload()
        pkt[UDP].add_payload(Raw(bytes(ib)))
        del pkt[UDP].len
        if IP in pkt:
            del ip.len, ip.chksum
        else:
            del ip.plen
        b = raw(pkt)
        ip_at = 14
        icrc = roce_ref.icrc_of_ip_packet(b[ip_at:-4])
        return b[:-4] + roce_ref.icrc_bytes(icrc)

    _, _, fr = ok_frame()
    out.append(("malformed/tver=1", with_ib(fr, lambda b: b[:1] + bytes([b[1] | 1]) + b[2:]), E_TVER))
    _, _, fr = ok_frame()
    out.append(("malformed/opcode 0x15", with_ib(fr, lambda b: bytes([0x15]) + b[1:]), E_OPCODE))
    _, _, fr = ok_frame(opcode=0x11)
    out.append(("malformed/ACK with payload", with_ib(fr, lambda b: b[:-4] + b"\1\2\3\4" + b[-4:]), None))
    _, _, fr = ok_frame(opcode=0x13)
    out.append(("malformed/CmpSwap truncated AtomicETH", with_ib(fr, lambda b: b[:20] + b[-4:]), None))
    _, _, fr = ok_frame(opcode=0x11)
    out.append(("malformed/ACK pad=2 with no payload", with_ib(fr, lambda b: b[:1] + bytes([b[1] | 0x20]) + b[2:]), None))
    _, _, fr = ok_frame()
    out.append(("malformed/frame cut inside BTH", fr[:14 + 20 + 8 + 6], None))
    _, _, fr = ok_frame()
    bad = bytearray(fr)
    bad[14 + 10] ^= 0x55                  # IPv4 header checksum
    out.append(("malformed/IPv4 header checksum", bytes(bad), E_IP_HEADER))
    _, _, fr = ok_frame(ipv6=True, real_csum=True)
    bad = bytearray(fr)
    bad[14 + 40 + 6] ^= 0x5a              # non-zero UDP checksum made wrong
    if bad[14 + 40 + 6] == 0 and bad[14 + 40 + 7] == 0:
        bad[14 + 40 + 7] = 1
    out.append(("malformed/UDP checksum", bytes(bad), E_UDP_CSUM))
    _, _, fr = ok_frame()
    pkt = Ether(fr)
    pkt[UDP].dport = 4792
    del pkt[UDP].chksum
    pkt[UDP].chksum = 0
    out.append(("malformed/UDP dport 4792", raw(pkt), E_NOT_ROCE))
    return out


# ---- (b) wire_gen frames parsed by scapy ----------------------------------------

def part_b(chk, args):
    pcap = os.path.join(args.workdir, "wire_gen.pcap")
    fields = run_wire_gen(args.wire_gen, pcap, args.seed, args.gen_count)
    frames = rdpcap(pcap)
    chk.equal(len(frames), len(fields), "b", "frames in wire_gen pcap vs .jsonl lines")
    opcodes = set()
    n6 = 0
    for pkt, want in zip(frames, fields):
        where = "b/frame %d (opcode 0x%02x, IPv%d)" % (want["frame"], want["opcode"], want["ip_version"])
        opcodes.add(want["opcode"])
        if not chk.check(BTH in pkt, where, "scapy finds no BTH"):
            continue
        frame = raw(pkt)
        bth = pkt[BTH]
        scapy_bth_fields = {"opcode": bth.opcode, "se": bool(bth.solicited),
                            "migreq": bool(bth.migreq), "pad": bth.padcount,
                            "tver": bth.version, "pkey": bth.pkey, "fecn": bool(bth.fecn),
                            "becn": bool(bth.becn), "dqpn": bth.dqpn,
                            "ackreq": bool(bth.ackreq), "psn": bth.psn}
        for k, v in scapy_bth_fields.items():
            chk.equal(v, want[k], where, "scapy BTH." + k)
        chk.equal((bth.resv6, bth.resv7), (0, 0), where, "scapy BTH reserved bits")
        chk.equal(bswap32(bth.icrc), want["icrc"], where, "scapy BTH.icrc (LE on the wire)")
        if AETH in pkt:
            chk.equal((pkt[AETH].syndrome, pkt[AETH].msn),
                      (want["aeth_syndrome"], want["aeth_msn"]), where, "scapy AETH")
        if want["ip_version"] == 4:
            ip = pkt[IP]
            chk.equal((ip.src, ip.dst, ip.tos, ip.ttl, ip.id, bool(ip.flags.DF), ip.frag),
                      (want["ip_src"], want["ip_dst"], (want["dscp"] << 2) | want["ecn"],
                       want["ttl"], want["ip_id"], want["df"], 0), where, "scapy IPv4")
            chk.equal(roce_ref.inet_checksum(frame[14:34]), 0, where, "IPv4 header checksum")
            chk.equal(ip.len, len(frame) - 14, where, "IPv4 total length")
            # scapy's own ICRC over the frame as it stands.
            chk.equal(bth.compute_icrc(None), frame[-4:], where, "scapy compute_icrc vs frame")
        else:
            n6 += 1
            ip = pkt[IPv6]
            chk.check(roce_ref.same_ip(ip.src, want["ip_src"]) and roce_ref.same_ip(ip.dst, want["ip_dst"]),
                      where, "IPv6 addresses %s %s vs %s %s" % (ip.src, ip.dst, want["ip_src"], want["ip_dst"]))
            chk.equal((ip.tc, ip.fl, ip.hlim, ip.nh, ip.plen),
                      ((want["dscp"] << 2) | want["ecn"], want["flow_label"], want["ttl"], 17,
                       len(frame) - 14 - 40), where, "scapy IPv6")
        udp = pkt[UDP]
        udp_len = len(frame) - 14 - (20 if want["ip_version"] == 4 else 40)
        chk.equal((udp.sport, udp.dport, udp.chksum, udp.len),
                  (want["sport"], want["dport"], want["udp_csum"], udp_len), where, "scapy UDP")
        # roce_ref: extended headers, payload, pad and the zlib ICRC.
        try:
            ref = roce_ref.parse_frame(frame)
        except roce_ref.ParseError as e:
            chk.fail(where, "roce_ref cannot parse: %s" % e)
            continue
        chk.compare_fields(ref, want, where, ignore=("frame",))
        chk.equal(ref["_pad_bytes"], bytes(want["pad"]), where, "pad bytes are zero")
        chk.equal(roce_ref.icrc_of_ip_packet(ref["_ip_packet"][:-4]), want["icrc"],
                  where, "roce_ref zlib ICRC vs frame")
    missing = set(roce_ref.OPCODES) - opcodes
    chk.check(not missing, "b", "opcodes never generated: %s" % sorted(missing))
    return pcap, fields, "b) %d wire_gen frames (%d IPv6, %d opcodes)" % (len(fields), n6, len(opcodes))


def part_c(chk, args, pcap, fields):
    decoded = run_wire_dump(args.wire_dump, pcap)
    chk.equal(len(decoded), len(fields), "c", "frames")
    for got, want in zip(decoded, fields):
        where = "c/frame %d (opcode 0x%02x)" % (want["frame"], want["opcode"])
        if not chk.check("error" not in got, where, "rejected: %s" % got.get("error")):
            continue
        chk.equal(got.get("icrc_ok"), True, where, "icrc_ok")
        chk.compare_fields(got, want, where, ignore=("icrc_ok", "verify_error"))
    return "c) %d round trips" % len(decoded)


def part_d(chk, args):
    files = sorted(glob.glob(os.path.join(args.rxe_dir, "*.pcap")))
    n = 0
    for path in files:
        decoded = run_wire_dump(args.wire_dump, path)
        raw_frames = [raw(p) for p in rdpcap(path)]
        chk.equal(len(decoded), len(raw_frames), path, "frames")
        for i, (got, frame) in enumerate(zip(decoded, raw_frames)):
            where = "d/%s frame %d" % (os.path.basename(path), i + 1)
            n += 1
            if not chk.check("error" not in got, where, "rejected: %s" % got.get("error")):
                continue
            ref = roce_ref.parse_frame(frame)
            ref.pop("_frag", None)
            chk.equal(got.get("icrc_ok"), True, where, "icrc_ok")
            chk.compare_fields(got, ref, where, ignore=("frame", "icrc_ok", "verify_error"))
    return "d) %d rxe frames in %d files" % (n, len(files))


def part_e(chk, args):
    """The two tools reject bad input with a message and an exit status."""
    junk = os.path.join(args.workdir, "not_a_pcap.txt")
    with open(junk, "w") as f:
        f.write("this is not a capture\n")
    good = os.path.join(args.workdir, "three.pcap")
    run_wire_gen(args.wire_gen, good, 1, 3)
    cut = os.path.join(args.workdir, "cut.pcap")
    with open(good, "rb") as f, open(cut, "wb") as g:
        g.write(f.read()[:24 + 16 + 30])    # file header, one record cut short
    cases = [
        ([args.wire_dump], 2, "usage"),
        ([args.wire_dump, junk], 1, "not a pcap file"),
        ([args.wire_dump, os.path.join(args.workdir, "missing.pcap")], 1, "No such file"),
        ([args.wire_dump, cut], 1, "damaged record"),
        ([args.wire_gen], 2, "usage"),
        ([args.wire_gen, "--seed", "1", "--count", "0", "--out", good], 2, "usage"),
        ([args.wire_gen, "--seed", "x", "--count", "1", "--out", good], 2, "usage"),
        ([args.wire_gen, "--seed", "1", "--count", "1", "--out", good, "--ipv6-share", "2"], 2, "usage"),
        ([args.wire_gen, "--seed", "1", "--count", "1", "--out", "/nonexistent/dir/x.pcap"], 1, "No such file"),
    ]
    for cmd, status, text in cases:
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        where = "e/" + " ".join(os.path.basename(c) for c in cmd)
        chk.equal(res.returncode, status, where, "exit status")
        chk.check(text in res.stderr, where, "stderr lacks %r: %r" % (text, res.stderr))
    return "e) %d bad-input cases" % len(cases)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wire-gen", required=True)
    ap.add_argument("--wire-dump", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--count", type=int, default=5000, help="scapy-built frames (a)")
    ap.add_argument("--gen-count", type=int, default=3000, help="wire_gen frames (b, c)")
    ap.add_argument("--rxe-dir", help="kernel Soft-RoCE captures to decode (d)")
    ap.add_argument("--parts", default="abcde", help="which parts to run (debugging aid)")
    args = ap.parse_args()
    ensure_dir(args.workdir)
    chk = Checker("test_scapy_xcheck")
    rng = random.Random(args.seed)
    details = []
    if "a" in args.parts:
        details.append(part_a(chk, args, rng))
    if "b" in args.parts or "c" in args.parts:
        pcap, fields, text = part_b(chk, args)
        details.append(text)
        if "c" in args.parts:
            details.append(part_c(chk, args, pcap, fields))
    if "d" in args.parts and args.rxe_dir:
        details.append(part_d(chk, args))
    if "e" in args.parts:
        details.append(part_e(chk, args))
    return chk.finish("; ".join(details) + "; seed %d" % args.seed)


if __name__ == "__main__":
    sys.exit(main())
