/*
 * local_path.h — the host-local path: when the peer of a packet is a
 * softrnic device on this host, the packet goes through a ring in shared
 * memory instead of the kernel's UDP stack.  The transport never knows:
 * the packets are the same RoCEv2 packets, handed to the same receive
 * path (faults, ICRC check, rnic) as a datagram would be; their ICRC is
 * computed and checked only when the receiver's SOFTRNIC_FAULTS can
 * damage them (local_path.c).
 *
 * Discovery needs no setting: each device publishes one inbound ring,
 * softrnic-local-<uid>-<netns>-<addr hex>-<slot> in the user's runtime
 * directory (runtime_dir.h; netns: the inode of its network namespace, as
 * an address means something only within one; slot: its share slot on a
 * shared host address, host_share.h, else 0), and a sender looks for the
 * ring of a packet's destination address and QPN slot in its own
 * namespace and its own runtime directory: processes of one user that
 * share the directory meet there, anyone else goes over UDP.  No ring:
 * UDP, as before.  A ring's 8 MiB are allocated when it is made (a tmpfs
 * without room: no ring) and populated in every mapping (local_path.c,
 * RING_POPULATE).  SOFTRNIC_LOCAL=0 turns the path off; SOFTRNIC_PCAP
 * turns it off too (the capture records what the UDP socket carries).
 *
 * Wake-ups: a receiver whose progress thread is about to sleep says so in
 * its ring; the first sender that finds that flag set clears it and
 * sends it one small UDP datagram (a doorbell, SRT_LOCAL_DOORBELL_LEN
 * bytes, which the receive path recognises and drops), so event-driven
 * programs stay near zero CPU.  A busy-polling receiver drains the ring
 * with no system call.
 *
 * Protection: the ring is the user's own file (mode 0600, in a directory
 * only the user can enter; opened without following links, regular files
 * of ours only: runtime_dir.h), like the sockets a peer could send to
 * anyway; what comes through it passes the same checks as a datagram (QP,
 * PSN, rkey and bounds in the rnic), so a peer reaches only memory its
 * rkeys allow.
 */
#ifndef SOFTRNIC_RUNTIME_LOCAL_PATH_H
#define SOFTRNIC_RUNTIME_LOCAL_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <netinet/in.h>
#include <sys/uio.h>

#include "wire/wire.h"

struct srt_local;
struct srt_rx_batch;

/* The doorbell datagram: a pseudo-BTH (so that a shared address's
 * steering delivers it by QPN) with this opcode and magic. */
#define SRT_LOCAL_DOORBELL_LEN 12u
#define SRT_LOCAL_DOORBELL_OPCODE 0xffu
#define SRT_LOCAL_DOORBELL_MAGIC 0x53524442u    /* "SRDB" */
bool srt_local_is_doorbell(const uint8_t *data, size_t len);

struct srt_local_stats {
	uint64_t tx_packets, rx_packets;  /* carried by rings              */
	uint64_t tx_ring_full;            /* dropped: the peer's ring full  */
	uint64_t doorbells_sent;
	uint64_t rx_ring_broken;          /* an entry with an impossible length:
	                                   the ring's rest dropped         */
	uint64_t tx_inline;               /* message-path payloads carried in
	                                   the ring (srt_local_inline_max) */
};

/* Publishes our ring (addr, slot) in the runtime directory dirfd, which
 * the caller keeps open while the ring lives; NULL when the path is off
 * (SOFTRNIC_LOCAL=0), there is no directory (dirfd -1) or the ring cannot
 * be made (then UDP only). */
struct srt_local *srt_local_open(int dirfd, struct in_addr addr, unsigned slot, bool shared, bool wants_icrc,
				 int udp_fd);
void srt_local_close(struct srt_local *l);
/* Removes our ring's file and nothing else (at exit: the mapping stays
 * for the threads still running; senders drop the ring when they next
 * check it).  srt_local_close does it too. */
void srt_local_unlink(struct srt_local *l);
/* A device opening: removes the rings in dirfd whose owner no longer
 * runs as us (it died without closing). */
void srt_local_remove_dead(int dirfd);

/* Sender: the local destination of the packet for dst with this BTH
 * (its destination QPN), or NULL if it goes over UDP.  Cheap: a cache of
 * the destinations seen, each looked at again every 200 ms.  Valid until
 * the next call. */
struct srt_local_peer;
struct srt_local_peer *srt_local_route(struct srt_local *l, struct in_addr dst, const uint8_t *bth);
/* The same for a message to QP qpn at dst (not a packet: the fast path). */
struct srt_local_peer *srt_local_route_qpn(struct srt_local *l, struct in_addr dst, uint32_t qpn);
/* The same, looked up again now whatever the cache holds (a QP that
 * connects: the address may have changed hands since it was cached). */
