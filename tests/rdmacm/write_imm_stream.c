/*
 * write_imm_stream.c — the traffic of Valkey's RDMA transport (its
 * src/rdma.c and tests/rdma/rdma-test.c, Valkey 8.0), between two
 * processes on this host, checked byte for byte.
 *
 * The process forks before either side touches librdmacm, so each has its
 * own softrnic device.  The child is the server: one thread, an event loop
 * over its listening channel and each connection's completion channel, as
 * valkey-server's.  The parent is the client: CONNS threads, each with its
 * own connection, as rdma-test -t 4.  What each side does, as Valkey does:
 *
 *   - the server binds 127.0.0.1 and, as Valkey's protected mode does
 *     (connRdmaIsLocal), takes a connection as local only when its peer's
 *     address is its own local address; it refuses any other.  On the
 *     kernel both ends of a connection to 127.0.0.1 name 127.0.0.1;
 *   - one RC QP per connection, send and receive queues of 1024, one CQ of
 *     2048 on a completion channel whose fd is O_NONBLOCK, armed once;
 *   - 1024 receives of a 32-byte command posted at once; each side
 *     advertises a receive buffer (address, length, rkey) by a signaled
 *     SEND (RegisterXferMemory), and again each time it has consumed the
 *     whole buffer;
 *   - data goes by RDMA WRITE WITH IMMEDIATE into the peer's buffer at the
 *     next offset, the immediate being the length; unsignaled but for one
 *     in every 1024 (client) or 512 (server);
 *   - the CQ is drained by Valkey's loop: a non-blocking ibv_get_cq_event,
 *     re-armed when it got one, then ibv_poll_cq one completion at a time
 *     with ibv_ack_cq_events(cq, 1) after each (more acks than events:
 *     Valkey 8.0 does so, and rdma-core's ibv_destroy_cq then waits for
 *     ever, as softrnic's does, so the CQs are left to the process's exit);
 *   - waits are poll() on the completion channel's fd.
 *
 * The server echoes every byte it reads; each client thread writes MSGS
 * messages of 1 B to 16 KiB (so both MTU packets and, on the host-local
 * path, whole messages) and reads each echo back before the next,
 * comparing every byte.  RX buffers are 64 KiB (Valkey's smallest), so the
 * buffers are advertised again every few dozen messages.
 *
 * usage: write_imm_stream <port> [connections (4)] [messages per connection (4000)]
 * Exits 0 when every connection was taken as local and every echo came
 * back whole within its deadline; run in the three transport modes
 * (SOFTRNIC_LOCAL unset, =packets, =0) by tests/rdmacm/CMakeLists.txt.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "../check.h"

#define MAX_WQE 1024
#define RX_LEN (64 * 1024)
#define MAX_MSG (16 * 1024)
#define MAX_CONNS 16
#define OP_DEADLINE_S 20.0      /* one write or read of the client */
#define SERVER_DEADLINE_S 120.0 /* the server's whole run */

/* Valkey's command union: 32 bytes, fields in network order. */
struct xfer_cmd {
	uint16_t opcode;
	uint8_t rsvd[14];
	uint64_t addr;
	uint32_t length;
	uint32_t key;
};
_Static_assert(sizeof(struct xfer_cmd) == 32, "Valkey's command is 32 bytes");

enum { OP_KEEPALIVE = 2, OP_REGISTER_XFER_MEMORY = 3, OP_INVALID = 0xffff };

