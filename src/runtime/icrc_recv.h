/*
 * icrc_recv.h — ICRC verification for RoCEv2 packets received on a UDP
 * socket, where the IPv4 Identification field (covered by the ICRC, IBTA
 * A17.3.3) is not visible to us.
 *
 * Softrnic peers send ID 0 (see udp_port.c), so the fast path checks the
 * ICRC as if the ID were 0.  Other senders (kernel rxe) use arbitrary IDs;
 * for those we decide exactly whether SOME 16-bit ID makes the ICRC right,
 * using the fact that a CRC is affine in its input (see icrc_recv.c).
 */
#ifndef SOFTRNIC_RUNTIME_ICRC_RECV_H
#define SOFTRNIC_RUNTIME_ICRC_RECV_H

#include <stddef.h>
#include <stdint.h>

#include "wire/wire.h"

enum srt_icrc_result {
	SRT_ICRC_BAD = -1,      /* no IPv4 ID makes the ICRC match            */
	SRT_ICRC_OK = 0,        /* matches with ID 0: all 32 ICRC bits checked */
	SRT_ICRC_OK_ID = 1,     /* matches with a recovered non-zero ID: only
	                           16 of the 32 ICRC bits are really verified  */
};

/* Verify the ICRC of `ib` (the UDP payload, BTH .. ICRC, ib_len bytes
 * including the 4 ICRC bytes) received from an IPv4 sender.  `ip` gives the
 * addresses and flags the packet travelled with; ip->id is ignored (unknown).
 * On success *id_out (may be NULL) receives the IPv4 ID that explains the
 * ICRC.  Returns an enum srt_icrc_result. */
int srt_icrc_verify_ipv4(const struct wire_ip *ip, uint16_t sport, const uint8_t *ib, size_t ib_len,
			 uint16_t *id_out);

/* The same, trying ID `hint` first instead of 0: a sender's UDP GSO burst
 * gives segment k the ID k (the kernel numbers the segments it cuts from
 * one datagram), so a receiver that sees the burst whole (UDP GRO) knows
 * which ID to expect.  SRT_ICRC_OK when `hint` matches (all 32 bits
 * checked); otherwise as above, the ID solved relative to `hint`. */
int srt_icrc_verify_ipv4_hint(const struct wire_ip *ip, uint16_t sport, const uint8_t *ib, size_t ib_len,
			      uint16_t hint, uint16_t *id_out);

/* The linear-algebra core, exposed for tests: `syndrome` is the received
 * ICRC XOR the ICRC computed with ID 0; `bytes_after_id` the number of bytes
 * of the ICRC'd message that follow the 2-byte ID field.  Returns 1 and the
 * ID in *id if one exists (it is unique), else 0. */
int srt_icrc_solve_id(uint32_t syndrome, size_t bytes_after_id, uint16_t *id);

#endif