struct srt_local_peer *srt_local_route_now(struct srt_local *l, struct in_addr dst, const uint8_t *bth);
/* Sender: does that destination check ICRCs (its faults are on)?  If
 * not, srt_local_send may carry packets whose ICRC was not computed. */
bool srt_local_wants_icrc(const struct srt_local_peer *peer);
/* Sender: the packet, as pieces with its ICRC bytes (icrc: computed),
 * into that destination's ring; a full ring drops it (a full NIC queue:
 * RC retransmits).  The ring's mutex stays held for the next packet to
 * the same ring, until srt_local_flush.  alone: rnic_tx.alone, which the
 * entry carries to the receiver (srt_rx_pkt.alone).  false: a page of a
 * piece faulted (region memory, mem_guard.h), nothing written. */
bool srt_local_send(struct srt_local *l, struct srt_local_peer *peer, uint16_t sport, uint8_t tos, uint8_t ttl,
		    const struct wire_piece *pc, unsigned npc, uint32_t len, bool icrc, bool alone);
/* ---- the fast path (rnic.h, rnic_qp_set_fast) ----
 *
 * A fast message is one entry in the destination's ring (ENTRY_FAST:
 * struct ring_fast, then the payload, copied once from the region), and
 * its answer one entry back in the sender's ring (ENTRY_ANSWER).  Both
 * ride the ring's mutex, publication and doorbells like packets. */
struct rnic_fast_msg;
/* Sender: message m and its payload pieces (region memory, read under the
 * guard) into peer's ring.  0, EAGAIN (ring full), EMSGSIZE or EFAULT (a
 * page of the payload gone): nothing written. */
int srt_local_fast_send(struct srt_local *l, struct srt_local_peer *peer, const struct rnic_fast_msg *m,
			const struct wire_piece *pc, unsigned n);
/* Receiver: the answer to fast message `seq` of the sender's QP qpn
 * (ours: src_qpn) into its ring (peer); false when the ring is full. */
bool srt_local_answer(struct srt_local *l, struct srt_local_peer *peer, uint32_t qpn, uint32_t src_qpn, uint32_t seq,
		      uint32_t verdict);

/* ---- the message path (rnic_qp_set_message_path) ----
 *
 * An RC QP whose peer is on this host carries each message as one packet
 * whose payload stays in the sender's memory: the ring entry holds the
 * headers and a description of the payload's pieces (addresses in the
 * sender, its pid), and the receiver's rnic, once its own checks passed,
 * copies the bytes straight into the MR or receive buffers with one
 * process_vm_readv (srt_local_pull).  One copy, no per-MTU packet.  A
 * READ response comes the same way, from the responder's MR.
 *
 * Both ends must be able to read each other's memory: the same user,
 * Yama's ptrace_scope 0, dumpable processes, no seccomp filter against
 * the call — each process tries it on itself when its ring opens, and on
 * the peer (a cookie at an address its ring names) when a QP connects.
 * SOFTRNIC_LOCAL=packets keeps the ring but not the message path, and a
 * process with SOFTRNIC_FAULTS or SOFTRNIC_PCAP does not take it (they
 * see RoCEv2 packets).
 *
 * Protection: the description is the sender's word, as a packet's bytes
 * are; process_vm_readv can read only what a process of the same user
 * may read anyway (ptrace rules), the rnic decides where the bytes land,
 * and a description that does not add up is not read. */
#define SRT_LOCAL_REMOTE_SEGS 128u
struct srt_local_seg {
	uint64_t addr, len;
};
struct srt_local_remote {
	uint32_t pid;
	uint32_t nseg;
	uint64_t total;
	struct srt_local_seg seg[];
};
/* At connect: may an RC QP of ours send whole messages to this
 * destination?  Both rings say msg_ok, and we can read its cookie.  Each
 * end decides for its own requests (the BTH says which a request is,
 * wire_bth.msg), so the two ends need not agree; the peer must be able to
 * read our memory, which msg_ok on both sides promises on one host of one
 * user (the probe checks the direction it can). */
