/*
 * pull.c — message-path reads put off to the end of the port's batch.
 *
 * A message-path packet's payload is still in the sender's memory
 * (rnic_rx.remote), and the runtime reads it with one process_vm_readv
 * per packet: a system call whose fixed cost (about 2 us on the machines
 * measured, against 2.7 us for copying 64 KiB) halves the rate of a
 * stream of 64 KiB WRITEs.  A port that can join reads (rnic_io.
 * pull_batch) lets the responder execute an RDMA WRITE Only without
 * reading its payload: the read joins r->pull[], and at the end of the
 * port's batch (rnic_receive_end) all of them go to the port at once.
 *
 * A SEND Only without immediate data or invalidation is put off the same
 * way when its payload fits the first piece of the receive WQE it takes
 * from the QP's own receive queue (not an SRQ): its receive completion
 * waits with the read (rnic_pull_hold_completion).  A stream of 64 KiB
 * SENDs otherwise pays a system call per message.
 *
 * The completer puts off the read of a READ Response Only that answers
 * the oldest outstanding WQE whole and fits that WQE's first piece
 * (completer.c, read_put_off_mr): the WQE is retired at once and its
 * send completion held with the read.  A failed read puts it, and the
 * READs retired after it in the batch, back on the send queue and asks
 * again from its PSN (completer_pulls_settled), as after a lost
 * response; any other packet of that QP settles the reads first.
 *
 * The rules stay those of a read done at once (rnic.h: a read that fails
 * drops the packet as if it had been lost).  That holds because nothing
 * sees the WRITE's or SEND's effect before the read's outcome is known:
 *   - only a WRITE Only without immediate data is put off, so no
 *     completion, receive WQE or invalidation hangs on it; and a SEND
 *     whose completion is held, and whose receive WQE goes back to the
 *     head of the receive queue if its read fails (nothing else takes
 *     or posts a WQE before the settling: the batch runs under the
 *     runtime's lock, and any other packet of the QP settles first);
 *   - the responder holds the ACK that falls due meanwhile, and settles
 *     the reads before any NAK (responder.c, settle_before_nak);
 *   - any other packet, a timer, or a change of a QP settles them first
 *     (rnic.c, qp.c), so the QP's state is only ever seen whole;
 *   - a failed read rewinds its QP's expected PSN and MSN to that WRITE
 *     (responder_pulls_settled), and the WRITEs after it are dropped as
 *     out of sequence, as they would have been.
 * The data of a WRITE dropped that way may have landed in the region
 * already; its resend writes the same bytes again, as after a loss.
 *
 * A read that fails because our own buffer faulted (pages the program
 * unmapped or protected after registering them), not the sender's
 * memory, is a loss too; but from then on its QP's responder (or
 * completer) reads at once (read_at_once), so the resend meets the fault
 * where it is the access or protection error it is (rnic_rx_copy,
 * rnic_rx_scatter).  Nothing is probed before a read is put off: the
 * buffers of a stream cost nothing extra, an error costs one resend.
 */
#include "rnic/rnic_int.h"

/* Takes the next entry of r->pull[] for the read of the packet being
 * received (r->rx_remote) into dst, at `psn`: its index, or -1 if the
 * port reads at once.  Its caller (responder_receive, completer_receive)
 * settled a full batch before the packet ran: settling here, with this
 * QP's earlier reads in it, could rewind the PSN this packet is being
 * executed at. */
static int add_pull(struct rnic_qp *qp, uint32_t psn, uint8_t *dst, size_t len, bool read)
{
	struct rnic *r = qp->r;

	if (!r->io.pull_batch || !r->rx_remote || r->npulls == RNIC_PULL_BATCH)
		return -1;
	unsigned i = r->npulls++;
	r->pull[i] = (struct rnic_pull){ .rem = r->rx_remote, .dst = { dst, len } };
	r->pull_qp[i] = qp;
	r->pull_psn[i] = psn;
	r->pull_send[i] = false;
	r->pull_read[i] = read;
	r->pull_se[i] = false;
	r->pull_wc_held[i] = false;
	return (int)i;
}

