/*
 * wire_dump.c — decode a pcap with softrnic's codec and print every frame
 * as one JSON object per line, for the cross-checks in tests/wire.
 *
 *   wire_dump FILE.pcap
 *
 * The field names are those of wire_gen's .fields.jsonl, so a Python test
 * can compare what another tool (scapy) put on the wire with what softrnic
 * reads back.  Each line also has "icrc_ok" (the codec's ICRC verdict) or,
 * for a frame the codec rejects, "error": "<wire_strerror>" and "errcode".
 *
 * Exit status: 0 when the file was read to the end (rejected frames are
 * data, not a failure of the tool), 1 for an unreadable or damaged file,
 * 2 for bad usage.
 */
#include "wire/pcap.h"
#include "wire/wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libdeflate.h>
#include <stdio.h>
#include <string.h>

/* ---- one JSON line ----------------------------------------------------- */

struct json_line {
	bool first;
};

static void json_key(struct json_line *j, const char *key)
{
	printf("%s\"%s\": ", j->first ? "{" : ", ", key);
	j->first = false;
}

static void json_u64(struct json_line *j, const char *key, uint64_t v)
{
	json_key(j, key);
	printf("%llu", (unsigned long long)v);
}

static void json_bool(struct json_line *j, const char *key, bool v)
{
	json_key(j, key);
	fputs(v ? "true" : "false", stdout);
}

/* Only ever called with text we produce ourselves (addresses, the codec's
 * error strings), which holds no quote or backslash; anything outside
 * printable ASCII is replaced so the line stays valid JSON regardless. */
static void json_str(struct json_line *j, const char *key, const char *v)
{
	json_key(j, key);
	putchar('"');
	for (; *v; v++)
		putchar(*v >= 0x20 && *v < 0x7f && *v != '"' && *v != '\\' ? *v : '?');
	putchar('"');
}

static void ip_to_text(const struct wire_ip *ip, const uint8_t addr[16], char *out, size_t cap)
{
	if (ip->version == 4)
		inet_ntop(AF_INET, addr + 12, out, (socklen_t)cap);
	else
		inet_ntop(AF_INET6, addr, out, (socklen_t)cap);
}

/* ---- printing a decoded packet ---------------------------------------- */

static void print_ip(struct json_line *j, const struct wire_pkt *pkt)
{
	const struct wire_ip *ip = &pkt->ip;
	char addr[INET6_ADDRSTRLEN];

	json_u64(j, "ip_version", ip->version);
	ip_to_text(ip, ip->src, addr, sizeof(addr));
	json_str(j, "ip_src", addr);
	ip_to_text(ip, ip->dst, addr, sizeof(addr));
	json_str(j, "ip_dst", addr);
	json_u64(j, "dscp", ip->dscp);
	json_u64(j, "ecn", ip->ecn);
	json_u64(j, "ttl", ip->ttl);
	if (ip->version == 4) {
		json_u64(j, "ip_id", ip->id);
		json_bool(j, "df", ip->df);
	} else {
		json_u64(j, "flow_label", ip->flow_label);
	}
	json_u64(j, "sport", pkt->udp.sport);
	json_u64(j, "dport", pkt->udp.dport);
	json_u64(j, "udp_csum", pkt->udp.csum);
}

