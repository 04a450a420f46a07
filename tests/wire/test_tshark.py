#!/usr/bin/python3
"""test_tshark.py — cross-check softrnic's encoder against Wireshark's
InfiniBand dissector (tshark).

wire_gen writes random frames of every RC, UC, UD opcode and the CNP over
IPv4 and IPv6; tshark must
  - match every frame with `udp.dstport==4791 && infiniband.bth` (it
    dissects RoCEv2 on UDP 4791 by default: infiniband.rroce.port);
  - decode the opcode, dest QP, PSN and every other BTH and extended header
    field it knows as wire_gen's .fields.jsonl says;
  - see the payload + pad length that the opcode leaves, and find the ICRC
    at the end of the frame with the value wire_gen recorded;
  - find the IPv4 header checksum and any UDP checksum good;
  - raise no malformed-packet and no expert item (the one tolerated note is
    tshark's "Time To Live only N", a remark on a legal random TTL).

What tshark (Wireshark 4.0) does not do, and how it is covered instead:
  - it does not verify the ICRC (it only shows "Invariant CRC"); the ICRC
    is recomputed by test_scapy_xcheck.py (scapy and zlib);
  - it does not know the CNP opcode 0x81 ("Unknown (129)") and shows its 16
    reserved bytes plus the ICRC as "Unknown/Vendor Specific Data"; the test
    checks that blob is 16 zero bytes followed by the ICRC;
  - it has no FECN/BECN fields (byte 4 of the BTH is "Reserved").
Random payloads trip tshark's heuristic upper-layer dissectors (RPC over
RDMA, SMC, ...), which then report them malformed; those dissectors are
disabled so that the payload stays plain "data".

Exit status 0 on success, 1 on any mismatch; last line is a summary.
"""

import argparse
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True        # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import roce_ref  # noqa: E402
from xcheck_common import Checker, ensure_dir, run_wire_gen  # noqa: E402

# Upper-layer dissectors that guess at InfiniBand payloads.
GUESSING_PROTOCOLS = ("smc", "smb_direct", "rpcordma", "nvme-rdma", "lnet", "iser",
                      "infiniband_sdp", "fcoib")
GUESSING_HEURISTICS = ("mellanox_eoib", "eth_over_ib")

# tshark field -> .fields.jsonl key, compared as integers.
INT_FIELDS = {
    "infiniband.bth.opcode": "opcode", "infiniband.bth.se": "se",
    "infiniband.bth.m": "migreq", "infiniband.bth.padcnt": "pad",
    "infiniband.bth.tver": "tver", "infiniband.bth.p_key": "pkey",
    "infiniband.bth.destqp": "dqpn", "infiniband.bth.a": "ackreq",
    "infiniband.bth.psn": "psn",
    "infiniband.reth.r_key": "reth_rkey", "infiniband.reth.dmalen": "reth_dma_len",
    "infiniband.atomiceth.swapdt": "atmeth_swap_add",
    "infiniband.atomiceth.cmpdt": "atmeth_compare",
    "infiniband.aeth.syndrome": "aeth_syndrome", "infiniband.aeth.msn": "aeth_msn",
    "infiniband.atomicacketh.origremdt": "atmack",
    "infiniband.deth.q_key": "deth_qkey", "infiniband.deth.srcqp": "deth_sqpn",
    "udp.srcport": "sport", "udp.dstport": "dport", "udp.checksum": "udp_csum",
}
IPV4_FIELDS = {"ip.dsfield.dscp": "dscp", "ip.dsfield.ecn": "ecn", "ip.ttl": "ttl",
               "ip.id": "ip_id", "ip.flags.df": "df"}
IPV6_FIELDS = {"ipv6.tclass.dscp": "dscp", "ipv6.tclass.ecn": "ecn", "ipv6.hlim": "ttl",
               "ipv6.flow": "flow_label"}
