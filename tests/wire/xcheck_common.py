"""xcheck_common.py — helpers shared by the wire cross-check tests: a failure
collector that prints the first few mismatches and a final summary line, and
the runners for the two C helpers (wire_gen, wire_dump)."""

import json
import os
import subprocess
import sys


class Checker:
    """Counts checks; records failures with enough context to debug them."""

    def __init__(self, name, max_shown=25):
        self.name = name
        self.checks = 0
        self.failures = 0
        self.max_shown = max_shown

    def fail(self, where, msg):
        self.failures += 1
        if self.failures <= self.max_shown:
            print("FAIL %s: %s" % (where, msg), flush=True)
        elif self.failures == self.max_shown + 1:
            print("... further failures not shown", flush=True)

    def check(self, cond, where, msg):
        self.checks += 1
        if not cond:
            self.fail(where, msg)
        return cond

    def equal(self, got, want, where, what):
        return self.check(got == want, where, "%s: got %r, want %r" % (what, got, want))

    def compare_fields(self, got, want, where, ignore=()):
        """Every public field of `want` must be in `got` with the same value,
        and `got` must not carry header fields that `want` lacks (a decoder
        that finds a RETH where there is none is as wrong as one that misses
        it)."""
        public = lambda d: {k for k in d if not k.startswith("_") and k not in ignore}
        extra = public(got) - public(want)
        missing = public(want) - public(got)
        self.check(not extra and not missing, where,
                   "field sets differ: extra %s, missing %s" % (sorted(extra), sorted(missing)))
        for k in sorted(public(want) & public(got)):
            self.equal(got[k], want[k], where, k)

    def finish(self, details):
        status = "PASS" if self.failures == 0 else "FAIL"
        print("%s: %s: %d checks, %d failures; %s"
              % (self.name, status, self.checks, self.failures, details), flush=True)
        return 0 if self.failures == 0 else 1


def run_wire_gen(wire_gen, out, seed, count, ipv6_share=0.5):
    """Run wire_gen; return the list of JSON objects of its .fields.jsonl."""
    cmd = [wire_gen, "--seed", str(seed), "--count", str(count), "--out", out,
           "--ipv6-share", str(ipv6_share)]
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if res.returncode != 0:
        sys.exit("wire_gen failed (%d): %s" % (res.returncode, res.stderr.strip()))
    with open(out + ".fields.jsonl") as f:
        return [json.loads(line) for line in f]


def run_wire_dump(wire_dump, pcap):
    """Run wire_dump; return one JSON object per frame."""
    res = subprocess.run([wire_dump, pcap], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    if res.returncode != 0:
        sys.exit("wire_dump %s failed (%d): %s" % (pcap, res.returncode, res.stderr.strip()))
    return [json.loads(line) for line in res.stdout.splitlines()]


def ensure_dir(path):
    os.makedirs(path, exist_ok=True)
    return path