/* Failures so far, from any thread (tests/check.h counts atomically). */
static int failed(void)
{
	return __atomic_load_n(&check_failures, __ATOMIC_RELAXED);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The byte at offset `off` of connection `conn`'s stream. */
static uint8_t stream_byte(unsigned conn, uint64_t off)
{
	return (uint8_t)(((off * 2654435761u) >> 11) ^ (off >> 5) ^ (conn * 37u + 11u));
}

/* One side of one connection: Valkey's RdmaContext. */
struct conn {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	struct xfer_cmd *cmds;          /* [0, MAX_WQE) receives, [MAX_WQE, 2*MAX_WQE) sends */
	struct ibv_mr *cmd_mr;
	/* What we receive: the peer writes into rx. */
	uint8_t *rx;
	struct ibv_mr *rx_mr;
	uint32_t rx_offset;             /* bytes the peer has written (sum of immediates) */
	uint32_t rx_pos;                /* bytes we have consumed */
	/* What we send: a copy in tx, written to the peer's advertised buffer. */
	uint8_t *tx;
	struct ibv_mr *tx_mr;
	uint32_t tx_cap;                /* size of tx (the peer's buffer length) */
	uint64_t peer_addr;
	uint32_t peer_key;
	uint32_t peer_len;              /* 0 until the peer advertised its buffer */
	uint32_t tx_offset;
	uint32_t tx_ops;
	unsigned signal_every;
	bool established, closed;
	/* Server: bytes read and not yet echoed. */
	uint8_t *pending;
	size_t pending_len, pending_cap;
	uint64_t echoed;
};

static int post_cmd_recv(struct conn *c, struct xfer_cmd *cmd)
{
	struct ibv_sge sge = { .addr = (uintptr_t)cmd, .length = sizeof(*cmd), .lkey = c->cmd_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uintptr_t)cmd, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(c->id->qp, &wr, &bad);
}

/* Valkey's rdmaCreateResource and rdmaSetupIoBuf. */
static int create_resources(struct conn *c, struct rdma_cm_id *id, unsigned signal_every)
{
	struct ibv_qp_init_attr qa = { 0 };

	c->id = id;
	c->signal_every = signal_every;
	c->pd = ibv_alloc_pd(id->verbs);
	c->channel = c->pd ? ibv_create_comp_channel(id->verbs) : NULL;
	if (!c->channel)
		return -1;
	if (fcntl(c->channel->fd, F_SETFL, fcntl(c->channel->fd, F_GETFL) | O_NONBLOCK))
		return -1;
	c->cq = ibv_create_cq(id->verbs, MAX_WQE * 2, c, c->channel, 0);
	if (!c->cq || ibv_req_notify_cq(c->cq, 0))
		return -1;
	qa.cap.max_send_wr = MAX_WQE;
	qa.cap.max_recv_wr = MAX_WQE;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	if (rdma_create_qp(id, c->pd, &qa))
		return -1;
	c->cmds = aligned_alloc(4096, sizeof(struct xfer_cmd) * MAX_WQE * 2);
	if (!c->cmds)
		return -1;
	memset(c->cmds, 0, sizeof(struct xfer_cmd) * MAX_WQE * 2);
	c->cmd_mr = ibv_reg_mr(c->pd, c->cmds, sizeof(struct xfer_cmd) * MAX_WQE * 2, IBV_ACCESS_LOCAL_WRITE);
	if (!c->cmd_mr)
		return -1;
	for (int i = 0; i < MAX_WQE; i++)
		if (post_cmd_recv(c, &c->cmds[i]))
			return -1;
	for (int i = MAX_WQE; i < 2 * MAX_WQE; i++)
		c->cmds[i].opcode = OP_INVALID;
	c->rx = aligned_alloc(4096, RX_LEN);
	if (!c->rx)
		return -1;
	memset(c->rx, 0, RX_LEN);
	c->rx_mr = ibv_reg_mr(c->pd, c->rx, RX_LEN,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	return c->rx_mr ? 0 : -1;
}

/* The CQs, their channels and PDs left to the process's exit (acked more
 * than reported, a CQ cannot be destroyed), kept reachable here. */
static struct {
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
} left_to_exit[MAX_CONNS * 2];
static atomic_uint left_count;

/* Everything but the CQ, its channel and the PD (destroying the QP
 * flushes nothing that is looked at any more). */
static void release_resources(struct conn *c)
{
	unsigned k = atomic_fetch_add(&left_count, 1);

	if (k < MAX_CONNS * 2) {
		left_to_exit[k].pd = c->pd;
		left_to_exit[k].channel = c->channel;
		left_to_exit[k].cq = c->cq;
	}
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->tx_mr)
		ibv_dereg_mr(c->tx_mr);
	if (c->rx_mr)
		ibv_dereg_mr(c->rx_mr);
	if (c->cmd_mr)
		ibv_dereg_mr(c->cmd_mr);
	free(c->tx);
	free(c->rx);
	free(c->cmds);
	free(c->pending);
	c->tx = c->rx = c->pending = NULL;
	c->cmds = NULL;
	c->tx_mr = c->rx_mr = c->cmd_mr = NULL;
}

/* Valkey's rdmaSendCommand: a free slot of the send half, a signaled SEND. */
static int send_cmd(struct conn *c, const struct xfer_cmd *cmd)
{
	struct xfer_cmd *slot = NULL;

	for (int i = MAX_WQE; i < 2 * MAX_WQE; i++)
		if (c->cmds[i].opcode == OP_INVALID) {
			slot = &c->cmds[i];
			break;
		}
	if (!slot) {
		FAIL("no free command slot");
		return -1;
	}
	*slot = *cmd;
	struct ibv_sge sge = { .addr = (uintptr_t)slot, .length = sizeof(*slot), .lkey = c->cmd_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = (uintptr_t)slot, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	int e = ibv_post_send(c->id->qp, &wr, &bad);
	if (e)
		FAIL("post SEND: %s", strerror(e));
	return e ? -1 : 0;
}

/* Valkey's connRdmaRegisterRx: our buffer, from its start again. */
static int register_rx(struct conn *c)
{
	struct xfer_cmd cmd = { .opcode = htons(OP_REGISTER_XFER_MEMORY),
				.addr = htobe64((uintptr_t)c->rx),
				.length = htonl(RX_LEN),
				.key = htonl(c->rx_mr->rkey) };

	c->rx_offset = 0;
	c->rx_pos = 0;
	return send_cmd(c, &cmd);
}

/* A command received: the peer's buffer (re)advertised, or a keepalive. */
static int handle_recv(struct conn *c, struct xfer_cmd *cmd, uint32_t byte_len)
{
	if (byte_len != sizeof(*cmd)) {
		FAIL("command of %u bytes", byte_len);
		return -1;
	}
	switch (ntohs(cmd->opcode)) {
	case OP_REGISTER_XFER_MEMORY: {
		uint32_t len = ntohl(cmd->length);

		c->peer_addr = be64toh(cmd->addr);
		c->peer_key = ntohl(cmd->key);
		c->tx_offset = 0;
		if (len != c->tx_cap) {  /* rdmaAdjustSendbuf */
			if (c->tx_mr)
				ibv_dereg_mr(c->tx_mr);
			free(c->tx);
			c->tx = aligned_alloc(4096, len);
			c->tx_mr = c->tx ? ibv_reg_mr(c->pd, c->tx, len, IBV_ACCESS_LOCAL_WRITE) : NULL;
			if (!c->tx_mr) {
				FAIL("send buffer of %u bytes", len);
				return -1;
			}
			c->tx_cap = len;
		}
		c->peer_len = len;
		break;
	}
	case OP_KEEPALIVE:
		break;
	default:
		FAIL("unknown command %u", ntohs(cmd->opcode));
		return -1;
	}
	return post_cmd_recv(c, cmd);
}

/* Valkey's connRdmaHandleCq, the same calls in the same order. */
static int handle_cq(struct conn *c)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	struct ibv_wc wc;

	if (ibv_get_cq_event(c->channel, &ev_cq, &ev_ctx) < 0) {
		if (errno != EAGAIN) {
			FAIL("ibv_get_cq_event: %s", strerror(errno));
			return -1;
		}
	} else if (ibv_req_notify_cq(ev_cq, 0)) {
		FAIL("ibv_req_notify_cq");
		return -1;
	}
	for (;;) {
		int n = ibv_poll_cq(c->cq, 1, &wc);

		if (n < 0) {
			FAIL("ibv_poll_cq: %d", n);
			return -1;
		}
		if (n == 0)
			return 0;
		ibv_ack_cq_events(c->cq, 1);
		if (wc.status != IBV_WC_SUCCESS) {
			if (!c->closed)
				FAIL("completion %s (opcode 0x%x)", ibv_wc_status_str(wc.status), wc.opcode);
			return -1;
		}
		switch (wc.opcode) {
		case IBV_WC_RECV:
			if (handle_recv(c, (struct xfer_cmd *)(uintptr_t)wc.wr_id, wc.byte_len))
				return -1;
			break;
		case IBV_WC_RECV_RDMA_WITH_IMM: {
			uint32_t len = ntohl(wc.imm_data);

			if ((uint64_t)c->rx_offset + len > RX_LEN) {
				FAIL("immediate %u past the buffer (offset %u)", len, c->rx_offset);
				return -1;
			}
			c->rx_offset += len;
			if (post_cmd_recv(c, (struct xfer_cmd *)(uintptr_t)wc.wr_id))
				return -1;
			break;
		}
		case IBV_WC_RDMA_WRITE:
			break;
		case IBV_WC_SEND: {
			struct xfer_cmd *slot = (struct xfer_cmd *)(uintptr_t)wc.wr_id;

			memset(slot, 0, sizeof(*slot));
			slot->opcode = OP_INVALID;
			break;
		}
		default:
			FAIL("unexpected completion opcode 0x%x", wc.opcode);
			return -1;
		}
	}
}

/* Valkey's connRdmaSend: copy into tx at the offset, WRITE WITH IMMEDIATE
 * to the same offset of the peer's buffer; `len` fits. */
static int write_imm(struct conn *c, const uint8_t *data, uint32_t len)
{
	uint32_t off = c->tx_offset;

	memcpy(c->tx + off, data, len);
	struct ibv_sge sge = { .addr = (uintptr_t)(c->tx + off), .length = len, .lkey = c->tx_mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .send_flags = (++c->tx_ops % c->signal_every) ? 0 : IBV_SEND_SIGNALED,
				  .imm_data = htonl(len) }, *bad;
	wr.wr.rdma.remote_addr = c->peer_addr + off;
	wr.wr.rdma.rkey = c->peer_key;
	int e = ibv_post_send(c->id->qp, &wr, &bad);
	if (e) {
		FAIL("post WRITE WITH IMMEDIATE: %s", strerror(e));
		return -1;
	}
	c->tx_offset += len;
	return 0;
}

static uint32_t tx_room(const struct conn *c)
{
	return c->peer_len ? c->peer_len - c->tx_offset : 0;
}

/* ---- the client: one thread per connection, as rdma-test -t N ---------- */

struct client_arg {
	unsigned index;
	int port;
	unsigned msgs;
	uint64_t checked;
};

static int wait_cm(struct rdma_event_channel *ch, enum rdma_cm_event_type want, struct rdma_cm_id **id)
{
	double end = now_s() + OP_DEADLINE_S;
	struct rdma_cm_event *ev;

	while (now_s() < end) {
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };

		if (poll(&p, 1, 100) < 0 && errno != EINTR)
			break;
		if (rdma_get_cm_event(ch, &ev)) {
			if (errno == EAGAIN)
				continue;
			break;
		}
		enum rdma_cm_event_type got = ev->event;
		int status = ev->status;
		if (id)
			*id = ev->id;
		rdma_ack_cm_event(ev);
		if (got == want)
			return 0;
		FAIL("cm event %s (status %d), want %s", rdma_event_str(got), status, rdma_event_str(want));
		return -1;
	}
	FAIL("no cm event %s within %.0f s", rdma_event_str(want), OP_DEADLINE_S);
	return -1;
}

