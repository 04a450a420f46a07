/*
 * share_steer.c — the classic-BPF steering program of a shared host
 * address (share_steer.h says what it decides and why).
 *
 * Offsets into the UDP payload (IBTA 9.2 BTH, 9.3.3 DETH, 13.4.2 MAD
 * header, 12.6 CM message layouts):
 *   4..7   BTH reserved byte + destination QPN (24 bits)
 *   20     the MAD (after BTH 12 + DETH 8); 21 its management class
 *   36     MAD attribute ID (the CM message type)
 *   44     CM data word 0: Local Communication ID, or a SIDR Request ID
 *   48     CM data word 1: Remote Communication ID (REP, RTU, MRA, REJ,
 *          DREQ, DREP, LAP, APR)
 *   52     CM REQ / SIDR_REQ Service ID (8 bytes)
 * Loads are big-endian, as the wire is.  A load past the packet's end
 * makes the program return 0, i.e. slot 0: a short packet on QP1 is
 * slot 0's CM to judge and drop.
 */
#include "runtime/share_steer.h"

#include "wire/mad.h"

#define OFF_DQPN 4u
#define OFF_MAD 20u
#define OFF_MGMT_CLASS (OFF_MAD + 1u)
#define OFF_ATTR_ID (OFF_MAD + 16u)
#define OFF_CM_WORD0 (OFF_MAD + WIRE_MAD_HDR_LEN)
#define OFF_CM_WORD1 (OFF_CM_WORD0 + 4u)
#define OFF_SERVICE_ID (OFF_CM_WORD0 + 8u)

static struct sock_filter insn(uint16_t code, uint8_t jt, uint8_t jf, uint32_t k)
{
	return (struct sock_filter){ code, jt, jf, k };
}

/* "A = top slot bits of the byte at off; return A": the slot of a
 * communication or request ID. */
static size_t emit_id_slot(struct sock_filter *p, size_t n, uint32_t off)
{
	p[n++] = insn(BPF_LD | BPF_B | BPF_ABS, 0, 0, off);
	p[n++] = insn(BPF_ALU | BPF_RSH | BPF_K, 0, 0, 8u - SRT_SHARE_SLOT_BITS);
	p[n++] = insn(BPF_RET | BPF_A, 0, 0, 0);
	return n;
}

size_t srt_share_steer_build(const struct srt_share_listener *l, size_t nl, struct sock_filter *p)
{
	size_t n = 0, remote, sidr_rep, req;

	if (nl > SRT_SHARE_MAX_LISTENERS)
		return 0;
	/* Data: the slot bits of the destination QPN. */
	p[n++] = insn(BPF_LD | BPF_W | BPF_ABS, 0, 0, OFF_DQPN);
	p[n++] = insn(BPF_ALU | BPF_AND | BPF_K, 0, 0, WIRE_QPN_MASK);
	p[n++] = insn(BPF_JMP | BPF_JEQ | BPF_K, 2, 0, WIRE_GSI_QPN);      /* QP1: to the CM part */
	p[n++] = insn(BPF_ALU | BPF_RSH | BPF_K, 0, 0, SRT_SHARE_QPN_SHIFT);
	p[n++] = insn(BPF_RET | BPF_A, 0, 0, 0);
	/* QP1, not the CM class: slot 0. */
	p[n++] = insn(BPF_LD | BPF_B | BPF_ABS, 0, 0, OFF_MGMT_CLASS);
	p[n++] = insn(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, WIRE_MAD_CLASS_CM);
	p[n++] = insn(BPF_RET | BPF_K, 0, 0, 0);
	/* The CM message type decides which field names the receiver. */
	p[n++] = insn(BPF_LD | BPF_H | BPF_ABS, 0, 0, OFF_ATTR_ID);
	/* n = 9: jeq REQ, jeq SIDR_REQ, jeq SIDR_REP, then "remote" at 12,
	 * "sidr_rep" at 15, "req" at 18 (offsets are from the next insn). */
	remote = 12;
	sidr_rep = remote + 3;
	req = sidr_rep + 3;
	p[n] = insn(BPF_JMP | BPF_JEQ | BPF_K, (uint8_t)(req - n - 1), 0, WIRE_CM_ATTR_REQ);
	n++;
	p[n] = insn(BPF_JMP | BPF_JEQ | BPF_K, (uint8_t)(req - n - 1), 0, WIRE_CM_ATTR_SIDR_REQ);
	n++;
	p[n] = insn(BPF_JMP | BPF_JEQ | BPF_K, (uint8_t)(sidr_rep - n - 1), 0, WIRE_CM_ATTR_SIDR_REP);
	n++;
	n = emit_id_slot(p, n, OFF_CM_WORD1);   /* remote */
	n = emit_id_slot(p, n, OFF_CM_WORD0);   /* sidr_rep */
	/* req: compare the Service ID with each listener's, 5 insns each. */
	for (size_t i = 0; i < nl; i++) {
		p[n++] = insn(BPF_LD | BPF_W | BPF_ABS, 0, 0, OFF_SERVICE_ID);
		p[n++] = insn(BPF_JMP | BPF_JEQ | BPF_K, 0, 3, (uint32_t)(l[i].service_id >> 32));
		p[n++] = insn(BPF_LD | BPF_W | BPF_ABS, 0, 0, OFF_SERVICE_ID + 4u);
		p[n++] = insn(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, (uint32_t)l[i].service_id);
		p[n++] = insn(BPF_RET | BPF_K, 0, 0, l[i].slot);
	}
	p[n++] = insn(BPF_RET | BPF_K, 0, 0, 0);        /* nobody listens: slot 0 */
	return n;
}
