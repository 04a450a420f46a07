/*
 * rsocket_iomap.c — riomap, riounmap and riowrite: a stream rsocket's
 * direct placement, in rdma-core's protocol.  Each side offers the peer a
 * table of iomap entries (RDMA_IOMAPSIZE before connecting; its size
 * travels in rs_conn_data, the table follows the target SGL).  riomap
 * registers a buffer for remote writes and, before the next send or
 * riowrite, writes its entry (struct rs_iomap: offset, address, rkey,
 * length) into the peer's table with an RDMA WRITE WITH IMMEDIATE, op
 * RS_OP_IOMAP_SGL and the entry's index; riowrite finds the peer's entry
 * for an offset and RDMA WRITEs the bytes there, with no message: the
 * program says when the data is in (riostream polls the buffer's last
 * byte).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <rdma/rsocket.h>

#include "compat/rdmacm/rsocket_int.h"

void rs_free_iomaps(struct rsock *rs)
{
	if (rs->iomaps) {
		for (uint32_t i = 0; i < rs->remote_iomap.length; i++)
			if (rs->iomaps[i].mr)
				ibv_dereg_mr(rs->iomaps[i].mr);
		free(rs->iomaps);
		rs->iomaps = NULL;
	}
	while (rs->local_maps) {
		struct rs_iomap_mr *m = rs->local_maps;
		rs->local_maps = m->next;
		ibv_dereg_mr(m->mr);
		free(m);
	}
	rs->iomap_pending = false;
}

static bool can_send_or_closed(const struct rsock *rs)
{
	return rs_can_send(rs) || !(rs->state & RS_WRITABLE);
}

int rs_send_iomaps(struct rsock *rs, int flags)
{
	bool nonblock = (rs->fs_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);

	for (uint32_t i = 0; rs->iomaps && i < rs->remote_iomap.length; i++) {
		struct rs_iomap_mr *m = &rs->iomaps[i];
		if (!m->mr || !m->pending)
			continue;
		/* An entry is a message: it takes a credit, as in rdma-core. */
		if (!rs_can_send(rs)) {
			if (rs_wait(rs, nonblock, can_send_or_closed))
				return -1;
			if (!(rs->state & RS_WRITABLE))
				return rs_err(EPIPE);
		}
		struct rs_iomap e = {
			.offset = m->offset,
			.sge = { .addr = (uintptr_t)m->mr->addr, .key = m->mr->rkey,
				 .length = (uint32_t)m->mr->length },
		};
		rs->sseq_no++;
		if (rs_write_from(rs, &e, sizeof(e), rs_msg(RS_OP_IOMAP_SGL, i),
				  rs->remote_iomap.addr + (uint64_t)i * sizeof(e), rs->remote_iomap.key))
			return -1;
		m->pending = false;
	}
	rs->iomap_pending = false;
	return 0;
}

off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	struct rsock *rs = rs_get(socket);
	off_t ret = -1;

	(void)flags;
	if (!rs)
		return rs_err(EBADF);
	pthread_mutex_lock(&rs->lock);
	if (rs->type != SOCK_STREAM || !rs->cm || !rs->cm->qp || (prot & ~(PROT_WRITE | PROT_NONE))) {
		rs_err(EINVAL);
		goto out;
	}
	if (!buf || !len) {
		rs_err(EINVAL);
		goto out;
	}
	struct rs_iomap_mr *m = NULL;
	int access = IBV_ACCESS_LOCAL_WRITE;
	if (prot & PROT_WRITE) {
		/* A slot of the peer's table. */
		if (!rs->iomaps && rs->remote_iomap.length)
			rs->iomaps = calloc(rs->remote_iomap.length, sizeof(*rs->iomaps));
		for (uint32_t i = 0; rs->iomaps && i < rs->remote_iomap.length; i++)
			if (!rs->iomaps[i].mr) {
				m = &rs->iomaps[i];
				break;
			}
		if (!m) {
			rs_err(ENOMEM);   /* as rdma-core: no free entry */
			goto out;
		}
		access |= IBV_ACCESS_REMOTE_WRITE;
	} else {
		m = calloc(1, sizeof(*m));
		if (!m) {
			rs_err(ENOMEM);
			goto out;
		}
	}
	m->mr = ibv_reg_mr(rs->cm->qp->pd, buf, len, access);
	if (!m->mr) {
		if (!(prot & PROT_WRITE))
			free(m);
		goto out;
	}
	m->offset = offset == -1 ? (uint64_t)(uintptr_t)buf : (uint64_t)offset;
	if (prot & PROT_WRITE) {
		m->pending = true;
		rs->iomap_pending = true;
	} else {
		m->next = rs->local_maps;
		rs->local_maps = m;
	}
	ret = (off_t)m->offset;