bool rnic_pull_put_off(struct rnic_qp *qp, uint32_t psn, uint8_t *dst, size_t len)
{
	if (add_pull(qp, psn, dst, len, false) < 0)
		return false;
	qp->resp.pulls++;
	qp->r->ctr.rx_msg_pulls_put_off++;
	return true;
}

bool rnic_pull_put_off_read(struct rnic_qp *qp, const struct rnic_send_wqe *w, uint8_t *dst, size_t len,
			    uint64_t now)
{
	struct rnic *r = qp->r;
	int i = add_pull(qp, w->first_psn, dst, len, true);

	if (i < 0)
		return false;
	r->pull_wc_held[i] = rnic_qp_send_wc(qp, w, IBV_WC_SUCCESS, &r->pull_wc[i]);
	qp->comp.pulls++;
	qp->comp.pull_now = now;
	r->ctr.rx_msg_reads_put_off++;
	return true;
}

void rnic_pull_hold_completion(struct rnic_qp *qp, const struct ibv_wc *wc, bool solicited)
{
	struct rnic *r = qp->r;
	unsigned i = r->npulls - 1;

	/* The read put off last is this SEND's (resp_execute, then
	 * resp_complete, nothing settled between); were it not, the
	 * completion could only be written now. */
	if (!r->npulls || r->pull_qp[i] != qp) {
		rnic_cq_push(qp->recv_cq, wc, solicited);
		return;
	}
	r->pull_send[i] = true;
	r->pull_wc_held[i] = true;
	r->pull_se[i] = solicited;
	r->pull_wc[i] = *wc;
	r->ctr.rx_msg_sends_put_off++;
}

void rnic_pulls_settle(struct rnic *r)
{
	unsigned n = r->npulls;

	if (!n)
		return;
	r->ctr.rx_msg_pull_batches++;
	for (unsigned i = 0; i < n; i++)
		r->pull[i].ok = false;
	r->io.pull_batch(r->io.ctx, r->pull, n);
	/* Emptied before the QPs act on the outcome: what they send may
	 * not find reads still waiting. */
	r->npulls = 0;
	/* A QP's first failed read and every read after it are dropped,
	 * the responder's and the completer's each on their own.  A held
	 * completion is written, in the order received; a dropped SEND's
	 * receive WQE goes back to the head of its queue for the resend
	 * (the dropped ones of a QP are the last it took), a dropped READ
	 * to its send queue (completer_pulls_settled). */
	for (unsigned i = 0; i < n; i++) {
		struct rnic_qp *qp = r->pull_qp[i];
		bool *failed = r->pull_read[i] ? &qp->comp.pull_failed : &qp->resp.pull_failed;
		uint32_t *dropped = r->pull_read[i] ? &qp->comp.pull_dropped : &qp->resp.pull_dropped;

		if (*failed) {
			(*dropped)++;
		} else if (!r->pull[i].ok) {
			*failed = true;
			*dropped = 1;
			/* Whose memory failed: ours makes the QP read at once. */
			if (!rnic_mem_probe(r, r->pull[i].dst.iov_base, r->pull[i].dst.iov_len, true)) {
				if (r->pull_read[i])
					qp->comp.read_at_once = true;
				else
					qp->resp.read_at_once = true;
			}
			if (r->pull_read[i])
				qp->comp.pull_rewind_psn = r->pull_psn[i];
			else
				qp->resp.pull_rewind_psn = r->pull_psn[i];
			r->ctr.rx_drop_msg_pull++;
		} else {
			if (r->pull_wc_held[i])
				rnic_cq_push(r->pull_read[i] ? qp->send_cq : qp->recv_cq, &r->pull_wc[i],
					     r->pull_se[i]);
			continue;
		}
		if (r->pull_send[i])
			qp->rq.tail--;
	}
	for (unsigned i = 0; i < n; i++) {
		struct rnic_qp *qp = r->pull_qp[i];

		if (qp->resp.pulls)     /* each QP once */
			responder_pulls_settled(qp);
		if (qp->comp.pulls)
			completer_pulls_settled(qp);
	}
}

void rnic_receive_end(struct rnic *r)
{
	rnic_pulls_settle(r);
}
