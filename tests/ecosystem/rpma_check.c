/*
 * rpma_check.c — a small librpma (Debian's librpma 1.2) program for
 * tests/ecosystem/rpma.sh: a server that registers a buffer and passes its
 * descriptor in the connection's private data, and a client that connects
 * and, round after round, writes a pattern into the server's buffer
 * (rpma_write), flushes it to global visibility (rpma_flush), reads it
 * back (rpma_read) into a zeroed buffer and compares every byte; the last
 * round covers the whole buffer, and after the client disconnects the
 * server compares its own memory with that round's pattern.
 *
 * Which flush: librpma flushes with the verb IBV_WR_FLUSH where it was
 * built for it and the device offers it, otherwise by its read-after-write
 * emulation (an 8-byte RDMA READ after the writes, which the responder
 * executes only once the writes before it are placed).  Debian's 1.2 build
 * has only the emulation (no native flush code in librpma.so.0), so this
 * program exercises the read-after-write path; it reports the opcode of
 * the flush's completion (IBV_WC_RDMA_READ for the emulation), and rpma.sh
 * checks the 8-byte READ in softrnic's capture.
 *
 *   rpma_check server ADDR PORT
 *   rpma_check client ADDR PORT [ROUNDS]
 * Exits 0 and prints "rpma_check: ok" when every byte matched.
 */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime */
#include <librpma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUF_SIZE (1u << 20)

/* What the server sends in the connection's private data. */
struct server_info {
	uint8_t desc_size;
	uint8_t desc[200];
} __attribute__((packed));

static void die(const char *what, int ret)
{
	fprintf(stderr, "rpma_check: %s: %s\n", what, rpma_err_2str(ret));
	exit(1);
}

static void check(int ret, const char *what)
{
	if (ret)
		die(what, ret);
}

static unsigned char pattern(unsigned round, size_t i)
{
	return (unsigned char)(round * 131u + i * 7u + (i >> 9));
}

static void *alloc_buf(void)
{
	void *p = aligned_alloc(4096, BUF_SIZE);

	if (!p) {
		fprintf(stderr, "rpma_check: out of memory\n");
		exit(1);
	}
	memset(p, 0, BUF_SIZE);
	return p;
}

static struct rpma_peer *open_peer(const char *addr, enum rpma_util_ibv_context_type type)
{
	struct ibv_context *ctx;
	struct rpma_peer *peer;

	check(rpma_utils_get_ibv_context(addr, type, &ctx), "rpma_utils_get_ibv_context");
	check(rpma_peer_new(ctx, &peer), "rpma_peer_new");
	return peer;
}

static enum rpma_conn_event next_event(struct rpma_conn *conn)
{
	enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;

	check(rpma_conn_next_event(conn, &ev), "rpma_conn_next_event");
	return ev;
}