/* Wait on the completion channel (Valkey polls its fd), then drain. */
static int client_wait(struct conn *c, double end, const char *what)
{
	struct pollfd p = { .fd = c->channel->fd, .events = POLLIN };

	if (now_s() > end) {
		FAIL("%s: nothing within %.0f s", what, OP_DEADLINE_S);
		return -1;
	}
	if (poll(&p, 1, 100) < 0 && errno != EINTR)
		return -1;
	return handle_cq(c);
}

/* valkeyRdmaWrite: all of it, waiting for the peer's buffer when full. */
static int client_write(struct conn *c, const uint8_t *data, uint32_t len)
{
	double end = now_s() + OP_DEADLINE_S;

	if (handle_cq(c))
		return -1;
	while (len) {
		uint32_t n = tx_room(c) < len ? tx_room(c) : len;

		if (!n) {
			if (client_wait(c, end, "write"))
				return -1;
			continue;
		}
		if (write_imm(c, data, n))
			return -1;
		data += n;
		len -= n;
	}
	return 0;
}

/* valkeyRdmaReadFull: `len` bytes, advertising our buffer again once read. */
static int client_read(struct conn *c, uint8_t *out, uint32_t len)
{
	double end = now_s() + OP_DEADLINE_S;

	while (len) {
		if (c->rx_pos < c->rx_offset) {
			uint32_t n = c->rx_offset - c->rx_pos;

			if (n > len)
				n = len;
			memcpy(out, c->rx + c->rx_pos, n);
			c->rx_pos += n;
			out += n;
			len -= n;
			if (c->rx_pos == RX_LEN && register_rx(c))
				return -1;
			continue;
		}
		if (client_wait(c, end, "read"))
			return -1;
	}
	return 0;
}

