/*
 * rsocket_int.h — private types of softrnic's stream rsockets
 * (<rdma/rsocket.h>: rsocket, rconnect, rsend, rrecv, rpoll, ...).
 *
 * An rsocket is an RC QP connected through this library's rdma_* calls;
 * its wire protocol is rdma-core's (librdmacm/rsocket.c), so a softrnic
 * rsocket talks to an rdma-core one:
 *   - the REQ and REP carry struct rs_conn_data: version 1, flags, the
 *     receive credits (the receive queue's depth), the address/rkey of the
 *     side's target SGL (where the peer writes buffer grants) and of the
 *     first half of its receive buffer;
 *   - data travels as RDMA WRITE WITH IMMEDIATE into the half of the
 *     peer's receive buffer it last granted, the immediate saying
 *     op (bits 31..29) and length (28..0);
 *   - a receiver grants the next half of its buffer by an RDMA WRITE WITH
 *     IMMEDIATE of a 16-byte rs_sge into the sender's target SGL, op SGL,
 *     and credits (how many messages the sender may have sent in all,
 *     modulo 2^16) in the immediate; without a free half, a zero-length
 *     write with the same immediate grants credits alone;
 *   - shutdown and close are zero-length writes with op CTRL and
 *     DISCONNECT or SHUTDOWN in the immediate.
 * Files: rsocket.c (the socket table, making, connecting and closing
 * sockets, the CM), rsocket_sendrecv.c (the send and receive calls),
 * rsocket_opt.c (names, options, rfcntl), rsocket_data.c (buffers, the
 * QP, sending, receiving, credits), rsocket_poll.c (rpoll, rselect),
 * rsocket_epoll.c (repoll_*), rsocket_dgram.c (datagram sockets),
 * rsocket_iomap.c (riomap, riowrite).
 */
#ifndef SOFTRNIC_COMPAT_RSOCKET_INT_H
#define SOFTRNIC_COMPAT_RSOCKET_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* ---- the wire (rdma-core's rsocket.c) --------------------------------------- */
#define RS_SNDLOWAT 2048                /* a send needs this much send buffer free */
#define RS_MAX_TRANSFER 65536           /* the largest single write */
#define RS_OLAP_START_SIZE 2048         /* the first write of a large send */
#define RS_QP_MIN_SIZE 16
#define RS_QP_MAX_SIZE 0xFFFE
#define RS_QP_CTRL_SIZE 4               /* control messages in flight */
#define RS_SGL_SIZE 2                   /* target SGL entries (two buffer halves) */

enum rs_op {                            /* immediate bits 31..29 */
	RS_OP_DATA = 0,
	RS_OP_RSVD_DATA_MORE = 1,
	RS_OP_WRITE = 2,                /* local only, never sent */
	RS_OP_RSVD_DRA_MORE = 3,
	RS_OP_SGL = 4,
	RS_OP_RSVD = 5,
	RS_OP_IOMAP_SGL = 6,
	RS_OP_CTRL = 7,
};
enum rs_ctrl {                          /* the data of an RS_OP_CTRL */
	RS_CTRL_DISCONNECT = 0,
	RS_CTRL_KEEPALIVE = 1,
	RS_CTRL_SHUTDOWN = 2,
};
static inline uint32_t rs_msg(uint32_t op, uint32_t data)
{
	return (op << 29) | data;
}
#define RS_MSG_OP(m) ((m) >> 29)
#define RS_MSG_DATA(m) ((m) & 0x1FFFFFFFu)

/* A buffer grant as it is written into the peer's target SGL (host order
 * of the writer; RS_CONN_FLAG_NET says when that is big-endian). */
struct rs_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

#define RS_CONN_FLAG_NET (1 << 0)
#define RS_CONN_FLAG_IOMAP (1 << 1)

/* The REQ's and REP's private data (big-endian fields). */
struct rs_conn_data {
	uint8_t version;                /* 1 */
	uint8_t flags;
	uint16_t credits;               /* be16: the receive queue's depth */
	uint8_t reserved[3];
	uint8_t target_iomap_size;      /* scaled (riomap); softrnic offers 0 */
	struct rs_sge target_sgl;       /* be: where grants go, length = entries */
	struct rs_sge data_buf;         /* be: the first receive buffer half */
};
_Static_assert(sizeof(struct rs_conn_data) == 40, "rs_conn_data is 40 bytes on the wire");