bool srt_local_message_path(struct srt_local *l, struct srt_local_peer *peer);
/* Messages longer than this go whole (rnic_qp_set_message_path); shorter
 * ones as MTU packets through the ring.  Measured (docs/performance.md,
 * bench/local_msg_sweep.sh, medians of 3 interleaved rounds), with the
 * reads of WRITEs, SENDs and READ responses put off and joined, and the
 * payloads of messages sent alone in the ring: at 8 KiB, whole messages
 * move 1.1x (WRITE) to 2.2x (SEND) the bytes of two MTU packets, and
 * ib_write_lat, ib_send_lat and ib_read_lat take 3.5 / 3.8 / 4.8 against
 * 5.1 / 5.0 / 5.0 us.  So every message of more than one packet: above
 * 4 KiB.  (Before payloads went in the ring, 8 KiB lost its latency
 * whole: 4.6 against 2.8 us.)  SOFTRNIC_LOCAL_MSG_MIN=bytes sets it (at
 * least 4096). */
#define SRT_LOCAL_MSG_MIN_BYTES (4u << 10)
uint32_t srt_local_message_min(void);
/* Sender: a message-path packet: its headers and ICRC room `hdr`, the
 * payload pieces described, not copied.  Dropped (counted as a full
 * ring) when the ring is full, as any packet. */
void srt_local_send_remote(struct srt_local *l, struct srt_local_peer *peer, uint16_t sport, uint8_t tos, uint8_t ttl,
			   const uint8_t *hdr, uint32_t hdr_len, const struct wire_piece *vec, unsigned nvec,
			   bool alone);
/* Receiver: the described payload into dst[0..n), whose lengths must add
 * up to it; nseg: the piece count srt_local_recv checked (the
 * description's own may have changed since: the sender can write it).
 * 0, or -errno (the sender died or unmapped the buffer). */
int srt_local_pull(const struct srt_local_remote *d, uint32_t nseg, const struct iovec *dst, unsigned n);
/* ---- payloads in the ring ----
 *
 * A message-path payload sent alone (rnic_tx.alone: its QP runs one
 * message at a time) up to srt_local_inline_max() bytes is copied
 * into the ring entry itself, while the ring stays at most half full with
 * it, and the receiver copies it out (srt_rx_pkt.remote_inline): two
 * memcpys and no system call, which measured faster than one
 * process_vm_readv up to that size (docs/performance.md; at 128 KiB and
 * more the two copies are slower).  A stream's payloads are described
 * as above, and stay one copy, by the receiver: the sender is free to
 * post the next (with every 128th of ib_send_bw's 64 KiB SENDs in the
 * ring it lost 10-20%).  So is a payload past the size, or one for a ring
 * already half full (a slow receiver): the copies never take the ring's
 * last half from the packets of other senders.  The
 * sender copies when it sends, as a NIC reads the buffer when it
 * transmits; a retransmission copies again.
 * SOFTRNIC_LOCAL_INLINE_MAX=bytes sets the size (0: always describe). */
#define SRT_LOCAL_INLINE_MAX_BYTES (64u << 10)
uint32_t srt_local_inline_max(void);
/* Receiver: an inline payload into dst[0..n), whose lengths must add up
 * to len (the length srt_local_recv checked).  0, -EINVAL, or -EFAULT
 * when a page of dst faulted (mem_guard.h). */
int srt_local_pull_inline(const uint8_t *src, uint32_t len, const struct iovec *dst, unsigned n);
/* Receiver: several payloads, each whole into its one dst; `ok` says
 * which landed.  Reads of one sender in a row go in one process_vm_readv
 * (its fixed cost, about 2 us on the machines measured, is most of what
 * reading 64 KiB costs); a read that stops short goes on after the
 * payload that failed. */
struct srt_local_pull {
	const struct srt_local_remote *desc;
	uint32_t nseg;                  /* as srt_local_pull's */
	struct iovec dst;
	bool ok;
};
void srt_local_pull_many(struct srt_local_pull *pulls, unsigned n);

/* After a batch: let go of the ring held, ring the doorbells of sleeping
 * receivers. */
void srt_local_flush(struct srt_local *l);

/* Receiver: fills the batch with what waits in our ring (up to its room),
 * pointing into the ring; returns the number of packets.  They stay valid
 * until srt_local_recv_done, which gives their space back to senders. */
int srt_local_recv(struct srt_local *l, struct srt_rx_batch *b);
void srt_local_recv_done(struct srt_local *l);
/* Receiver, without the lock: does the ring hold packets?  (A plain
 * load: what a spinning thread watches.) */
bool srt_local_pending(const struct srt_local *l);
/* The progress thread is about to sleep (true) or woke (false).  On
 * sleeping, returns false if packets are already waiting (do not sleep). */
bool srt_local_sleep(struct srt_local *l, bool sleeping);

void srt_local_get_stats(const struct srt_local *l, struct srt_local_stats *s);
/* The path of our ring's file (for tests and tools that map it as a
 * sender does). */
const char *srt_local_file(const struct srt_local *l);

#endif