static void *client_thread(void *p)
{
	struct client_arg *a = p;
	struct conn c = { 0 };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = NULL;
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons((uint16_t)a->port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7, .rnr_retry_count = 7 };
	static uint8_t out[MAX_CONNS][MAX_MSG], in[MAX_CONNS][MAX_MSG];
	uint8_t *o = out[a->index], *i = in[a->index];
	uint64_t off = 0, rng = 0x9e3779b97f4a7c15ull * (a->index + 1);

	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK)) {
		FAIL("client %u: cm id", a->index);
		return NULL;
	}
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 100) ||
	    wait_cm(ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL) || rdma_resolve_route(id, 100) ||
	    wait_cm(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL)) {
		FAIL("client %u: resolve", a->index);
		goto out;
	}
	if (create_resources(&c, id, MAX_WQE)) {
		FAIL("client %u: resources", a->index);
		goto out;
	}
	if (rdma_connect(id, &cp) || wait_cm(ch, RDMA_CM_EVENT_ESTABLISHED, NULL)) {
		FAIL("client %u: connect", a->index);
		goto out;
	}
	if (register_rx(&c))
		goto out;
	for (unsigned m = 0; m < a->msgs && !failed(); m++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t len = (uint32_t)(rng >> 33);
		/* Mostly Valkey-sized (a SET of 1 KiB is about 1.1 KiB),
		 * some up to 16 KiB. */
		len = (m % 8 == 7) ? 1 + len % MAX_MSG : 1 + len % 1200;
		for (uint32_t k = 0; k < len; k++)
			o[k] = stream_byte(a->index, off + k);
		if (client_write(&c, o, len) || client_read(&c, i, len)) {
			FAIL("client %u: message %u of %u bytes", a->index, m, len);
			break;
		}
		if (memcmp(o, i, len)) {
			uint32_t k = 0;

			while (o[k] == i[k])
				k++;
			FAIL("client %u: message %u: byte %u (stream offset %llu) is 0x%02x, sent 0x%02x",
			     a->index, m, k, (unsigned long long)(off + k), i[k], o[k]);
			break;
		}
		off += len;
	}
	a->checked = off;
	rdma_disconnect(id);
	(void)wait_cm(ch, RDMA_CM_EVENT_DISCONNECTED, NULL);