static int server(const char *addr, const char *port)
{
	struct rpma_peer *peer = open_peer(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL);
	unsigned char *buf = alloc_buf();
	struct rpma_mr_local *mr;
	struct rpma_ep *ep;
	struct rpma_conn_req *req;
	struct rpma_conn *conn;
	struct server_info info;
	size_t desc_size;
	enum rpma_conn_event ev;

	check(rpma_mr_reg(peer, buf, BUF_SIZE,
			  RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC | RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY, &mr),
	      "rpma_mr_reg");
	check(rpma_mr_get_descriptor_size(mr, &desc_size), "rpma_mr_get_descriptor_size");
	if (desc_size > sizeof(info.desc)) {
		fprintf(stderr, "rpma_check: descriptor of %zu bytes\n", desc_size);
		return 1;
	}
	info.desc_size = (uint8_t)desc_size;
	check(rpma_mr_get_descriptor(mr, info.desc), "rpma_mr_get_descriptor");

	check(rpma_ep_listen(peer, addr, port, &ep), "rpma_ep_listen");
	printf("rpma_check: server listening on %s:%s\n", addr, port);
	fflush(stdout);
	check(rpma_ep_next_conn_req(ep, NULL, &req), "rpma_ep_next_conn_req");
	struct rpma_conn_private_data pdata = { .ptr = &info, .len = (uint8_t)(1 + desc_size) };
	check(rpma_conn_req_connect(&req, &pdata, &conn), "rpma_conn_req_connect");
	if ((ev = next_event(conn)) != RPMA_CONN_ESTABLISHED) {
		fprintf(stderr, "rpma_check: server: %s, not established\n", rpma_utils_conn_event_2str(ev));
		return 1;
	}
	/* The client writes, flushes and reads; it disconnects when done. */
	if ((ev = next_event(conn)) != RPMA_CONN_CLOSED) {
		fprintf(stderr, "rpma_check: server: %s, not closed\n", rpma_utils_conn_event_2str(ev));
		return 1;
	}
	check(rpma_conn_disconnect(conn), "rpma_conn_disconnect");
	check(rpma_conn_delete(&conn), "rpma_conn_delete");

	/* The client's last round wrote the whole buffer with pattern 0. */
	for (size_t i = 0; i < BUF_SIZE; i++)
		if (buf[i] != pattern(0, i)) {
			fprintf(stderr, "rpma_check: server: byte %zu is %u, the client wrote %u\n", i, buf[i],
				pattern(0, i));
			return 1;
		}
	printf("rpma_check: server: all %u bytes of the buffer hold the client's last write\n", BUF_SIZE);
	check(rpma_ep_shutdown(&ep), "rpma_ep_shutdown");
	check(rpma_mr_dereg(&mr), "rpma_mr_dereg");
	check(rpma_peer_delete(&peer), "rpma_peer_delete");
	free(buf);
	printf("rpma_check: ok\n");
	return 0;
}

/* Waits for the one completion the client asked for; its opcode. */
static enum ibv_wc_opcode wait_one(struct rpma_cq *cq, const char *what, const void *ctx)
{
	struct ibv_wc wc;
	int ret;

