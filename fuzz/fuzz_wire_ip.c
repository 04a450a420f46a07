/*
 * fuzz_wire_ip.c — libFuzzer target: wire_decode_ip on arbitrary bytes,
 * first byte of the input choosing whether the ICRC is verified (so both
 * the ICRC path and the deeper structure checks get coverage).
 */
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_pkt pkt;
	if (size < 1)
		return 0;
	bool verify = data[0] & 1;
	if (wire_decode_ip(data + 1, size - 1, verify, &pkt) != WIRE_OK)
		return 0;
	FUZZ_ASSERT(pkt.ip_start == data + 1 && pkt.ip_len <= size - 1);
	fuzz_check_ip(data + 1, &pkt);
	return 0;
}