out:
	c.closed = true;
	release_resources(&c);
	if (id)
		rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return NULL;
}

/* ---- the server: one thread, Valkey's event loop ---------------------- */

static int server_flush(struct conn *c)
{
	while (c->pending_len && tx_room(c)) {
		uint32_t n = tx_room(c);

		if (n > c->pending_len)
			n = (uint32_t)c->pending_len;
		if (write_imm(c, c->pending, n))
			return -1;
		memmove(c->pending, c->pending + n, c->pending_len - n);
		c->pending_len -= n;
		c->echoed += n;
	}
	return 0;
}

/* connRdmaEventHandler: drain the CQ, read all there is, advertise the
 * buffer again when it is all read, write what waits. */
static int server_event(struct conn *c)
{
	if (handle_cq(c))
		return -1;
	uint32_t n = c->rx_offset - c->rx_pos;
	if (n) {
		if (c->pending_len + n > c->pending_cap) {
			size_t cap = (c->pending_len + n) * 2;
			uint8_t *p = realloc(c->pending, cap);

			if (!p)
				return -1;
			c->pending = p;
			c->pending_cap = cap;
		}
		memcpy(c->pending + c->pending_len, c->rx + c->rx_pos, n);
		c->pending_len += n;
		c->rx_pos += n;
	}
	if (c->rx_pos == RX_LEN && register_rx(c))
		return -1;
	return server_flush(c);
}

