/*
 * test_rdmacm_errno.c — softrnic's librdmacm refuses what rdma-core's
 * librdmacm or the kernel's rdma_cm refuses, with the same errno (-1 and
 * errno set): unknown port spaces and address families, calls in the wrong
 * state, too much private data, bad options, multicast misuse.  One
 * process; the connection cases connect it to its own listener.
 * Results: docs/rdmacm.md ("Argument checks").
 * usage: test_rdmacm_errno <port>
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <rdma/rdma_cma.h>

#include "check.h"

/* The next event on `ch` within 5 s, of type `want` (NULL otherwise). */
static struct rdma_cm_event *wait_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, 5000) != 1 || rdma_get_cm_event(ch, &ev)) {
		FAIL("no event (want %s)", rdma_event_str(want));
		return NULL;
	}
	if (ev->event != want) {
		FAIL("event %s, want %s", rdma_event_str(ev->event), rdma_event_str(want));
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

static struct sockaddr_in sin_of(const char *ip, int port)
{
	struct sockaddr_in s = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	inet_pton(AF_INET, ip, &s.sin_addr);
	return s;
}

int main(int argc, char **argv)
{
	int port = argc > 1 ? atoi(argv[1]) : 18822;
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id, *l, *c, *ud;
	struct sockaddr_in lo = sin_of("127.0.0.1", port), any = sin_of("0.0.0.0", 0);
	struct sockaddr bad = { .sa_family = AF_UNIX };
	int one = 1;
	uint8_t u8 = 14, priv[256] = { 0 };

	if (!ch) {
		perror("rdma_create_event_channel");
		return 1;
	}
	/* rdma_create_id: the port space (udaddy -p 7473 gives 7473). */
	EXPECT_ERR(rdma_create_id(ch, &id, NULL, (enum rdma_port_space)7473), EINVAL);
	EXPECT_ERR(rdma_create_id(ch, &id, NULL, (enum rdma_port_space)0), EINVAL);
	struct rdma_addrinfo ai = { .ai_port_space = 7473, .ai_qp_type = IBV_QPT_RC, .ai_flags = RAI_PASSIVE,
				    .ai_src_addr = (struct sockaddr *)&any };
	EXPECT_ERR(rdma_create_ep(&id, &ai, NULL, NULL), EINVAL);

	/* rdma_bind_addr / rdma_listen / rdma_resolve_*. */
	EXPECT_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	EXPECT_ERR(rdma_resolve_route(id, 100), EINVAL);         /* idle */
	EXPECT_ERR(rdma_connect(id, NULL), EINVAL);              /* idle */
	EXPECT_ERR(rdma_accept(id, NULL), EINVAL);               /* no request */
	EXPECT_ERR(rdma_reject(id, NULL, 0), EINVAL);            /* no request */
	EXPECT_ERR(rdma_disconnect(id), EINVAL);                 /* no cm id */
	EXPECT_ERR(rdma_bind_addr(id, &bad), EINVAL);            /* AF_UNIX */
	EXPECT_ERR(rdma_resolve_addr(id, NULL, &bad, 100), EINVAL);
	EXPECT_ERR(rdma_set_option(id, 99, RDMA_OPTION_ID_TOS, &u8, 1), ENOSYS);
	EXPECT_ERR(rdma_set_option(id, RDMA_OPTION_ID, 99, &u8, 1), ENOSYS);
	EXPECT_ERR(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &one, sizeof(one)), EINVAL);
	EXPECT_ERR(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &one, sizeof(one)), EINVAL);
	EXPECT_ERR(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &u8, 1), EINVAL);
	EXPECT_ERR(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, NULL, 1), EFAULT);
	EXPECT_ERR(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, priv, 5), EINVAL);
	EXPECT_ERR(rdma_join_multicast(id, (struct sockaddr *)&any, NULL), EINVAL); /* RC id */
	EXPECT_OK(rdma_bind_addr(id, (struct sockaddr *)&any));
	EXPECT_ERR(rdma_bind_addr(id, (struct sockaddr *)&any), EINVAL);     /* bound */
	EXPECT_ERR(rdma_resolve_route(id, 100), EINVAL);                      /* bound */
	EXPECT_OK(rdma_listen(id, 1));
	EXPECT_ERR(rdma_listen(id, 1), EINVAL);                               /* listening */
	EXPECT_ERR(rdma_resolve_addr(id, NULL, (struct sockaddr *)&lo, 100), EINVAL);
	EXPECT_ERR(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)), EINVAL);
	EXPECT_ERR(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, sizeof(one)), EINVAL);
	EXPECT_ERR(rdma_get_request(id, &c), EINVAL);                         /* not synchronous */
	EXPECT_OK(rdma_destroy_id(id));

	/* A resolved id may not listen or resolve again. */
	EXPECT_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	EXPECT_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&lo, 100));
	struct rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (ev)
		rdma_ack_cm_event(ev);
	EXPECT_ERR(rdma_listen(id, 1), EINVAL);
	EXPECT_ERR(rdma_resolve_addr(id, NULL, (struct sockaddr *)&lo, 100), EINVAL);
	EXPECT_ERR(rdma_connect(id, NULL), EINVAL);              /* route not resolved */
	EXPECT_OK(rdma_destroy_id(id));

	/* A synchronous id cannot migrate to no channel. */
	EXPECT_OK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP));
	EXPECT_ERR(rdma_migrate_id(id, NULL), EINVAL);
	EXPECT_OK(rdma_destroy_id(id));

	/* Multicast on a UD id: idle is EINVAL, bound joins; leaving a group
	 * not joined is EADDRNOTAVAIL. */
	struct sockaddr_in grp = sin_of("239.1.2.9", 0), grp2 = sin_of("239.1.2.10", 0);
	EXPECT_OK(rdma_create_id(ch, &ud, NULL, RDMA_PS_UDP));
	EXPECT_ERR(rdma_join_multicast(ud, (struct sockaddr *)&grp, NULL), EINVAL);  /* idle */
	EXPECT_ERR(rdma_set_option(ud, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &u8, 1), EINVAL);
	EXPECT_OK(rdma_bind_addr(ud, (struct sockaddr *)&any));
	EXPECT_ERR(rdma_join_multicast(ud, &bad, NULL), EINVAL);
	EXPECT_ERR(rdma_leave_multicast(ud, (struct sockaddr *)&grp), EADDRNOTAVAIL);
	struct rdma_cm_join_mc_attr_ex mx = { .comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS |
							   RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
					      .join_flags = 7, .addr = (struct sockaddr *)&grp };
	EXPECT_ERR(rdma_join_multicast_ex(ud, &mx, NULL), EINVAL);
	EXPECT_OK(rdma_join_multicast(ud, (struct sockaddr *)&grp, NULL));
	ev = wait_event(ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	if (ev)
		rdma_ack_cm_event(ev);
	EXPECT_ERR(rdma_leave_multicast(ud, (struct sockaddr *)&grp2), EADDRNOTAVAIL);
	EXPECT_OK(rdma_leave_multicast(ud, (struct sockaddr *)&grp));
	EXPECT_ERR(rdma_leave_multicast(ud, (struct sockaddr *)&grp), EADDRNOTAVAIL);
	EXPECT_OK(rdma_destroy_id(ud));

	/* A connection to ourselves: private data limits and states. */
	EXPECT_OK(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP));
	EXPECT_OK(rdma_bind_addr(l, (struct sockaddr *)&lo));
	EXPECT_OK(rdma_listen(l, 4));
	EXPECT_OK(rdma_create_id(ch, &c, NULL, RDMA_PS_TCP));
	EXPECT_OK(rdma_resolve_addr(c, NULL, (struct sockaddr *)&lo, 100));
	if ((ev = wait_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED)))
		rdma_ack_cm_event(ev);
	EXPECT_OK(rdma_resolve_route(c, 100));
	if ((ev = wait_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED)))
		rdma_ack_cm_event(ev);
	EXPECT_ERR(rdma_connect(c, NULL), EINVAL);               /* TCP: no QP, no conn_param */
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
						.max_recv_sge = 1 } };
	EXPECT_OK(rdma_create_qp(c, NULL, &qa));
	EXPECT_ERR(rdma_create_qp(c, NULL, &qa), EINVAL);        /* has one */
	EXPECT_ERR(rdma_establish(c), EINVAL);                   /* has a QP */
	struct ibv_device_attr da;
	EXPECT_OK(ibv_query_device(c->verbs, &da));
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1, .retry_count = 7,
				      .rnr_retry_count = 7, .private_data = priv };
	cp.private_data_len = 57;                                /* REQ: 92 - 36 (the CMA header) */
	EXPECT_ERR(rdma_connect(c, &cp), EINVAL);
	cp.private_data_len = 0;
	if (da.max_qp_rd_atom < 0xFE) {
		cp.responder_resources = (uint8_t)(da.max_qp_rd_atom + 1);
		EXPECT_ERR(rdma_connect(c, &cp), EINVAL);
		cp.responder_resources = 1;
	}
	if (da.max_qp_init_rd_atom < 0xFE) {
		cp.initiator_depth = (uint8_t)(da.max_qp_init_rd_atom + 1);
		EXPECT_ERR(rdma_connect(c, &cp), EINVAL);
		cp.initiator_depth = 1;
	}
	cp.private_data_len = 56;
	EXPECT_OK(rdma_connect(c, &cp));
	EXPECT_ERR(rdma_connect(c, &cp), EINVAL);                /* connecting */
	if ((ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST))) {
		struct rdma_cm_id *s = ev->id;
		rdma_ack_cm_event(ev);
		struct rdma_conn_param ap = { .private_data = priv, .private_data_len = 197 };
		EXPECT_ERR(rdma_accept(s, &ap), EINVAL);         /* REP: 196 */
		EXPECT_ERR(rdma_reject(s, priv, 149), EINVAL);    /* REJ: 148 */
		EXPECT_OK(rdma_reject(s, priv, 148));
		if ((ev = wait_event(ch, RDMA_CM_EVENT_REJECTED)))
			rdma_ack_cm_event(ev);
		EXPECT_ERR(rdma_accept(s, NULL), EINVAL);        /* rejected */
		/* The kernel answers 0 once the id has a cm id, whatever its state. */
		EXPECT_OK(rdma_disconnect(c));
		EXPECT_OK(rdma_destroy_id(s));
	}
	rdma_destroy_qp(c);
	EXPECT_OK(rdma_destroy_id(c));
	EXPECT_OK(rdma_destroy_id(l));
	rdma_destroy_event_channel(ch);
	printf("%s: %d failure(s)\n", check_failures ? "FAIL" : "PASS", check_failures);
	return check_failures ? 1 : 0;
}
