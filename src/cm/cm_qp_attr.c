/*
 * cm_qp_attr.c — what a connection's REQ and REP make of each side's QP:
 * the attributes its RTR and RTS transitions take (the kernel's
 * ib_cm_init_qp_attr does this job in its ib_cm).
 *
 * Each REQ/REP field that ends up in a QP is what its *sender* wants the
 * *receiver* to use, or what the sender itself will do, and mixing the two
 * up goes unnoticed as long as both ends share the mistake.  The rules:
 *
 *   field (message)              the sender's own QP     the receiver's QP
 *   Local QPN (REQ, REP)         -                       dest_qp_num
 *   Starting PSN (REQ, REP)      rq_psn                  sq_psn
 *   Responder Resources          max_dest_rd_atomic      caps max_rd_atomic
 *   Initiator Depth              max_rd_atomic           max_dest_rd_atomic
 *   Retry Count (REQ)            retry_cnt (active)      retry_cnt
 *   RNR Retry Count (REQ, REP)   -                       rnr_retry
 *   Local ACK Timeout (REQ)      timeout                 timeout
 *   Path MTU, P_Key, primary path's traffic class, flow label, hop limit
 *                                (REQ)                   the same, both QPs
 *
 * Sources: IBTA Vol 1 12.6.5 (REQ), 12.6.8 (REP); the kernel's
 * cm_req_handler (the passive side's sq_psn, retry and RNR retry counts
 * from the REQ), ib_send_cm_rep (its rq_psn from its own REP) and
 * cm_rep_handler (the active side's sq_psn, depths and RNR retry count
 * from the REP); and the kernel's rxe on the wire
 * (tests/vectors/rxe/rc_rdmacm_connect.pcap, checked by
 * tests/cm/test_cm_capture.c).  The REP carries no Retry Count, so the
 * active side keeps its own.
 */
#include "cm/cm.h"

void cm_qp_attr_passive(const struct cm_req_info *req, const struct cm_rep_param *rep, struct cm_qp_attr *out)
{
	*out = (struct cm_qp_attr){
		.dest_qp_num = req->qpn,
		.rq_psn = rep->starting_psn,
		.sq_psn = req->starting_psn,
		.path_mtu = req->path_mtu,
		.max_dest_rd_atomic = rep->responder_resources,
		.max_rd_atomic = rep->initiator_depth < req->responder_resources ? rep->initiator_depth
										 : req->responder_resources,
		.timeout = req->local_ack_timeout,
		.retry_cnt = req->retry_count,
		.rnr_retry = req->rnr_retry_count,
		.pkey = req->pkey,
		.traffic_class = req->traffic_class,
		.flow_label = req->flow_label,
		.hop_limit = req->hop_limit,
	};
}

void cm_qp_attr_active(const struct cm_req_param *req, const struct cm_rep_info *rep, struct cm_qp_attr *out)
{
	*out = (struct cm_qp_attr){
		.dest_qp_num = rep->qpn,
		.rq_psn = req->starting_psn,
		.sq_psn = rep->starting_psn,
		.path_mtu = req->path_mtu,
		.max_dest_rd_atomic = rep->initiator_depth,
		.max_rd_atomic = req->initiator_depth < rep->responder_resources ? req->initiator_depth
										 : rep->responder_resources,
		.timeout = req->local_ack_timeout,
		.retry_cnt = req->retry_count,
		.rnr_retry = rep->rnr_retry_count,
		.pkey = req->pkey,
		.traffic_class = req->traffic_class,
		.flow_label = req->flow_label,
		.hop_limit = req->hop_limit,
	};
}