static bool same_host_address(struct rdma_cm_id *id)
{
	struct sockaddr *l = rdma_get_local_addr(id), *r = rdma_get_peer_addr(id);
	char ls[64] = "?", rs[64] = "?";

	if (l->sa_family == AF_INET && r->sa_family == AF_INET &&
	    ((struct sockaddr_in *)l)->sin_addr.s_addr == ((struct sockaddr_in *)r)->sin_addr.s_addr)
		return true;
	if (l->sa_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)l)->sin_addr, ls, sizeof(ls));
	if (r->sa_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)r)->sin_addr, rs, sizeof(rs));
	FAIL("server: connection from %s to %s: a client on this host connecting to 127.0.0.1 "
	     "should name the server's address (Valkey's protected mode refuses it otherwise)", rs, ls);
	return false;
}

static int run_server(int port, unsigned conns, int ready_fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *listen_id = NULL;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static struct conn cs[MAX_CONNS];
	unsigned accepted = 0, closed = 0;
	double end = now_s() + SERVER_DEADLINE_S;
	uint64_t echoed = 0;

	if (!ch || fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) ||
	    rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP) || rdma_bind_addr(listen_id, (struct sockaddr *)&sin) ||
	    rdma_listen(listen_id, 128)) {
		FAIL("server: listen on 127.0.0.1:%d: %s", port, strerror(errno));
		return 1;
	}
	if (write(ready_fd, "r", 1) != 1)
		return 1;
	close(ready_fd);
	while (closed < conns && !failed()) {
		struct pollfd p[MAX_CONNS + 1];
		unsigned np = 0, idx[MAX_CONNS + 1];
		struct rdma_cm_event *ev;

		if (now_s() > end) {
			FAIL("server: %u of %u connections closed after %.0f s", closed, conns, SERVER_DEADLINE_S);
			break;
		}
		p[np].fd = ch->fd;
		p[np].events = POLLIN;
		idx[np++] = MAX_CONNS;
		for (unsigned k = 0; k < accepted; k++)
			if (cs[k].established && !cs[k].closed) {
				p[np].fd = cs[k].channel->fd;
				p[np].events = POLLIN;
				idx[np++] = k;
			}
		if (poll(p, np, 100) < 0 && errno != EINTR)
			break;
		while (!rdma_get_cm_event(ch, &ev)) {
			struct rdma_cm_id *id = ev->id;
			struct conn *c = id->context;
			enum rdma_cm_event_type type = ev->event;

			rdma_ack_cm_event(ev);
			if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
				struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
							      .retry_count = 5 };

				if (accepted == conns || !same_host_address(id)) {
					rdma_reject(id, NULL, 0);
					rdma_destroy_id(id);
					continue;
				}
				c = &cs[accepted++];
				id->context = c;
				if (create_resources(c, id, MAX_WQE / 2) || rdma_accept(id, &cp))
					FAIL("server: accept: %s", strerror(errno));
			} else if (type == RDMA_CM_EVENT_ESTABLISHED && c) {
				c->established = true;
				if (register_rx(c))
					break;
			} else if (type == RDMA_CM_EVENT_DISCONNECTED && c && !c->closed) {
				c->closed = true;
				closed++;
				echoed += c->echoed;
				if (c->pending_len)
					FAIL("server: %zu bytes not echoed at disconnect", c->pending_len);
			} else if (type == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
				/* After a disconnect, as the kernel reports it;
				 * Valkey logs it and goes on. */
			} else if (type != RDMA_CM_EVENT_DISCONNECTED) {
				FAIL("server: cm event %s", rdma_event_str(type));
			}
		}
		for (unsigned k = 1; k < np; k++) {
			struct conn *c = &cs[idx[k]];

			/* RDMA has no POLLOUT: every round also writes what waits. */
			if (!c->closed && server_event(c))
				FAIL("server: connection %u", idx[k]);
		}
	}
	printf("server: %u connections, %llu bytes echoed\n", accepted, (unsigned long long)echoed);
	for (unsigned k = 0; k < accepted; k++) {
		cs[k].closed = true;
		release_resources(&cs[k]);
		rdma_destroy_id(cs[k].id);
	}
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ch);
	return failed() ? 1 : 0;
}