/* An entry of a side's iomap table (riomap): where `offset` of the
 * mapping lives in the peer's memory. */
struct rs_iomap {
	uint64_t offset;
	struct rs_sge sge;
};
_Static_assert(sizeof(struct rs_iomap) == 24, "rs_iomap is 24 bytes on the wire");

/* rdma-core's 8-bit scale for iomap table sizes in rs_conn_data. */
static inline int rs_value_to_scale(int value, int bits)
{
	return value <= (1 << (bits - 1)) ? value : (1 << (bits - 1)) | (value >> bits);
}
static inline int rs_scale_to_value(int value, int bits)
{
	return value <= (1 << (bits - 1)) ? value : (value & ~(1 << (bits - 1))) << bits;
}

/* Work request ids: receives have bit 63, sends carry their message. */
#define RS_WR_RECV (UINT64_C(1) << 63)

/* ---- one socket --------------------------------------------------------------- */
struct ds_dest;
struct ds_rmsg;
struct rs_iomap_mr {                    /* one riomap */
	struct rs_iomap_mr *next;       /* local_maps only */
	struct ibv_mr *mr;              /* NULL: a free slot */
	uint64_t offset;
	bool pending;                   /* not sent to the peer yet */
};
enum rs_state {
	RS_INIT = 0,
	RS_BOUND = 0x0001,
	RS_LISTENING = 0x0002,
	RS_OPENING = 0x0004,            /* resolving or connecting */
	RS_CONNECTED = 0x0100,
	RS_WRITABLE = 0x0200,
	RS_READABLE = 0x0400,
	RS_CONNECT_RDWR = RS_CONNECTED | RS_READABLE | RS_WRITABLE,
	RS_CONNECT_ERROR = 0x0800,
	RS_DISCONNECTED = 0x1000,
	RS_ERROR = 0x2000,
};

/* Where an active connect is (state RS_OPENING). */
enum rs_connect_step {
	RS_STEP_ADDR,                   /* waiting for ADDR_RESOLVED */
	RS_STEP_ROUTE,                  /* waiting for ROUTE_RESOLVED */
	RS_STEP_CONNECT,                /* REQ sent, waiting for ESTABLISHED */
};

struct rmsg {                           /* a message received, not yet read */
	uint32_t op;
	uint32_t len;
};

struct rsock {
	int index;                      /* the fd the program holds: the CM channel's */
	pthread_mutex_t lock;
	struct rdma_event_channel *chan;
	struct rdma_cm_id *cm;
	int state;                      /* enum rs_state flags */
	enum rs_connect_step step;
	int err;                        /* SO_ERROR, cleared when read */
	int fs_flags;                   /* O_NONBLOCK */
	int fd_flags;                   /* FD_CLOEXEC */
	uint64_t so_opts, tcp_opts;     /* 1 << optname for boolean options set */
	int ip_tos;
	unsigned keepalive_time;        /* TCP_KEEPIDLE, seconds */
	int64_t keepalive_due;          /* CLOCK_MONOTONIC µs of the next keepalive; 0: not timed yet */
	bool dst_is_set;

	/* Sizes (settable until the buffers exist). */
	uint32_t sbuf_size, rbuf_size;
	uint16_t sq_size, rq_size;
	uint16_t sq_inline;

	/* Verbs objects (rsocket_data.c). */
	struct ibv_comp_channel *cq_chan;
	struct ibv_cq *cq;
	bool cq_armed;
	struct ibv_mr *smr, *rmr, *target_mr;
	uint8_t *sbuf;                  /* sbuf_size + the control grant slots */
	uint8_t *rbuf;                  /* rbuf_size: two halves the peer writes */
	struct rs_sge *target_sgl;      /* RS_SGL_SIZE, written by the peer */

	/* Sending. */
	uint32_t sbuf_avail;            /* bytes of sbuf not in flight */
	uint32_t sbuf_head;             /* where the next copy goes */
	int sqe_avail;                  /* data work requests that may be posted */
	unsigned ctrl_seqno, ctrl_max_seqno; /* control messages posted / allowed */
	uint16_t sseq_no, sseq_comp;    /* messages sent / allowed by the peer */
	int target_sge;                 /* the peer's half being written */
	struct rs_sge remote_sgl;       /* the peer's target SGL */
	int remote_sge;                 /* its entry our next grant goes to */

