/*
 * sport.c — small numeric rules of RoCEv2: the UDP source port that gives
 * a flow its ECMP entropy (A17.5.2 leaves the choice to the sender; we
 * copy what the Linux kernel does so captures line up with rxe), and the
 * RNR NAK timer table.
 */
#include "wire/wire.h"

/* Kernel's rdma_calc_flow_label() + rdma_flow_label_to_udp_sport() with a
 * zero flow label: fold the product of the QPNs into 20 bits, then fold
 * those 20 bits into the 14 low bits of a port in 0xC000..0xFFFF.  The
 * product is symmetric, so both ends of a connection pick the same port. */
uint16_t wire_udp_sport_rc(uint32_t lqpn, uint32_t rqpn)
{
	uint64_t v = (uint64_t)(lqpn & WIRE_QPN_MASK) * (rqpn & WIRE_QPN_MASK);
	v ^= v >> 20;
	v ^= v >> 40;
	uint32_t fl = (uint32_t)(v & 0xfffff);
	return (uint16_t)(0xc000u | ((fl & 0x3fff) ^ (fl >> 14)));
}

/* rxe for UD QPs and QP1: 0xC000 + hash_32(qpn, 14), the golden-ratio
 * multiplicative hash keeping the top 14 bits. */
uint16_t wire_udp_sport_ud(uint32_t qpn)
{
	uint32_t h = (uint32_t)(qpn * 0x61c88647u) >> 18;
	return (uint16_t)(0xc000u + h);
}

/* IBTA 9.7.5.2.8, table 45: RNR NAK timer field encoding, in microseconds.
 * Code 0 is the longest wait (655.36 ms); 1..31 grow roughly by 1.5x/1.33x
 * steps from 0.01 ms to 491.52 ms. */
static const uint32_t rnr_timer_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120,
	160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

/* The field is 5 bits; higher bits of `code` are ignored. */
uint32_t wire_rnr_timer_us(uint8_t code)
{
	return rnr_timer_us[code & 0x1f];
}