int main(int argc, char **argv)
{
	int port = argc > 1 ? atoi(argv[1]) : 0;
	unsigned conns = argc > 2 ? (unsigned)atoi(argv[2]) : 4;
	unsigned msgs = argc > 3 ? (unsigned)atoi(argv[3]) : 4000;
	int ready[2], status = 0;
	char r;

	if (port <= 0 || port > 65535 || conns < 1 || conns > MAX_CONNS) {
		fprintf(stderr, "usage: %s <port> [connections (1..%d)] [messages]\n", argv[0], MAX_CONNS);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pipe(ready))
		return 1;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(ready[0]);
		_exit(run_server(port, conns, ready[1]));
	}
	close(ready[1]);
	if (read(ready[0], &r, 1) != 1) {
		fprintf(stderr, "FAIL server did not start\n");
		waitpid(pid, NULL, 0);
		return 1;
	}
	close(ready[0]);

	double t0 = now_s();
	pthread_t th[MAX_CONNS];
	struct client_arg args[MAX_CONNS];
	for (unsigned k = 0; k < conns; k++) {
		args[k] = (struct client_arg){ .index = k, .port = port, .msgs = msgs };
		if (pthread_create(&th[k], NULL, client_thread, &args[k]))
			return 1;
	}
	uint64_t total = 0;
	for (unsigned k = 0; k < conns; k++) {
		pthread_join(th[k], NULL);
		total += args[k].checked;
		printf("client %u: %llu bytes echoed and checked\n", k, (unsigned long long)args[k].checked);
	}
	if (!failed() && total == 0)
		FAIL("no byte went through");
	double t1 = now_s();
	/* The server exits once every connection is closed; it fails on its own. */
	for (int waited = 0; waitpid(pid, &status, WNOHANG) == 0; waited++) {
		if (waited == 300) {   /* 30 s */
			fprintf(stderr, "FAIL server did not exit\n");
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			status = 1 << 8;
			break;
		}
		usleep(100000);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		FAIL("server exited with status 0x%x", status);
	printf("%u connections x %u messages, %llu bytes each way in %.2f s: %s\n", conns, msgs,
	       (unsigned long long)total, t1 - t0, failed() ? "FAIL" : "ok");
	return failed() ? 1 : 0;
}