	/* Receiving. */
	struct rmsg *rmsg;              /* rq_size + 1 */
	int rmsg_head, rmsg_tail;
	uint32_t rbuf_offset;           /* where the next byte to read is */
	uint32_t rbuf_avail;            /* bytes read and not yet granted */
	uint32_t rbuf_free_offset;      /* the next half to grant */
	uint16_t rseq_no, rseq_comp;    /* messages read / when to grant credits */

	/* riomap / riowrite (rsocket_iomap.c). */
	uint16_t target_iomap_size;     /* entries we offer the peer (RDMA_IOMAPSIZE) */
	struct rs_iomap *target_iomap;  /* after target_sgl, written by the peer */
	struct rs_sge remote_iomap;     /* the peer's table: address, rkey, entries */
	struct rs_iomap_mr *iomaps;     /* our mappings, remote_iomap.length of them */
	struct rs_iomap_mr *local_maps; /* read-only mappings (not offered) */
	bool iomap_pending;             /* a mapping waits to be sent */

	/* Datagram sockets (rsocket_dgram.c). */
	int type;                       /* SOCK_STREAM or SOCK_DGRAM */
	int udp_sock;                   /* DGRAM: the kernel UDP socket (the index) */
	int domain;                     /* DGRAM: AF_INET, or AF_INET6 (IPv4-mapped peers) */
	struct ibv_qp *ud_qp;
	struct ibv_mr *ud_smr, *ud_rmr;
	struct ds_dest *dests;          /* peers met, by socket address */
	struct ds_dest *conn_dest;      /* rconnect's peer */
	uint32_t *smsg_free;            /* free send slots (a stack of indexes) */
	int n_smsg_free;
	struct ds_rmsg *dmsg;           /* received, not yet read (rq_size + 1) */
	uint32_t local_ipv4;            /* the device's address (its GID) */
	struct ibv_ah *self_ah;         /* to our own QP (datagrams that came over UDP) */
};

/* ---- datagrams (rdma-core's formats) ------------------------------------------ */
/* Before a sender knows the peer's QP, a datagram goes over the kernel UDP
 * socket with this header; the receiver answers with an RS_OP_CTRL one
 * carrying its own QPN.  `addr` is where the sender's QP is: softrnic
 * writes its device's address (an rdma-core receiver resolves the UDP
 * source address instead and does not read it). */
#define DS_UDP_TAG 0x55555555
struct ds_udp_header {
	uint32_t tag;                   /* be32 DS_UDP_TAG */
	uint8_t version;                /* 4 */
	uint8_t op;                     /* RS_OP_DATA or RS_OP_CTRL */
	uint8_t length;                 /* DS_UDP_IPV4_HDR_LEN */
	uint8_t reserved;
	uint32_t qpn;                   /* be32, low 24 bits */
	uint32_t addr;                  /* IPv4 */
};
#define DS_UDP_IPV4_HDR_LEN 16

/* Every UD SEND starts with the sender's socket address. */
struct ds_header {
	uint8_t version;                /* 4 */
	uint8_t length;                 /* DS_IPV4_HDR_LEN */
	uint16_t port;                  /* be16 */
	uint32_t addr;                  /* IPv4 */
};
#define DS_IPV4_HDR_LEN 8
#define DS_IPV6_HDR_LEN 24
#define DS_SLOT RS_SNDLOWAT             /* header + payload of one datagram */
#define DS_GRH 40

struct ds_dest {
	struct ds_dest *next;
	struct sockaddr_in addr;        /* the peer's socket */
	struct ibv_ah *ah;              /* NULL until its QPN is known */
	uint32_t qpn;
	struct ds_header hdr;           /* our address as this peer sees it */
};

struct ds_rmsg {
	uint32_t slot;
	uint32_t length;                /* header + payload */
};

/* rsocket.c */
/* A table indexed by fd number, grown as higher fds are put in: the
 * sockets (rsocket.c) and the repoll instances (rsocket_epoll.c).  Both
 * calls take its lock. */