	for (;;) {
		ret = rpma_cq_get_wc(cq, 1, &wc, NULL);
		if (ret != RPMA_E_NO_COMPLETION)
			break;
		check(rpma_cq_wait(cq), "rpma_cq_wait");
	}
	check(ret, "rpma_cq_get_wc");
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "rpma_check: %s completed with %s\n", what, ibv_wc_status_str(wc.status));
		exit(1);
	}
	if (wc.wr_id != (uint64_t)(uintptr_t)ctx) {
		fprintf(stderr, "rpma_check: %s: completion of another request\n", what);
		exit(1);
	}
	return wc.opcode;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int client(const char *addr, const char *port, unsigned rounds)
{
	struct rpma_peer *peer = open_peer(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE);
	unsigned char *src = alloc_buf(), *dst = alloc_buf();
	struct rpma_mr_local *src_mr, *dst_mr;
	struct rpma_mr_remote *remote;
	struct rpma_conn_req *req;
	struct rpma_conn *conn;
	struct rpma_conn_private_data pdata;
	struct rpma_cq *cq;
	size_t remote_size;
	int flush_type;
	enum rpma_conn_event ev;
	static const char write_ctx, flush_ctx, read_ctx;
	enum ibv_wc_opcode flush_opcode = IBV_WC_SEND;
	double flush_us = 0;
	unsigned long long bytes = 0;

	check(rpma_mr_reg(peer, src, BUF_SIZE, RPMA_MR_USAGE_WRITE_SRC, &src_mr), "rpma_mr_reg src");
	check(rpma_mr_reg(peer, dst, BUF_SIZE, RPMA_MR_USAGE_READ_DST, &dst_mr), "rpma_mr_reg dst");
	check(rpma_conn_req_new(peer, addr, port, NULL, &req), "rpma_conn_req_new");
	check(rpma_conn_req_connect(&req, NULL, &conn), "rpma_conn_req_connect");
	if ((ev = next_event(conn)) != RPMA_CONN_ESTABLISHED) {
		fprintf(stderr, "rpma_check: client: %s, not established\n", rpma_utils_conn_event_2str(ev));
		return 1;
	}
	check(rpma_conn_get_private_data(conn, &pdata), "rpma_conn_get_private_data");
	const struct server_info *info = pdata.ptr;
	if (!info || pdata.len < 1 || pdata.len < 1u + info->desc_size) {
		fprintf(stderr, "rpma_check: client: private data of %u bytes\n", pdata.len);
		return 1;
	}
	check(rpma_mr_remote_from_descriptor(info->desc, info->desc_size, &remote), "rpma_mr_remote_from_descriptor");
	check(rpma_mr_remote_get_size(remote, &remote_size), "rpma_mr_remote_get_size");
	check(rpma_mr_remote_get_flush_type(remote, &flush_type), "rpma_mr_remote_get_flush_type");
	if (remote_size != BUF_SIZE || !(flush_type & RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY)) {
		fprintf(stderr, "rpma_check: client: remote region of %zu bytes, flush type %d\n", remote_size,
			flush_type);
		return 1;
	}
	check(rpma_conn_get_cq(conn, &cq), "rpma_conn_get_cq");

	/* Rounds of growing sizes at moving offsets; the last (round 0's
	 * pattern) covers the whole buffer, which the server then checks. */
	for (unsigned r = 1; r <= rounds; r++) {
		unsigned round = r == rounds ? 0 : r;
		size_t len = r == rounds ? BUF_SIZE : (size_t)1 << (r % 21);
		size_t off = r == rounds ? 0 : ((size_t)r * 4099u) % (BUF_SIZE - len + 1);

		for (size_t i = 0; i < len; i++)
			src[off + i] = pattern(round, off + i);
		memset(dst + off, 0, len);
		double t0 = now_us();
		check(rpma_write(conn, remote, off, src_mr, off, len, RPMA_F_COMPLETION_ON_ERROR, &write_ctx),
		      "rpma_write");
		check(rpma_flush(conn, remote, off, len, RPMA_FLUSH_TYPE_VISIBILITY, RPMA_F_COMPLETION_ALWAYS,
				 &flush_ctx),
		      "rpma_flush");
		flush_opcode = wait_one(cq, "rpma_flush", &flush_ctx);
		flush_us += now_us() - t0;
		check(rpma_read(conn, dst_mr, off, remote, off, len, RPMA_F_COMPLETION_ALWAYS, &read_ctx), "rpma_read");
		wait_one(cq, "rpma_read", &read_ctx);
		for (size_t i = off; i < off + len; i++)
			if (dst[i] != src[i]) {
				fprintf(stderr, "rpma_check: round %u: byte %zu read back as %u, written %u\n", r, i,
					dst[i], src[i]);
				return 1;
			}
		bytes += len;
	}
	printf("rpma_check: client: %u rounds, %llu bytes written, flushed, read back and compared\n", rounds,
	       bytes);
	printf("rpma_check: client: rpma_flush completed as %s (%s); write+flush %.1f us on average\n",
	       flush_opcode == IBV_WC_RDMA_READ ? "IBV_WC_RDMA_READ" : "another opcode",
	       flush_opcode == IBV_WC_RDMA_READ ? "librpma's read-after-write emulation" : "a native flush",
	       flush_us / rounds);
	check(rpma_conn_disconnect(conn), "rpma_conn_disconnect");
	if ((ev = next_event(conn)) != RPMA_CONN_CLOSED)
		fprintf(stderr, "rpma_check: client: %s after disconnect\n", rpma_utils_conn_event_2str(ev));
	check(rpma_conn_delete(&conn), "rpma_conn_delete");
	check(rpma_mr_remote_delete(&remote), "rpma_mr_remote_delete");
	check(rpma_mr_dereg(&src_mr), "rpma_mr_dereg src");
	check(rpma_mr_dereg(&dst_mr), "rpma_mr_dereg dst");
	check(rpma_peer_delete(&peer), "rpma_peer_delete");
	free(src);
	free(dst);
	printf("rpma_check: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3]);
	if (argc >= 4 && !strcmp(argv[1], "client")) {
		long rounds = argc > 4 ? strtol(argv[4], NULL, 10) : 64;

		if (rounds < 1 || rounds > 100000) {
			fprintf(stderr, "rpma_check: ROUNDS must be 1..100000\n");
			return 2;
		}
		return client(argv[2], argv[3], (unsigned)rounds);
	}
	fprintf(stderr, "usage: rpma_check server ADDR PORT | client ADDR PORT [ROUNDS]\n");
	return 2;
}