static void print_ib(struct json_line *j, const struct wire_ib *ib)
{
	const struct wire_bth *bth = &ib->bth;

	json_u64(j, "opcode", bth->opcode);
	json_bool(j, "se", bth->se);
	json_bool(j, "migreq", bth->migreq);
	json_u64(j, "pad", bth->pad);
	json_u64(j, "tver", bth->tver);
	json_u64(j, "pkey", bth->pkey);
	json_bool(j, "fecn", bth->fecn);
	json_bool(j, "becn", bth->becn);
	json_u64(j, "dqpn", bth->dqpn);
	json_bool(j, "ackreq", bth->ackreq);
	json_u64(j, "psn", bth->psn);
	if (ib->headers & WIRE_HDR_DETH) {
		json_u64(j, "deth_qkey", ib->deth.qkey);
		json_u64(j, "deth_sqpn", ib->deth.sqpn);
	}
	if (ib->headers & WIRE_HDR_RETH) {
		json_u64(j, "reth_va", ib->reth.va);
		json_u64(j, "reth_rkey", ib->reth.rkey);
		json_u64(j, "reth_dma_len", ib->reth.dma_len);
	}
	if (ib->headers & WIRE_HDR_ATMETH) {
		json_u64(j, "atmeth_va", ib->atmeth.va);
		json_u64(j, "atmeth_rkey", ib->atmeth.rkey);
		json_u64(j, "atmeth_swap_add", ib->atmeth.swap_add);
		json_u64(j, "atmeth_compare", ib->atmeth.compare);
	}
	if (ib->headers & WIRE_HDR_AETH) {
		json_u64(j, "aeth_syndrome", ib->aeth.syndrome);
		json_u64(j, "aeth_msn", ib->aeth.msn);
	}
	if (ib->headers & WIRE_HDR_ATMACK)
		json_u64(j, "atmack", ib->atmack);
	if (ib->headers & WIRE_HDR_IMMDT)
		json_u64(j, "imm", ntohl(ib->imm));  /* the 4 wire bytes, big-endian */
	if (ib->headers & WIRE_HDR_IETH)
		json_u64(j, "ieth", ib->ieth);
	json_u64(j, "payload_len", ib->payload_len);
	json_u64(j, "payload_crc32",
	         libdeflate_crc32(0, ib->payload ? ib->payload : (const uint8_t *)"", ib->payload_len));
	json_u64(j, "icrc", ib->icrc);
}

/* Decode one frame.  The first pass does not check the ICRC, so that a
 * frame whose only fault is its ICRC still shows its fields; the second
 * pass asks the codec for its ICRC verdict. */
static void dump_frame(uint64_t index, const uint8_t *data, size_t len)
{
	struct json_line j = { .first = true };
	struct wire_pkt pkt;
	int rc;

	json_u64(&j, "frame", index);
	memset(&pkt, 0, sizeof(pkt));
	rc = wire_decode_eth(data, len, false, &pkt);
	if (rc < 0) {
		json_str(&j, "error", wire_strerror(rc));
		json_key(&j, "errcode");
		printf("%d", rc);
	} else {
		struct wire_pkt checked;

		print_ip(&j, &pkt);
		print_ib(&j, &pkt.ib);
		memset(&checked, 0, sizeof(checked));
		rc = wire_decode_eth(data, len, true, &checked);
		json_bool(&j, "icrc_ok", rc == WIRE_OK);
		if (rc < 0 && rc != WIRE_E_ICRC)       /* would be a codec bug */
			json_str(&j, "verify_error", wire_strerror(rc));
	}
	puts("}");
}

int main(int argc, char **argv)
{
	static uint8_t buf[PCAP_MAX_SNAPLEN];
	struct pcap_reader r;
	struct pcap_record rec;
	uint64_t index = 0;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: wire_dump FILE.pcap\n");
		return 2;
	}
	if (pcap_open_read(&r, argv[1]) < 0) {
		fprintf(stderr, "wire_dump: %s: %s\n", argv[1],
		        errno == EINVAL ? "not a pcap file" : strerror(errno));
		return 1;
	}
	if (r.linktype != PCAP_LINKTYPE_ETHERNET) {
		fprintf(stderr, "wire_dump: %s: linktype %u is not Ethernet\n", argv[1], r.linktype);
		pcap_close_read(&r);
		return 1;
	}
	while ((rc = pcap_read(&r, &rec, buf, sizeof(buf))) == 1)
		dump_frame(++index, rec.data, rec.caplen);
	pcap_close_read(&r);
	if (rc < 0) {
		fprintf(stderr, "wire_dump: %s: damaged record after frame %llu\n",
		        argv[1], (unsigned long long)index);
		return 1;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
