/*
 * test_cm_events.c — the connection events and listen rules that programs
 * written against the kernel's rdma_cm rely on (tgt's iSER target,
 * libiscsi's initiator), between two processes:
 *
 *   dual_stack  0.0.0.0:P and [::]:P both listen when both set
 *               RDMA_OPTION_ID_AFONLY (the kernel's cma_check_port allows
 *               it); an IPv4 request reaches the IPv4 listener
 *   handover    the same with [::] listening first: destroying it leaves
 *               0.0.0.0 listening, and a request reaches it
 *   timewait    after DREQ/DREP both ends get DISCONNECTED, then
 *               TIMEWAIT_EXIT on the same id
 *   exit        a client that exits with its connection established sends
 *               a DREQ: the server gets DISCONNECTED at once
 *   dreq_timeout a DREQ nobody answers (the server is stopped): the client
 *               gets DISCONNECTED, then TIMEWAIT_EXIT
 *
 * usage: test_cm_events <port>   (uses ports port .. port+4; the clients
 * are this program run again: test_cm_events client <port> <mode>)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "check.h"

static const char *self;

/* The next event on ch within ms; its type in *type (-1 when none).  The
 * event is acked here; its id and listen_id are returned through out. */
static int next_event(struct rdma_event_channel *ch, int ms, struct rdma_cm_id **id, struct rdma_cm_id **listen,
		      int *status)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int type;

	if (poll(&p, 1, ms) != 1 || rdma_get_cm_event(ch, &ev))
		return -1;
	type = ev->event;
	if (id)
		*id = ev->id;
	if (listen)
		*listen = ev->listen_id;
	if (status)
		*status = ev->status;
	rdma_ack_cm_event(ev);
	return type;
}

/* Waits for want on ch, saying what came instead. */
static bool expect(struct rdma_event_channel *ch, int want, int ms, struct rdma_cm_id **id, struct rdma_cm_id **listen,
		   const char *what)
{
	int got = next_event(ch, ms, id, listen, NULL);

	if (got == want)
		return true;
	FAIL("%s: %s, want %s", what, got < 0 ? "no event" : rdma_event_str(got),
		rdma_event_str(want));
	return false;
}

static struct rdma_cm_id *listener(struct rdma_event_channel *ch, int family, int port, int *err)
{
	struct rdma_cm_id *id;
	struct sockaddr_storage ss = { 0 };
	int one = 1;

	*err = 0;
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return *err = errno, NULL;
	if (family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
	}
	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, sizeof(one)) ||
	    rdma_bind_addr(id, (struct sockaddr *)&ss) || rdma_listen(id, 8)) {
		*err = errno;
		rdma_destroy_id(id);
		return NULL;
	}
	return id;
}

static struct ibv_qp_init_attr qp_attr(void)
{
	return (struct ibv_qp_init_attr){ .qp_type = IBV_QPT_RC,
					  .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
						   .max_recv_sge = 1 } };
}

static pid_t start_client(int port, const char *mode)
{
	char p[16];
	pid_t pid = fork();

	if (pid == 0) {
		snprintf(p, sizeof(p), "%d", port);
		execl(self, self, "client", p, mode, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int client_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- the client ------------------------------------------------------------ */

static int client(int port, const char *mode)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct rdma_conn_param cp = { .retry_count = 7, .rnr_retry_count = 7 };
	struct ibv_qp_init_attr qa = qp_attr();

	if (!strcmp(mode, "dreq_timeout")) {
		/* A short DREQ timeout: 2^12 * 4.096 us = 17 ms, 2 retries. */
		setenv("SOFTRNIC_CM_RESPONSE_TIMEOUT", "12", 1);
		setenv("SOFTRNIC_CM_RETRIES", "2", 1);
	}
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000) ||
	    !expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 5000, NULL, NULL, "client addr") || rdma_resolve_route(id, 2000) ||
	    !expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 5000, NULL, NULL, "client route") ||
	    rdma_create_qp(id, NULL, &qa) || rdma_connect(id, &cp) ||
	    !expect(ch, RDMA_CM_EVENT_ESTABLISHED, 5000, NULL, NULL, "client established"))
		return 2;
	if (!strcmp(mode, "exit"))
		exit(0);        /* connected: leave without a word */
	if (!strcmp(mode, "dreq_timeout"))
		kill(getppid(), SIGSTOP);
	if (rdma_disconnect(id)) {
		FAIL("client: rdma_disconnect: %s", strerror(errno));
	}
	expect(ch, RDMA_CM_EVENT_DISCONNECTED, 5000, NULL, NULL, "client disconnected");
	expect(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT, 5000, NULL, NULL, "client timewait exit");
	if (!strcmp(mode, "dreq_timeout"))
		kill(getppid(), SIGCONT);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return check_failures ? 1 : 0;
}

/* ---- the server ------------------------------------------------------------ */

/* Takes the next connection request on ch (it must come for want_listen),
 * accepts it and returns the new id, established. */
