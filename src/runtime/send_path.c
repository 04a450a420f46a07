/*
 * send_path.c — what leaves and when (device_int.h has the runtime's
 * parts).  The rnic queues the packets it makes under the device lock
 * (rnic_io.xmit -> srt_paths_queue); srt_unlock sends the whole queue in
 * one batch, each packet by its path (paths.h: sendmmsg with UDP GSO, or
 * the ring of a peer on this host).  One exception: plain ACKs may wait, up to
 * SRT_ACK_RIDE_NS, for the next packet this process sends and leave with
 * it, when a thread is sure to come by and send them in time.
 */
#include <pthread.h>

#include "runtime/device_int.h"

/* ACKs ride with sends: a plain ACK (made by a polling application
 * thread, or by the progress thread) waits up to this long in the
 * transmit queue for the next packet this process sends, and leaves after
 * it in the same system call (see srt_unlock).  A ping-pong program
 * answers within a microsecond or two of its completion, so the ACK and
 * the answer then cost one send and the peer one receive, instead of two
 * each.  The bound: the next unlock after this long sends them; if the
 * program stops calling the library meanwhile, the progress thread does,
 * within the hand-off time (200 us to 1.6 ms, progress.c).  Either is far
 * below the peer's retransmit timer (>= 4 us * 2^timeout; perftest and
 * rdma-core's tests use timeout >= 12: 16 ms). */
#define SRT_ACK_RIDE_NS (20ull * 1000)
/* A program that never answers (ride_start): after this many waits in a
 * row that ended alone, ACKs leave at once, but for one wait in
 * SRT_RIDE_PROBE. */
#define SRT_RIDE_MISSES 4u
#define SRT_RIDE_PROBE 32u

void srt_lock(struct srt_device *dev) { pthread_mutex_lock(&dev->lock); }

/* Lock held: may the queued ACKs start waiting now?  Waiting pays only
 * when the program answers what it receives; one that does not (a
 * server that only takes WRITEs, or only receives) would see every ACK
 * late.  So after SRT_RIDE_MISSES waits in a row ended alone, ACKs leave
 * at once, except one wait in SRT_RIDE_PROBE, which notices a program
 * that starts answering. */
static bool ride_start(struct srt_device *dev, uint64_t now)
{
	if (dev->ride_misses >= SRT_RIDE_MISSES && ++dev->ride_probe < SRT_RIDE_PROBE)
		return false;
	dev->ride_probe = 0;
	dev->ride_since_ns = now;
	return true;
}

/* Lock held: when the ACKs waiting in the queue must leave (UINT64_MAX:
 * nothing waits, the queue holds other packets or none). */
uint64_t srt_ride_deadline(struct srt_device *dev, uint64_t now)
{
	const struct srt_tx_queue *q = srt_paths_queued(&dev->paths);

	/* Plain ACKs and fast messages' answers wait; nothing else. */
	if (dev->paths.flush_at_unlock || (q->n ? !srt_txq_only_acks(q) : !dev->paths.answers_n))
		return UINT64_MAX;
	if (!dev->ride_since_ns && !ride_start(dev, now))
		return UINT64_MAX;
	return dev->ride_since_ns + SRT_ACK_RIDE_NS;
}

/* Lock held: may what is queued wait for the next unlock?  Only plain
 * ACKs, only when the progress thread is sure to come by (acks_may_ride),
 * and only until their ride deadline ("ACKs ride with sends" above). */
static bool acks_wait(struct srt_device *dev)
{
	if (!dev->acks_may_ride)
		return false;
	uint64_t now = srt_now();
	uint64_t deadline = srt_ride_deadline(dev, now);
	return deadline != UINT64_MAX && now < deadline;
}

/* Packets the rnic produced under the lock leave here, in one batch
 * (plain ACKs may wait: acks_wait). */
void srt_unlock(struct srt_device *dev)
{
	/* The ACKs that waited left with a message-path packet, which does
	 * not go through the queue: they rode, and a new wait starts with
	 * the next ACK.  Left set, ride_since_ns would have the next ACKs
	 * find their wait over and leave alone: a program that spins on
	 * memory (ib_write_lat) then had its peer's ACK but not the WRITE
	 * behind it when it stopped polling, and the WRITE waited for the
	 * progress thread's hand-off (150 us a round trip, against 20 us
	 * with MTU packets, whose ACKs rode). */
	if (dev->paths.acks_before_message) {
		if (dev->ride_since_ns) {
			dev->acks_rode += dev->paths.acks_before_message;
			dev->ride_misses = 0;
		}
		dev->paths.acks_before_message = 0;
		dev->acks_may_ride = false;
		dev->ride_since_ns = 0;
	}
	const struct srt_tx_queue *q = srt_paths_queued(&dev->paths);
	/* A fast message in a ring goes now (or an answer that must not
	 * wait), and what waits goes with it: the ACKs and answers ride
	 * along. */
	bool fast = dev->paths.flush_at_unlock;
	unsigned waiting = q->n + dev->paths.answers_n;
	if (waiting && (fast || !acks_wait(dev))) {
		if (dev->ride_since_ns) {
			if (q->not_acks || fast) {
				dev->acks_rode += waiting - q->not_acks;
				dev->ride_misses = 0;
			} else {
				dev->acks_alone += waiting;
				dev->ride_misses++;
			}
		}
		srt_paths_flush(&dev->paths);
		dev->acks_may_ride = false;
		dev->ride_since_ns = 0;
	} else if (fast) {
		srt_paths_flush(&dev->paths);
	}
	pthread_mutex_unlock(&dev->lock);
}

/* Lock held, by a thread that may not come back soon (the progress
 * thread, a program about to sleep): nothing waits. */
void srt_send_all_at_unlock(struct srt_device *dev)
{
	dev->acks_may_ride = false;
}