# Extended-header fields tshark shows as raw bytes (hex, no 0x).
BYTES_FIELDS = {"infiniband.immdt": "imm", "infiniband.ieth": "ieth"}
OTHER_FIELDS = ("frame.number", "frame.protocols", "frame.len", "ip.src", "ip.dst",
                "ipv6.src", "ipv6.dst", "ip.checksum.status", "udp.checksum.status",
                "udp.length", "infiniband.bth", "infiniband.bth.reserved7", "infiniband.reth.va",
                "data.len", "infiniband.invariant.crc", "infiniband.vendor",
                "_ws.malformed", "_ws.expert.message")

TOLERATED_EXPERT_PREFIX = '"Time To Live" only'


def tshark_env(workdir):
    env = dict(os.environ)
    # An empty private configuration: no personal preferences or profiles
    # can change how frames are dissected.
    conf = ensure_dir(os.path.join(workdir, "wireshark-config"))
    env["WIRESHARK_CONFIG_DIR"] = conf
    env["XDG_CONFIG_HOME"] = conf
    env["HOME"] = workdir
    return env


def tshark_base(pcap):
    cmd = ["tshark", "-n", "-r", pcap,
           "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE"]
    for p in GUESSING_PROTOCOLS:
        cmd += ["--disable-protocol", p]
    for h in GUESSING_HEURISTICS:
        cmd += ["--disable-heuristic", h]
    return cmd


def run_tshark(cmd, env):
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    noise = [l for l in res.stderr.splitlines() if l and "Running as user" not in l]
    if res.returncode != 0 or noise:
        sys.exit("tshark failed (%d): %s\ncommand: %s"
                 % (res.returncode, "\n".join(noise), " ".join(cmd)))
    return res.stdout


def dissect(pcap, env):
    """One dict of field -> list of string values per frame."""
    fields = list(INT_FIELDS) + list(IPV4_FIELDS) + list(IPV6_FIELDS) + \
        list(BYTES_FIELDS) + list(OTHER_FIELDS)
    cmd = tshark_base(pcap) + ["-T", "json"]
    for f in fields:
        cmd += ["-e", f]
    return [pkt["_source"]["layers"] for pkt in json.loads(run_tshark(cmd, env))]


def matching_frames(pcap, env):
    cmd = tshark_base(pcap) + ["-Y", "udp.dstport==4791 && infiniband.bth",
                               "-T", "fields", "-e", "frame.number"]
    return [int(x) for x in run_tshark(cmd, env).split()]


def first(layers, field):
    v = layers.get(field)
    return v[0] if v else None


def as_int(text):
    return int(text, 0) if text.lower().startswith("0x") else int(text)