static struct rdma_cm_id *accept_one(struct rdma_event_channel *ch, struct rdma_cm_id *want_listen, const char *what)
{
	struct rdma_cm_id *conn, *l;
	struct rdma_conn_param cp = { .retry_count = 7, .rnr_retry_count = 7 };
	struct ibv_qp_init_attr qa = qp_attr();

	if (!expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 10000, &conn, &l, what))
		return NULL;
	if (l != want_listen) {
		FAIL("%s: the request reached the wrong listener", what);
	}
	if (rdma_create_qp(conn, NULL, &qa) || rdma_accept(conn, &cp) ||
	    !expect(ch, RDMA_CM_EVENT_ESTABLISHED, 5000, NULL, NULL, what))
		return NULL;
	return conn;
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *l4, *l6, *conn, *evid;
	int port, err, st;
	pid_t c;

	self = argv[0];
	if (argc == 4 && !strcmp(argv[1], "client"))
		return client(atoi(argv[2]), argv[3]);
	if (argc != 2)
		return 2;
	port = atoi(argv[1]);
	ch = rdma_create_event_channel();
	CHECK(ch != NULL);
	if (!ch)
		return 1;

	/* dual_stack and timewait. */
	l4 = listener(ch, AF_INET, port, &err);
	CHECK(l4 != NULL);
	l6 = listener(ch, AF_INET6, port, &err);
	if (!l6)
		fprintf(stderr, "FAIL dual_stack: [::]:%d AFONLY beside 0.0.0.0:%d: %s\n", port, port, strerror(err));
	CHECK(l6 != NULL);
	c = start_client(port, "disconnect");
	conn = accept_one(ch, l4, "dual_stack: request");
	if (conn) {
		CHECK(expect(ch, RDMA_CM_EVENT_DISCONNECTED, 5000, &evid, NULL, "timewait: server disconnected"));
		CHECK(expect(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT, 5000, &evid, NULL, "timewait: server timewait exit") &&
		      evid == conn);
		rdma_destroy_qp(conn);
		rdma_destroy_id(conn);
	}
	st = client_status(c);
	if (st)
		fprintf(stderr, "FAIL dual_stack/timewait: client exit %d\n", st);
	CHECK(st == 0);
	if (l6)
		rdma_destroy_id(l6);
	if (l4)
		rdma_destroy_id(l4);
	printf("%s dual_stack, timewait\n", check_failures ? "FAIL" : "ok  ");

	/* handover: [::] first, then 0.0.0.0; [::] goes. */
	int before = check_failures;
	l6 = listener(ch, AF_INET6, port + 1, &err);
	l4 = listener(ch, AF_INET, port + 1, &err);
	CHECK(l6 && l4);
	if (l6)
		rdma_destroy_id(l6);
	c = start_client(port + 1, "disconnect");
	conn = accept_one(ch, l4, "handover: request");
	if (conn) {
		expect(ch, RDMA_CM_EVENT_DISCONNECTED, 5000, NULL, NULL, "handover: disconnected");
		expect(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT, 5000, NULL, NULL, "handover: timewait exit");
		rdma_destroy_qp(conn);
		rdma_destroy_id(conn);
	}
	CHECK(client_status(c) == 0);
	if (l4)
		rdma_destroy_id(l4);
	printf("%s handover\n", check_failures > before ? "FAIL" : "ok  ");

	/* exit: the client leaves connected; its DREQ tells us. */
	before = check_failures;
	l4 = listener(ch, AF_INET, port + 2, &err);
	CHECK(l4 != NULL);
	c = start_client(port + 2, "exit");
	conn = accept_one(ch, l4, "exit: request");
	CHECK(client_status(c) == 0);
	if (conn) {
		/* Within 2 s: the QP's own retries would take far longer. */
		CHECK(expect(ch, RDMA_CM_EVENT_DISCONNECTED, 2000, NULL, NULL, "exit: server disconnected"));
		rdma_destroy_qp(conn);
		rdma_destroy_id(conn);
	}
	if (l4)
		rdma_destroy_id(l4);
	printf("%s exit\n", check_failures > before ? "FAIL" : "ok  ");

	/* dreq_timeout: the client stops us, disconnects, and checks its own
	 * events; it lets us go on when done. */
	before = check_failures;
	l4 = listener(ch, AF_INET, port + 3, &err);
	CHECK(l4 != NULL);
	c = start_client(port + 3, "dreq_timeout");
	conn = accept_one(ch, l4, "dreq_timeout: request");
	st = client_status(c);
	if (st)
		fprintf(stderr, "FAIL dreq_timeout: client exit %d\n", st);
	CHECK(st == 0);
	if (conn) {
		rdma_destroy_qp(conn);
		rdma_destroy_id(conn);
	}
	if (l4)
		rdma_destroy_id(l4);
	printf("%s dreq_timeout\n", check_failures > before ? "FAIL" : "ok  ");

	rdma_destroy_event_channel(ch);
	return check_failures ? 1 : 0;
}
