/*
 * fuzz_wire_ib.c — libFuzzer target: wire_decode_ib on arbitrary bytes;
 * whatever decodes must re-encode to the same bytes (fuzz_check.h).
 */
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[WIRE_MAX_IB_PACKET + 64];
	struct wire_ib ib;
	if (wire_decode_ib(data, size, &ib) != WIRE_OK)
		return 0;
	FUZZ_ASSERT(ib.payload_len <= 4096);
	int n = wire_encode_ib(&ib, out, sizeof(out));
	FUZZ_ASSERT(n > 0 && (size_t)n == size);
	fuzz_compare_ib(data, out, size, &ib);
	struct wire_ib again;
	FUZZ_ASSERT(wire_decode_ib(out, (size_t)n, &again) == WIRE_OK);
	return 0;
}
