/*
 * fuzz_wire_eth.c — libFuzzer target: wire_decode_eth (Ethernet, optional
 * VLAN tag, IP, UDP, IB) without ICRC check, then re-encode and compare;
 * the re-encoded frame must also carry a valid ICRC.
 */
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[WIRE_ETH_LEN + WIRE_IPV6_LEN + WIRE_UDP_LEN + WIRE_MAX_IB_PACKET + 64];
	struct wire_pkt pkt;
	if (wire_decode_eth(data, size, false, &pkt) != WIRE_OK)
		return 0;
	fuzz_check_ip(pkt.ip_start, &pkt);
	int n = wire_encode_eth(data, &pkt, out, sizeof(out));
	FUZZ_ASSERT(n > 0 && (size_t)n == WIRE_ETH_LEN + pkt.ip_len);
	FUZZ_ASSERT(memcmp(out, data, 12) == 0);
	struct wire_pkt again;
	int rc = wire_decode_eth(out, (size_t)n, true, &again);
	FUZZ_ASSERT(rc == WIRE_OK || (pkt.udp.csum && rc == WIRE_E_UDP_CSUM));
	return 0;
}