struct fd_table {
	pthread_mutex_t lock;
	void **slot;
	int len;
	int first_len;                  /* its length when first grown */
};
#define FD_TABLE_INIT(first_len) { PTHREAD_MUTEX_INITIALIZER, NULL, 0, (first_len) }
/* Slot fd becomes p (NULL empties it): 0, or ENOMEM (EBADF for fd < 0)
 * with the table as it was. */
int fd_table_put(struct fd_table *t, int fd, void *p);
void *fd_table_get(struct fd_table *t, int fd);  /* NULL: empty, or fd out of range */
struct rsock *rs_get(int index);        /* NULL: not an rsocket */
/* The socket of fd, locked; NULL with errno EBADF. */
struct rsock *rs_lock(int fd);
/* Unlocks the socket and returns ret, errno kept. */
int rs_unlock_ret(struct rsock *rs, int ret);
/* A socket call's address out: src copied into dst, cut to *dlen;
 * *dlen becomes its whole size. */
void rs_copy_addr(struct sockaddr *dst, socklen_t *dlen, const struct sockaddr *src);

/* rsocket_epoll.c: epoll over rsockets (rdma-core's RDMACM_1.5 calls,
 * which Debian 12's <rdma/rsocket.h> does not declare yet). */
struct epoll_event;
int repoll_create(int flags);
int repoll_ctl(int epfd, int op, int fd, struct epoll_event *event);
int repoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout);
bool repoll_is(int fd);                 /* fd is a repoll instance */
int repoll_close(int epfd);             /* rclose of a repoll instance */
int rs_err(int e);                      /* errno = e, -1 */
/* Handles CM events queued on the socket's channel (never blocks);
 * connecting sockets advance.  0, or -1 with errno. */
int rs_process_cm(struct rsock *rs);
/* Drives a connecting socket: blocking until connected or failed unless
 * nonblock (then -1/EINPROGRESS while it goes on). */
int rs_do_connect(struct rsock *rs, bool nonblock);

/* rsocket_data.c */
int rs_create_ep(struct rsock *rs);
void rs_free_ep(struct rsock *rs);
void rs_format_conn_data(const struct rsock *rs, struct rs_conn_data *c);
int rs_save_conn_data(struct rsock *rs, const void *pdata, uint8_t len);
int rs_poll_cq(struct rsock *rs);
void rs_update_credits(struct rsock *rs);
bool rs_can_send(const struct rsock *rs);
bool rs_have_rdata(const struct rsock *rs);
bool rs_all_sends_done(const struct rsock *rs);
bool rs_ctrl_avail(const struct rsock *rs);
void rs_keepalive(struct rsock *rs);
int rs_keepalive_wait_ms(const struct rsock *rs, int cap_ms);
int rs_post_ctrl(struct rsock *rs, uint32_t ctrl);
/* Waits (lock held; dropped while sleeping) until test(rs), or the
 * socket's state says there is nothing to wait for.  nonblock: EAGAIN
 * instead of sleeping.  0 or -1/errno. */
int rs_wait(struct rsock *rs, bool nonblock, bool (*test)(const struct rsock *rs));
/* Arms the CQ for rpoll: true if something is ready already. */
bool rs_arm(struct rsock *rs);
void rs_take_cq_event(struct rsock *rs);
ssize_t rs_sendv(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags);
ssize_t rs_recvv(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags);

/* Posts an RDMA WRITE (msg op RS_OP_WRITE) or WRITE WITH IMMEDIATE of len
 * bytes from buf, inline or copied into the send buffer; takes a work
 * request and len bytes of send buffer, given back at its completion. */
int rs_write_from(struct rsock *rs, const void *buf, uint32_t len, uint32_t msg, uint64_t addr,
		  uint32_t rkey);

/* rsocket_iomap.c */
int rs_send_iomaps(struct rsock *rs, int flags);
void rs_free_iomaps(struct rsock *rs);

/* rsocket_dgram.c */
int ds_socket(struct rsock *rs, int domain);
int ds_bind(struct rsock *rs, const struct sockaddr *addr, socklen_t len);
int ds_connect(struct rsock *rs, const struct sockaddr *addr, socklen_t len);
ssize_t ds_sendv(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags,
		 const struct sockaddr *to, socklen_t tolen);
ssize_t ds_recvv(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags,
		 struct sockaddr *from, socklen_t *fromlen);
short ds_revents(struct rsock *rs, short events);
void ds_free(struct rsock *rs);

#endif