def check_frame(chk, got, want):
    where = "frame %d (opcode 0x%02x %s, IPv%d)" % (
        want["frame"], want["opcode"], roce_ref.OPCODES[want["opcode"]][0], want["ip_version"])
    protos = first(got, "frame.protocols") or ""
    chk.check("infiniband" in protos.split(":"), where, "not dissected as InfiniBand: " + protos)
    chk.check("infiniband.bth" in got, where, "no BTH")
    chk.check("_ws.malformed" not in got, where, "tshark: malformed packet")
    experts = [m for m in got.get("_ws.expert.message", [])
               if not m.startswith(TOLERATED_EXPERT_PREFIX)]
    chk.check(not experts, where, "tshark expert info: %s" % experts)

    ip_map = IPV4_FIELDS if want["ip_version"] == 4 else IPV6_FIELDS
    for field, key in list(INT_FIELDS.items()) + list(ip_map.items()):
        v = first(got, field)
        if field == "infiniband.reth.r_key" and "atmeth_rkey" in want:
            continue                    # AtomicETH's R_Key, checked below
        if key not in want:
            chk.check(v is None, where, "%s present (%s) but the opcode has no such field" % (field, v))
            continue
        if chk.check(v is not None, where, "%s missing" % field):
            chk.equal(as_int(v), int(want[key]), where, field)
    for field, key in BYTES_FIELDS.items():
        v = first(got, field)
        if key in want and chk.check(v is not None, where, "%s missing" % field):
            chk.equal(int(v.replace(":", ""), 16), want[key], where, field)
        elif key not in want:
            chk.check(v is None, where, "%s present but the opcode has none" % field)
    va = first(got, "infiniband.reth.va")       # RETH and AtomicETH share it
    want_va = want.get("reth_va", want.get("atmeth_va"))
    chk.equal(as_int(va) if va is not None else None, want_va, where, "virtual address")
    if "atmeth_rkey" in want:
        chk.equal(as_int(first(got, "infiniband.reth.r_key") or "-1"), want["atmeth_rkey"],
                  where, "AtomicETH r_key")
    chk.equal(as_int(first(got, "infiniband.bth.reserved7") or "0"), 0, where, "BTH reserved7")

    prefix = "ip." if want["ip_version"] == 4 else "ipv6."
    chk.check(roce_ref.same_ip(first(got, prefix + "src"), want["ip_src"]) and
              roce_ref.same_ip(first(got, prefix + "dst"), want["ip_dst"]), where,
              "addresses %s > %s" % (first(got, prefix + "src"), first(got, prefix + "dst")))
    if want["ip_version"] == 4:
        chk.equal(first(got, "ip.checksum.status"), "1", where, "IPv4 checksum status (1 = good)")
    if want["udp_csum"]:
        chk.equal(first(got, "udp.checksum.status"), "1", where, "UDP checksum status (1 = good)")

    # Lengths: UDP = 8 + BTH + extended headers + payload + pad + ICRC.
    ext = sum(roce_ref.EXT_LEN[h] for h in roce_ref.OPCODES[want["opcode"]][1])
    body = want["payload_len"] + want["pad"]
    chk.equal(as_int(first(got, "udp.length")), 8 + 12 + ext + body + 4, where, "UDP length")
    if want["opcode"] == roce_ref.CNP_OPCODE:
        # Unknown to tshark: the 16 reserved bytes then the ICRC, raw.
        blob = bytes.fromhex((got.get("infiniband.vendor") or [""])[-1].replace(":", ""))
        chk.equal(blob, bytes(16) + roce_ref.icrc_bytes(want["icrc"]), where, "CNP body + ICRC")
        return
    data_len = first(got, "data.len")
    chk.equal(as_int(data_len) if data_len else 0, body, where, "payload + pad bytes (data.len)")
    crc = first(got, "infiniband.invariant.crc")
    if chk.check(crc is not None, where, "no Invariant CRC"):
        # tshark reads the 4 ICRC bytes big-endian; they are sent LSB first.
        chk.equal(as_int(crc), int.from_bytes(roce_ref.icrc_bytes(want["icrc"]), "big"),
                  where, "ICRC as tshark finds it")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wire-gen", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--seed", type=int, default=4791)
    ap.add_argument("--count", type=int, default=100 * len(roce_ref.OPCODES))
    args = ap.parse_args()
    ensure_dir(args.workdir)
    env = tshark_env(args.workdir)
    chk = Checker("test_tshark")

    pcap = os.path.join(args.workdir, "wire_gen_tshark.pcap")
    want = run_wire_gen(args.wire_gen, pcap, args.seed, args.count)
    matched = matching_frames(pcap, env)
    chk.equal(matched, list(range(1, len(want) + 1)), "filter",
              "frames matching udp.dstport==4791 && infiniband.bth")
    got = dissect(pcap, env)
    chk.equal(len(got), len(want), "dissect", "frames")
    seen = set()
    for g, w in zip(got, want):
        seen.add(w["opcode"])
        check_frame(chk, g, w)
    missing = set(roce_ref.OPCODES) - seen
    chk.check(not missing, "coverage", "opcodes not generated: %s" % sorted(missing))
    n6 = sum(1 for w in want if w["ip_version"] == 6)
    return chk.finish("%d wire_gen frames (%d IPv6, %d opcodes) dissected by tshark; seed %d"
                      % (len(want), n6, len(seen), args.seed))


if __name__ == "__main__":
    sys.exit(main())
