/*
 * share_steer.h — how several processes share one host address on UDP
 * 4791: the numbering they agree on, and the classic-BPF program that
 * makes the kernel hand each datagram to the right process's socket.
 *
 * The processes' sockets form one SO_REUSEPORT group on <addr>:4791, kept
 * in slot order by softrnic-hostd (hostd.c), so that socket index k in the
 * group is slot k, and the program (SO_ATTACH_REUSEPORT_CBPF) returns the
 * slot a datagram belongs to:
 *   - data (destination QP != 1): the slot is the top SRT_SHARE_SLOT_BITS
 *     of the 24-bit destination QPN, because each process allocates its
 *     QPNs in its slot's range (slot << SRT_SHARE_QPN_SHIFT, rnic_config
 *     qpn_base/qpn_span);
 *   - CM MADs on QP1 (IBTA 12.6): REQ and SIDR_REQ go to the slot that
 *     registered the Service ID (a table compiled into the program, so a
 *     new listener means a new program); SIDR_REP by the slot bits of its
 *     Request ID, every other CM message by those of its Remote
 *     Communication ID, which is the receiver's own Local Communication
 *     ID — each process draws its IDs with its slot in the top bits
 *     (cm_config id_prefix);
 *   - anything else on QP1, and a REQ for a Service ID nobody listens on:
 *     slot 0, whose CM answers as a lone host would (REJ "invalid service
 *     ID").
 * The program sees the UDP payload (the kernel pulls the UDP header before
 * it runs), so offsets are from the BTH.  An index past the group's size
 * makes the kernel fall back to its hash: such a datagram (for a slot that
 * no longer exists) lands on some member, which drops it as for an
 * unknown QP.
 */
#ifndef SOFTRNIC_RUNTIME_SHARE_STEER_H
#define SOFTRNIC_RUNTIME_SHARE_STEER_H

#include <stddef.h>
#include <stdint.h>

#include <linux/filter.h>

#define SRT_SHARE_SLOT_BITS 6u
#define SRT_SHARE_SLOTS (1u << SRT_SHARE_SLOT_BITS)            /* processes per address */
#define SRT_SHARE_QPN_SHIFT (24u - SRT_SHARE_SLOT_BITS)        /* QPN = slot << 18 | n  */
#define SRT_SHARE_COMM_ID_SHIFT (32u - SRT_SHARE_SLOT_BITS)    /* comm ID = slot << 26 | n */
#define SRT_SHARE_MAX_LISTENERS 256u

struct srt_share_listener {
	uint64_t service_id;
	uint32_t slot;
};

/* Longest program srt_share_steer_build writes. */
#define SRT_SHARE_STEER_MAX_INSNS (32u + 5u * SRT_SHARE_MAX_LISTENERS)

/* Writes the steering program for these listeners into prog (room for
 * SRT_SHARE_STEER_MAX_INSNS); returns its length, or 0 if there are more
 * than SRT_SHARE_MAX_LISTENERS. */
size_t srt_share_steer_build(const struct srt_share_listener *l, size_t n, struct sock_filter *prog);

#endif