out:;
	int saved = errno;
	pthread_mutex_unlock(&rs->lock);
	errno = saved;
	return ret;
}

int riounmap(int socket, void *buf, size_t len)
{
	struct rsock *rs = rs_get(socket);
	int ret = -1;

	if (!rs)
		return rs_err(EBADF);
	pthread_mutex_lock(&rs->lock);
	for (uint32_t i = 0; rs->iomaps && i < rs->remote_iomap.length; i++) {
		struct rs_iomap_mr *m = &rs->iomaps[i];
		if (m->mr && m->mr->addr == buf && m->mr->length == len) {
			ibv_dereg_mr(m->mr);
			memset(m, 0, sizeof(*m));
			ret = 0;
			goto out;
		}
	}
	for (struct rs_iomap_mr **p = &rs->local_maps; *p; p = &(*p)->next) {
		if ((*p)->mr->addr == buf && (*p)->mr->length == len) {
			struct rs_iomap_mr *m = *p;
			*p = m->next;
			ibv_dereg_mr(m->mr);
			free(m);
			ret = 0;
			goto out;
		}
	}
	rs_err(EINVAL);
out:
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/* The peer's entry that holds offset, NULL if none. */
static const struct rs_iomap *find_iomap(const struct rsock *rs, uint64_t offset)
{
	for (uint16_t i = 0; rs->target_iomap && i < rs->target_iomap_size; i++) {
		const struct rs_iomap *e = &rs->target_iomap[i];
		if (e->sge.length && offset >= e->offset && offset < e->offset + e->sge.length)
			return e;
	}
	return NULL;
}

size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	struct rsock *rs = rs_get(socket);
	size_t left = count;
	uint32_t olen = RS_OLAP_START_SIZE;
	int ret = 0;

	if (!rs)
		return (size_t)rs_err(EBADF);
	if (count && !buf)
		return (size_t)rs_err(EFAULT);
	pthread_mutex_lock(&rs->lock);
	bool nonblock = (rs->fs_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
	if (rs->type != SOCK_STREAM || !(rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR))) {
		ret = rs_err(ENOTCONN);
		goto out;
	}
	if (!(rs->state & RS_WRITABLE)) {
		ret = rs_err(EPIPE);
		goto out;
	}
	if (rs->iomap_pending && (ret = rs_send_iomaps(rs, flags)))
		goto out;
	const uint8_t *p = buf;
	uint64_t off = (uint64_t)offset;
	while (left) {
		const struct rs_iomap *e = find_iomap(rs, off);
		if (!e) {
			if (left == count)
				ret = rs_err(EINVAL);   /* nothing of the peer's there */
			break;
		}
		if (!rs_can_send(rs)) {
			ret = rs_wait(rs, nonblock, can_send_or_closed);
			if (ret)
				break;
			if (!(rs->state & RS_WRITABLE)) {
				ret = rs_err(EPIPE);
				break;
			}
			continue;       /* the table may have changed */
		}
		uint32_t xfer = olen < left ? olen : (uint32_t)left;
		if (olen < left && olen < RS_MAX_TRANSFER)
			olen <<= 1;
		if (xfer > rs->sbuf_avail)
			xfer = rs->sbuf_avail;
		if (xfer > e->offset + e->sge.length - off)
			xfer = (uint32_t)(e->offset + e->sge.length - off);
		ret = rs_write_from(rs, p, xfer, rs_msg(RS_OP_WRITE, xfer), e->sge.addr + (off - e->offset),
				    e->sge.key);
		if (ret)
			break;
		p += xfer;
		off += xfer;
		left -= xfer;
	}
out:;
	int saved = errno;
	pthread_mutex_unlock(&rs->lock);
	errno = saved;
	return (ret && left == count) ? (size_t)-1 : count - left;
}
